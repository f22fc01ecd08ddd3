"""IK backends of the ``ik_reachable`` check: which solver answers "can the robot reach these grasps".

A backend is anything with ``check_config(base_pose (B, 7), object_positions (B, K, 3), reachability_config,
mask=None) -> ReachabilityResult`` (:class:`IKReachabilityChecker` is one). The default backend,
``builtin``, is the project's batched IK (damped least squares with the joint limits held, one warp kernel:
``reachability/ik_reachability.py``) on ``cpu`` or ``cuda:N`` and needs only the embodiment's URDF
(``Embodiment.reachability_robot``). Other backends register with :func:`register_ik_backend` and say which
embodiments they serve; ``isaaclab_arena_curobo`` registers ``curobo`` for embodiments with a cuRobo config,
usable only on a CUDA device where cuRobo imports (its ``unusable_reason``). :func:`ik_backend_for` picks the
most recently registered backend that serves the embodiment and can run on the device, else ``builtin`` (saying
in one line why it skipped one), and builds it once per (backend, robot, device).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

#: Name of the default backend (the project's batched IK; ``newton`` until 2026-12-07, when it ran newton.ik's LM).
DEFAULT_BACKEND = "builtin"


@dataclass(frozen=True)
class IKBackend:
    """A registered IK backend.

    Attributes:
        name: Backend name (``builtin``, ``curobo``).
        serves: ``serves(embodiment) -> bool``: True when this backend can check that embodiment.
        make: ``make(embodiment, device) -> checker`` with ``check_config(base, objects, config, mask)``.
    """

    name: str
    serves: Callable[[Any], bool]
    make: Callable[[Any, str], Any]


def _has_kinematic_model(embodiment) -> bool:
    return getattr(embodiment, "reachability_robot", None) is not None


def _make_builtin(embodiment, device: str):
    from isaaclab_arena.reachability.ik_reachability import IKReachabilityChecker

    return IKReachabilityChecker(embodiment.reachability_robot, device=device)


_BACKENDS: dict[str, IKBackend] = {DEFAULT_BACKEND: IKBackend(DEFAULT_BACKEND, _has_kinematic_model, _make_builtin)}
_CHECKERS: dict[tuple, Any] = {}


def register_ik_backend(name: str, serves: Callable[[Any], bool], make: Callable[[Any, str], Any]) -> IKBackend:
    """Registers (or replaces) backend ``name``; later registrations are preferred over earlier ones."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_ik_backend: name must be a non-empty string, got {name!r}")
    _BACKENDS.pop(name, None)
    _BACKENDS[name] = IKBackend(name, serves, make)
    _CHECKERS.clear()
    return _BACKENDS[name]


def unregister_ik_backend(name: str) -> None:
    """Removes a registered backend (the default one cannot be removed)."""
    if name != DEFAULT_BACKEND:
        _BACKENDS.pop(name, None)
        _CHECKERS.clear()


def registered_ik_backends() -> list[str]:
    """Backend names, most preferred first."""
    return list(reversed(list(_BACKENDS)))


def has_kinematic_model(embodiment) -> bool:
    """True when some backend can check ``embodiment`` (``ik_reachable`` then applies)."""
    return embodiment is not None and any(b.serves(embodiment) for b in _BACKENDS.values())


def _serving(embodiment, device: str | None) -> list[tuple[str, IKBackend, str | None]]:
    """``(name, backend, reason)`` of the backends serving ``embodiment``, most recently registered first;
    ``reason`` says why the backend cannot run on ``device`` (None: it can, or ``device`` is None)."""
    out = []
    for name in registered_ik_backends():
        backend = _BACKENDS[name]
        if backend.serves(embodiment):
            reason_for = getattr(backend.make, "unusable_reason", None)
            out.append((name, backend, reason_for(str(device)) if reason_for is not None and device is not None
                        else None))
    return out


def backend_name_for(embodiment, device: str | None = None) -> str:
    """The backend that checks ``embodiment`` on ``device`` (None: the preferred one, whatever the device);
    ``ValueError`` when none serves it."""
    for name, _, reason in _serving(embodiment, device):
        if reason is None:
            return name
    raise ValueError(f"embodiment {getattr(embodiment, 'name', embodiment)!r} has no kinematic model an IK backend "
                     f"can use on {device!r} (backends: {registered_ik_backends()}); ik_reachable cannot check it")


def ik_backend_for(embodiment, device: str = "cpu"):
    """The checker of the preferred backend for ``embodiment`` on ``device`` (built once, then cached).

    Backends are tried most recently registered first, among those that serve ``embodiment``. A backend whose
    ``make`` has ``unusable_reason(device) -> str | None`` (the ``curobo`` backend: CUDA only, and only when
    cuRobo imports) is skipped where that returns a reason; the next one (in the end ``builtin``) checks the
    embodiment, and one line, printed when that checker is built (once per robot and device), says which backend
    was skipped and why.
    """
    device = str(device)
    robot = getattr(embodiment, "reachability_robot", None)
    ident = (id(embodiment),) if robot is None else (
        robot.urdf_path, robot.base_link, robot.tcp_link, tuple(sorted(robot.home_joint_pos.items())),
        getattr(embodiment, "curobo_config", None))
    skipped = []
    for name, backend, reason in _serving(embodiment, device):
        if reason is not None:
            skipped.append((name, reason))
            continue
        key = (name, ident, device)
        checker = _CHECKERS.get(key)
        if checker is None:
            checker = _CHECKERS[key] = backend.make(embodiment, device)
            for other, why in skipped:
                print(f"[placement] ik_reachable: '{getattr(embodiment, 'name', embodiment)}' is checked by the "
                      f"{name} IK backend, not {other}: {why}", flush=True)
        return checker
    if not skipped:
        backend_name_for(embodiment)  # raises: no backend serves it
    raise ValueError(f"embodiment {getattr(embodiment, 'name', embodiment)!r}: no IK backend can check it on "
                     f"'{device}' ({'; '.join(f'{n}: {why}' for n, why in skipped)})")
