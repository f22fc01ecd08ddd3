"""Reset-term pose source replaying recorded layouts through the shared replay queue (consecutive layouts in
reset-request order)."""

from __future__ import annotations

import torch

from isaaclab_arena.relations.placement_layouts import PlacementLayouts
from isaaclab_arena.relations.placement_replay import PlacementReplayQueue


class ReplayPoseSource:
    """Resetting envs draw consecutive layouts from one shared, wrapping queue, in reset-request order.

    Args:
        layouts: The recorded layouts (env-local metres, xyzw).
        num_envs: Number of envs.
    """

    def __init__(self, layouts: PlacementLayouts, num_envs: int):
        self.layouts = layouts.to("cpu")
        self.queue = PlacementReplayQueue(len(layouts), num_envs)
        self.object_names = list(layouts.object_names)

    def poses_for_reset(self, env_ids: torch.Tensor) -> torch.Tensor:
        ids = self.queue.next_layouts(env_ids.cpu())
        return self.layouts.root_poses(ids).to(env_ids.device)

    def peek(self, env_ids: torch.Tensor) -> torch.Tensor:
        n = int(torch.as_tensor(env_ids).numel())
        ids = (torch.arange(n) + self.queue.cursor) % self.queue.num_layouts
        return self.layouts.root_poses(ids).to(torch.as_tensor(env_ids).device)
