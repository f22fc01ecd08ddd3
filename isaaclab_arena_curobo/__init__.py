"""Optional cuRobo backend of the ``ik_reachable`` placement check.

``extension.CUROBO`` (a ``PlacementExtension`` in the default set of every placer whenever this package imports)
registers the IK backend ``curobo`` (``isaaclab_arena.reachability.backends``) for
embodiments that have a cuRobo config (``Embodiment.curobo_config``, e.g. ``franka.yml`` for ``franka_panda``)
and a URDF. It checks them with cuRobo's batched IK when the placement runs on a CUDA device and cuRobo imports;
otherwise the backend choice (``backends.ik_backend_for``) checks them with the default builtin backend and prints
one line saying why (``backend.unusable_reason``: no CUDA device, or cuRobo not installed). Importing the package
registers nothing.

cuRobo is not installable in this project's environment (it needs CUDA and compiles its kernels at install
time; the kit-less CPU venv has neither), so the adapter (``backend.py``) is written against cuRobo's documented
IK API and tested with a stand-in built from that documentation (``tests/curobo_standin.py``).
"""

from __future__ import annotations

from isaaclab_arena_curobo.backend import (
    BACKEND_NAME,
    CuroboIKChecker,
    curobo_rotation_error_to_rad,
    is_curobo_available,
    rad_to_curobo_rotation_error,
    register_backend,
    unusable_reason,
)

__all__ = ["BACKEND_NAME", "CuroboIKChecker", "curobo_rotation_error_to_rad", "is_curobo_available",
           "rad_to_curobo_rotation_error", "register_backend", "unusable_reason"]
