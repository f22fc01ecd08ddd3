"""Optional cuRobo backend of the ``ik_reachable`` placement check.

Importing this package registers the IK backend ``curobo`` (``isaaclab_arena.reachability.backends``) when
cuRobo imports; ``ik_reachable`` then checks every embodiment that has a cuRobo config
(``Embodiment.curobo_config``, e.g. ``franka.yml`` for ``franka_panda``) with cuRobo's batched IK, and the
others with the default newton backend. Without cuRobo nothing is registered and ``ik_reachable`` uses newton.
The check's registry (``validation/registry.py::OPTIONAL_VALIDATOR_MODULES``) imports this package.

cuRobo is not installable in this project's environment (it needs CUDA and compiles its kernels at install
time; the kit-less CPU venv has neither), so the adapter (``backend.py``) is written against cuRobo's public
IK API and its registration is tested with and without a (stand-in) ``curobo`` module.
"""

from __future__ import annotations

from isaaclab_arena_curobo.backend import BACKEND_NAME, CuroboIKChecker, is_curobo_available, register_if_available

REGISTERED = register_if_available()

__all__ = ["BACKEND_NAME", "CuroboIKChecker", "REGISTERED", "is_curobo_available", "register_if_available"]
