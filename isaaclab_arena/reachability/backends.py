"""IK backends of the ``ik_reachable`` check: which solver answers "can the robot reach these grasps".

A backend is anything with ``check_config(base_pose (B, 7), object_positions (B, K, 3), reachability_config,
mask=None) -> ReachabilityResult`` (:class:`IKReachabilityChecker` is one). The default backend,
``newton``, is batched IK with ``newton.ik`` on ``cpu`` or ``cuda:N`` and needs only the embodiment's URDF
(``Embodiment.reachability_robot``). Other backends register with :func:`register_ik_backend` and say which
embodiments they serve; ``isaaclab_arena_curobo`` registers ``curobo`` when cuRobo imports, for embodiments
with a cuRobo config. :func:`ik_backend_for` picks the most recently registered backend that serves the
embodiment, else ``newton``, and builds it once per (backend, robot, device).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

#: Name of the default backend (batched newton.ik).
DEFAULT_BACKEND = "newton"


@dataclass(frozen=True)
class IKBackend:
    """A registered IK backend.

    Attributes:
        name: Backend name (``newton``, ``curobo``).
        serves: ``serves(embodiment) -> bool``: True when this backend can check that embodiment.
        make: ``make(embodiment, device) -> checker`` with ``check_config(base, objects, config, mask)``.
    """

    name: str
    serves: Callable[[Any], bool]
    make: Callable[[Any, str], Any]


def _has_kinematic_model(embodiment) -> bool:
    return getattr(embodiment, "reachability_robot", None) is not None


def _make_newton(embodiment, device: str):
    from isaaclab_arena.reachability.ik_reachability import IKReachabilityChecker

    return IKReachabilityChecker(embodiment.reachability_robot, device=device)


_BACKENDS: dict[str, IKBackend] = {DEFAULT_BACKEND: IKBackend(DEFAULT_BACKEND, _has_kinematic_model, _make_newton)}
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


def backend_name_for(embodiment) -> str:
    """The backend that would check ``embodiment``; ``ValueError`` when none serves it."""
    for name in registered_ik_backends():
        if _BACKENDS[name].serves(embodiment):
            return name
    raise ValueError(f"embodiment {getattr(embodiment, 'name', embodiment)!r} has no kinematic model an IK backend "
                     f"can use (backends: {registered_ik_backends()}); ik_reachable cannot check it")


def ik_backend_for(embodiment, device: str = "cpu"):
    """The checker of the preferred backend for ``embodiment`` on ``device`` (built once, then cached)."""
    name = backend_name_for(embodiment)
    robot = getattr(embodiment, "reachability_robot", None)
    ident = (id(embodiment),) if robot is None else (
        robot.urdf_path, robot.base_link, robot.tcp_link, tuple(sorted(robot.home_joint_pos.items())),
        getattr(embodiment, "curobo_config", None))
    key = (name, ident, str(device))
    checker = _CHECKERS.get(key)
    if checker is None:
        checker = _CHECKERS[key] = _BACKENDS[name].make(embodiment, str(device))
    return checker
