"""Warp kernels of the relation solver and the inexpensive placement checks.

``tables`` holds the compiled scene (a warp struct of named tables) and the candidate state (``rows`` the
device row types it shares with the relation kinds), ``settings``
the per-launch solver settings, ``geometry`` pose/bounds helpers, ``freedom`` / ``projection`` /
``penalties`` / ``poses`` / ``sampling`` the solver's device functions, ``evaluate`` the per-candidate
evaluation shared by the solver's loss and the checks (with the kinds' violation functions,
``relations/kinds``), and one module per kernel: ``solve_init`` (initial candidates), ``solve_prepare``
(given candidates), ``solve_iterate`` (projected Adam with per-candidate exit), ``solve_finalize``
(modifiers, loss, verdicts) and ``validate`` (checks alone); ``launch`` lists them in launch order. Every
kernel runs on ``cpu`` and ``cuda:0`` alike.
"""
