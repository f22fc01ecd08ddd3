"""Generate, solve, evaluate and rank stages around the warp kernels (``relations/kernels``).

``placement_candidate_generator`` draws starting candidates (``placement_candidate`` holds them),
``relations.relation_solver.RelationSolver`` launches the kernels, ``evaluation`` checks given poses (replay,
``validate_poses``), ``ranking`` orders each env's candidates, and ``solver_workers`` runs a CPU launch on
several threads. The public classes (``RelationSolver``, ``ObjectPlacer``) stay in ``relations/``.
"""
