"""Warp kernels of the relation solver and the inexpensive placement checks.

``tables`` holds the compiled scene as one warp struct, ``geometry`` the pose/bounds helpers,
``violations`` one violation function per relation kind (shared by the solver's loss and the checks),
``evaluate`` the per-candidate evaluation, ``solve`` the solver's device functions, and one module per
kernel: ``solve_init`` (initial candidates), ``solve_prepare`` (given candidates), ``solve_iterate``
(projected Adam with per-candidate exit), ``solve_finalize`` (modifiers, loss, verdicts) and
``validate`` (checks alone). Every kernel runs on ``cpu`` and ``cuda:0`` alike.
"""
