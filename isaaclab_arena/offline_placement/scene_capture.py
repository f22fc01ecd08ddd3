"""Reads root and link state out of a running Isaac Lab scene into env-local tensors for a ``SettledBatch``.

Works on an ``isaaclab.scene.InteractiveScene`` (``env.unwrapped.scene``): every pose is returned
env-local (``scene.env_origins`` subtracted), xyz metres + xyzw, one row per env; velocities are world
frame, m/s and rad/s. Reading is one batched tensor copy per scene entity.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import torch

from isaaclab_arena.offline_placement.settled_batch import SettledBatch


def _tensor(value) -> torch.Tensor:
    """Isaac Lab 3.0 data fields are proxies with a ``.torch`` view."""
    return getattr(value, "torch", value)


def _entity(scene, key: str):
    try:
        return scene[key]
    except KeyError:
        raise KeyError(f"scene has no entity '{key}'; scene keys: {sorted(scene.keys())}") from None


def capture_root_poses(scene, keys: Iterable[str]) -> dict[str, torch.Tensor]:
    """``{key: (E, 7)}`` env-local root poses (xyz metres + xyzw)."""
    origins = scene.env_origins
    out = {}
    for key in keys:
        data = _entity(scene, key).data
        pos = _tensor(data.root_pos_w) - origins
        out[key] = torch.cat([pos, _tensor(data.root_quat_w)], dim=-1).clone()
    return out


def capture_root_velocities(scene, keys: Iterable[str]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(``{key: (E, 3)}`` linear m/s, ``{key: (E, 3)}`` angular rad/s), world frame."""
    lin, ang = {}, {}
    for key in keys:
        data = _entity(scene, key).data
        lin[key] = _tensor(data.root_lin_vel_w).clone()
        ang[key] = _tensor(data.root_ang_vel_w).clone()
    return lin, ang


def capture_link_poses(scene, keys: Iterable[str]) -> tuple[dict[str, torch.Tensor], dict[str, list[str]]]:
    """(``{key: (E, L, 7)}`` env-local link poses, ``{key: link names}``) of articulated entities."""
    origins = scene.env_origins
    poses, names = {}, {}
    for key in keys:
        entity = _entity(scene, key)
        body = _tensor(entity.data.body_pose_w).clone()
        body[..., :3] -= origins[:, None, :]
        poses[key] = body
        names[key] = list(getattr(entity, "body_names", []) or [])
    return poses, names


def capture_settled_batch(scene, env_ids: Iterable[int], initial_root_poses: Mapping[str, torch.Tensor],
                          initial_link_poses: Mapping[str, torch.Tensor] | None = None,
                          **batch_fields: Any) -> SettledBatch:
    """A ``SettledBatch`` of the scene's current state against the poses written before settling.

    Args:
        scene: The running scene.
        env_ids: Envs this batch covers.
        initial_root_poses: ``{key: (E, 7)}`` env-local poses written at reset (from ``capture_root_poses``
            right after the reset, or the layouts written).
        initial_link_poses: ``{key: (E, L, 7)}`` link poses captured after the reset, for articulated objects.
        **batch_fields: Other ``SettledBatch`` fields (robot_keys, clutter_keys, supports, num_steps, ...).
    """
    keys = list(initial_root_poses)
    final = capture_root_poses(scene, keys)
    lin, ang = capture_root_velocities(scene, keys)
    links0 = dict(initial_link_poses or {})
    links1, link_names = capture_link_poses(scene, links0)
    return SettledBatch(env_ids=list(env_ids), initial_root_poses=dict(initial_root_poses), final_root_poses=final,
                        final_root_lin_vel=lin, final_root_ang_vel=ang, initial_link_poses=links0,
                        final_link_poses=links1, link_names=batch_fields.pop("link_names", link_names), **batch_fields)
