"""Reset-term pose source replaying recorded layouts through the shared replay queue (consecutive layouts in
reset-request order)."""

from __future__ import annotations

import torch

from isaaclab_arena.offline_placement.placement_layouts import PlacementLayouts
from isaaclab_arena.offline_placement.placement_replay import PlacementReplayQueue


class ReplayPoseSource:
    """Resetting envs draw consecutive layouts from one shared, wrapping queue, in reset-request order.

    Args:
        layouts: The recorded layouts (env-local metres, xyzw).
        num_envs: Number of envs.

    Attributes:
        slot_position: ``(num_envs,)`` int64: the queue position (0, 1, 2, ... counted without wrapping) each env
            took at its last reset, -1 before its first; the layout is ``slot_position % len(layouts)``. The
            evaluation runner reads it to know which episode each env runs.
    """

    def __init__(self, layouts: PlacementLayouts, num_envs: int):
        self.layouts = layouts.to("cpu")
        self.queue = PlacementReplayQueue(len(layouts), num_envs)
        self.object_names = list(layouts.object_names)
        self.slot_position = torch.full((num_envs,), -1, dtype=torch.long)

    def poses_for_reset(self, env_ids: torch.Tensor) -> torch.Tensor:
        start = self.queue.consumed
        ids = self.queue.next_layouts(env_ids.cpu())
        self.slot_position[env_ids.cpu()] = torch.arange(start, start + ids.numel(), dtype=torch.long)
        return self.layouts.root_poses(ids).to(env_ids.device)

    def recorded_properties(self, asset_name: str, env_ids: torch.Tensor) -> list[dict[str, float]] | None:
        """The physical properties recorded with the layout each env in ``env_ids`` took at its last reset
        (``{field: value}`` per env, ``{}`` where that layout has none for ``asset_name``); None when the file
        records none for ``asset_name`` at all. The property reset term applies them instead of drawing."""
        records = self.layouts.physical_properties
        if not any(asset_name in r for r in records):
            return None
        slots = self.slot_position[torch.as_tensor(env_ids).cpu()] % len(self.layouts)
        return [dict(records[int(k)].get(asset_name, {})) for k in slots.tolist()]

    def peek(self, env_ids: torch.Tensor) -> torch.Tensor:
        n = int(torch.as_tensor(env_ids).numel())
        ids = (torch.arange(n) + self.queue.cursor) % self.queue.num_layouts
        return self.layouts.root_poses(ids).to(torch.as_tensor(env_ids).device)
