"""Warp kernels of the relation solver and the inexpensive placement checks.

``tables`` holds the compiled scene as one warp struct, ``geometry`` the pose/bounds helpers,
``violations`` one violation function per relation kind (shared by the solver's loss and the checks),
``solve`` the fused per-candidate kernel (initial sampling, projected Adam, pose modifiers) and
``validate`` the check kernel. Every kernel takes a ``device`` through ``wp.launch`` and runs on
``cpu`` and ``cuda:0`` alike.
"""
