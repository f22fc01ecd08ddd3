"""Compile stage: a scene's assets and relations become a ``PlacementProblem`` of flat tables, once per
(scene, env count, placement seed, device).

``compile_problem.compile_placement_problem`` runs the steps in order: the relation restrictions
(``placement_restrictions``), the scene's size budgets (``scene_budgets``, ``scene_lengths``,
``footprint_budget``), whether each object turns (``object_yaw``), the no_overlap pair table (``pair_tables``)
and its geometry (``collision_geometry``), pool members and their parking spots (``pool_parking``), the room a
NextTo chain needs (``chain_room``), and finally the feasibility pre-check (``feasibility`` over
``difference_constraints``). The result is ``placement_problem.PlacementProblem``.
"""
