"""Parked pool members out of the running env (``isaaclab_arena/assets/object_pool.py`` defines pools).

The placement reset term writes every object's layout pose; a parked member's pose is its parking spot, env-local
``(0, 0, PARK_HEIGHT_M + PARK_SPACING_M * slot)`` m (1 km above the env, 10 m apart), so it is far from anything
it could touch. :class:`PoolParking` then takes it out of the simulation:

* OV PhysX: the body's ``RIGID_BODY_DISABLE_SIMULATION`` flag is set (the engine skips it: no gravity, no contacts,
  no integration; it stays at the parking spot). At the next reset of its env the flag is cleared before the
  placement term writes (PhysX refuses writes to a disabled body), then set again if it stays parked; a member
  that joins is woken.
* Newton (``newton_mjwarp``): the body's ``body_flags`` entry (one per body and env) is set to
  ``BodyFlags.KINEMATIC`` and the solver is told (``ModelFlags.BODY_PROPERTIES``, applied at the next physics step):
  MuJoCo-Warp locks the body's free joint (a 1e10 armature), so gravity and contacts no longer move it and it keeps
  the zero velocity the reset wrote (measured: a parked body moves under 1e-6 m over 60 steps, where it fell 4.9 m
  before). A member that joins is set back to ``BodyFlags.DYNAMIC`` at its env's reset.
* Any other backend: no per-body switch; one warning line says so, and the parked body falls from its spot (about
  4.9 m in the first second), far from every env's scene; the term writes its parking pose at every reset.

After each reset ``env.extras[JOINED_EXTRAS_KEY]`` is ``{pool member scene key: (num_envs,) bool}`` (joined), so
observations and policies can ignore parked members.
"""

from __future__ import annotations

import logging

import torch

from isaaclab_arena.assets.object_pool import is_parked

logger = logging.getLogger(__name__)

#: ``env.extras`` key of the joined flags of every pool member after a reset.
JOINED_EXTRAS_KEY = "arena_pool_joined"


def _ovphysx_disable_type():
    """OV PhysX's per-body simulation switch, or None where the installed wheel lacks it."""
    try:
        from ovphysx.types import TensorType
    except ImportError:
        return None
    return getattr(TensorType, "RIGID_BODY_DISABLE_SIMULATION", None)


class PoolParking:
    """Takes the parked members of the poses a reset wrote out of the simulation (see the module docstring).

    Args:
        env: The env being built (its ``num_envs``, ``device``).
        assets: The scene assets the placement term writes, in the order of ``keys``.
        keys: Their scene keys.
        members: Scene keys of the pool members among them.
    """

    def __init__(self, env, assets, keys: list[str], members: list[str]):
        self.cols = [j for j, k in enumerate(keys) if k in set(members)]
        self.keys = [keys[j] for j in self.cols]
        self.assets = [assets[j] for j in self.cols]
        n = env.num_envs
        self.parked = torch.zeros(n, len(self.cols), dtype=torch.bool)
        self.disabled = torch.zeros(n, len(self.cols), dtype=torch.bool)  # what the simulation holds
        tt = _ovphysx_disable_type()
        backends = {type(a).__module__.split(".")[0] for a in self.assets}
        self._disable_type = tt if (backends == {"isaaclab_ov"} and tt is not None) else None
        self._newton = backends == {"isaaclab_newton"}
        if self._disable_type is not None:
            self.mode = "ovphysx_disable_simulation"
        elif self._newton:
            self.mode = "newton_kinematic"
        else:
            self.mode = "parking_pose"
            if self.cols:
                logger.warning("object pools: no per-body simulation switch on %s; parked members fall from their "
                               "parking spots (1 km above the env)", ", ".join(sorted(backends)))

    def prepare(self, ids: torch.Tensor) -> None:
        """Before the placement term writes envs ``ids``: their disabled members are switched back on (PhysX refuses
        pose and velocity writes on a disabled body); ``apply`` switches the parked ones off again."""
        if self._disable_type is not None and self.cols:
            cids = ids.cpu()
            self._set(cids, torch.zeros(cids.shape[0], len(self.cols), dtype=torch.bool), self.disabled[cids])

    def apply(self, env, ids: torch.Tensor, poses: torch.Tensor, world: torch.Tensor) -> None:
        """After the placement term wrote ``world`` (R, n, 7; world poses of env-local ``poses``) for envs ``ids``."""
        if not self.cols:
            return
        cols = torch.tensor(self.cols, dtype=torch.long, device=poses.device)
        now = is_parked(poses[:, cols, :3]).cpu()  # (R, M)
        cids = ids.cpu()
        if self._disable_type is not None:
            self._set(cids, now, now)
        elif self._newton:
            _set_newton_kinematic(self.assets, cids, now)
        self.parked[cids] = now
        env.extras[JOINED_EXTRAS_KEY] = {k: ~self.parked[:, m].to(env.device) for m, k in enumerate(self.keys)}

    def _set(self, ids: torch.Tensor, value: torch.Tensor, rows_mask: torch.Tensor) -> None:
        """Writes the disable flag ``value`` (R, M) of envs ``ids`` where ``rows_mask`` (R, M); wakes what it enables."""
        import warp as wp

        for m, asset in enumerate(self.assets):  # one binding per member asset (members, not envs)
            sel = rows_mask[:, m]
            if not bool(sel.any()):
                continue
            view = asset.root_view
            flags = torch.from_numpy(view.get_attribute(self._disable_type).numpy().copy()).reshape(-1)
            rows = ids[sel]
            flags[rows] = value[sel, m].to(flags.dtype)
            view.set_attribute(self._disable_type, wp.from_torch(flags.contiguous()),
                               indices=wp.from_torch(rows.to(torch.int32)))
            self.disabled[rows, m] = value[sel, m]
            woken = rows[~value[sel, m]]
            if woken.numel():
                view.binding_for(self._disable_type).wake_up(wp.from_torch(woken.to(torch.int32)))

    def joined(self) -> dict[str, list[bool]]:
        """``{member scene key: [joined per env]}`` of the last reset."""
        return {k: (~self.parked[:, m]).tolist() for m, k in enumerate(self.keys)}


def _set_newton_kinematic(assets, ids: torch.Tensor, kinematic: torch.Tensor) -> None:
    """Newton: ``body_flags`` of envs ``ids`` of each member asset (column m of ``kinematic`` (R, M)) set to
    KINEMATIC where True, DYNAMIC where False; the solver applies them at the next physics step."""
    import warp as wp
    from isaaclab_newton.physics import NewtonManager
    from newton import BodyFlags, ModelFlags

    model = NewtonManager.get_model()
    for m, asset in enumerate(assets):
        view = asset.root_view
        flags = wp.to_torch(view.get_attribute("body_flags", model)).clone()  # (num_envs, ..., bodies)
        flags[ids.to(flags.device)] = torch.where(kinematic[:, m], int(BodyFlags.KINEMATIC),
                                                  int(BodyFlags.DYNAMIC)).to(flags).view(-1, *[1] * (flags.dim() - 1))
        view.set_attribute("body_flags", model, wp.from_torch(flags.contiguous()))
    NewtonManager.add_model_change(ModelFlags.BODY_PROPERTIES)


def pool_members_of(assets) -> list[str]:
    """Names of every pool member among ``assets``."""
    from isaaclab_arena.assets.object_pool import pools_of

    return [n for p in pools_of(assets) for n in p.member_names]


def parking_of(env) -> PoolParking | None:
    """The live parking handler of a created env (its placement term's), or None."""
    env = getattr(env, "unwrapped", env)
    for name in env.event_manager.active_terms.get("reset", []):
        func = env.event_manager.get_term_cfg(name).func
        parking = getattr(func, "parking", None)
        if parking is not None:
            return parking
    return None


__all__ = ["JOINED_EXTRAS_KEY", "PoolParking", "parking_of", "pool_members_of"]
