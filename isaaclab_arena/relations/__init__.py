"""The relations package: the public API at this level, the pipeline's stages in sub-packages.

What users import lives here: the relations (``relations``, ``relation_base``, ``markers``), the placers
(``object_placer``, ``object_placer_params``, ``pooled_object_placer``), the interface of optional backends
(``extensions``) and the solver (``relation_solver``, ``relation_solver_params``). The stages, in pipeline
order: ``compiler`` (scene -> ``PlacementProblem``), ``solving`` (generate, evaluate, rank) with ``kernels``
and ``kinds`` (one module per relation kind), ``validation`` (the checks), ``diagnostics`` (why candidates
failed); ``mesh`` builds MESH collision tables and ``optimization`` the differentiable losses. Record and replay
(the recorded-layouts file, its values, the replay queue, the recorder) live in one package,
``isaaclab_arena.offline_placement``.

Modules that moved (December 2026) keep their old import path: importing ``isaaclab_arena.relations.<old
name>`` gives the same module object as its new path (``MOVED_MODULES``), with a ``DeprecationWarning`` naming
the new one, except for the paths the user documents name (``SEED_PATHS``: ``placement_layouts``), which stay
supported without a warning.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: Old module name under ``isaaclab_arena.relations`` -> its module path now.
MOVED_MODULES = {
    "compile_problem": "isaaclab_arena.relations.compiler.compile_problem",
    "collision_geometry": "isaaclab_arena.relations.compiler.collision_geometry",
    "pair_tables": "isaaclab_arena.relations.compiler.pair_tables",
    "difference_constraints": "isaaclab_arena.relations.compiler.difference_constraints",
    "feasibility": "isaaclab_arena.relations.compiler.feasibility",
    "footprint_budget": "isaaclab_arena.relations.compiler.footprint_budget",
    "scene_budgets": "isaaclab_arena.relations.compiler.scene_budgets",
    "scene_lengths": "isaaclab_arena.relations.compiler.scene_lengths",
    "chain_room": "isaaclab_arena.relations.compiler.chain_room",
    "object_yaw": "isaaclab_arena.relations.compiler.object_yaw",
    "placement_restrictions": "isaaclab_arena.relations.compiler.placement_restrictions",
    "placement_problem": "isaaclab_arena.relations.compiler.placement_problem",
    "pool_parking": "isaaclab_arena.relations.compiler.pool_parking",
    "solver_workers": "isaaclab_arena.relations.solving.solver_workers",
    "evaluation": "isaaclab_arena.relations.solving.evaluation",
    "placement_candidate": "isaaclab_arena.relations.solving.placement_candidate",
    "placement_candidate_generator": "isaaclab_arena.relations.solving.placement_candidate_generator",
    "ranking": "isaaclab_arena.relations.solving.ranking",
    "failure_explanation": "isaaclab_arena.relations.diagnostics.failure_explanation",
    "placement_diagnostics": "isaaclab_arena.relations.diagnostics.placement_diagnostics",
    "placement_replay": "isaaclab_arena.offline_placement.placement_replay",
    "layout_values": "isaaclab_arena.offline_placement.layout_values",
    "scenes": "isaaclab_arena.benchmarks.scenes",
    "layouts": "isaaclab_arena.offline_placement",
    "layouts.placement_replay": "isaaclab_arena.offline_placement.placement_replay",
    "layouts.layout_values": "isaaclab_arena.offline_placement.layout_values",
    "placement_layouts": "isaaclab_arena.offline_placement.placement_layouts",
}
#: Old paths that the user documents name: served without a DeprecationWarning.
SEED_PATHS = frozenset({"placement_layouts"})


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old ``isaaclab_arena.relations.<name>`` import to the moved module (the same object)."""

    prefix = __name__ + "."

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(self.prefix) and fullname[len(self.prefix):] in MOVED_MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        old = spec.name[len(self.prefix):]
        new = MOVED_MODULES[old]
        if old not in SEED_PATHS:
            warnings.warn(f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=3)
        return importlib.import_module(new)

    def exec_module(self, module):
        pass


# first in line: an old path under an aliased package (``layouts.placement_replay``) must not be found again as a
# file of the package it now names (a second copy of the module)
if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModuleFinder())
