"""An example custom post-physics check for the recorder (``record_placement_layouts.py --help`` uses it).

    +settle.validators.max_root_height._target_=isaaclab_arena_environments.placement_validators.MaxRootHeightValidator
    +settle.validators.max_root_height.max_height_m=1.5

A module of your own in the working directory works the same way (``_target_=my_validators.MyCheck``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from isaaclab_arena.offline_placement.post_physics_validation import PostPhysicsPlacementValidator, positive_setting


@dataclass
class MaxRootHeightValidator(PostPhysicsPlacementValidator):
    """Rejects a layout when any root ends above ``max_height_m`` (env-local z, metres) after settling, or at a
    non-finite height (an object thrown out of the scene)."""

    check: ClassVar[str] = "max_root_height"
    max_height_m: float = 1.5
    """Highest accepted final root z, env-local metres."""

    def __post_init__(self):
        super().__post_init__()
        self.max_height_m = positive_setting(self.max_height_m, self.check, "max_height_m", allow_zero=False)

    def validate(self, batch):
        rows = torch.as_tensor(batch.env_ids, dtype=torch.long)
        keys = list(batch.final_root_poses)
        z = torch.stack([batch.final_root_poses[k][rows.to(batch.final_root_poses[k].device), 2].cpu() for k in keys], 1)
        bad = ~torch.isfinite(z) | (z > self.max_height_m)  # (E, K)
        first = bad.float().argmax(dim=1).tolist()
        return [self.report(passed=True) if not row_bad else
                self.report(passed=False, reason=f"{keys[k]}: final root height {z[i, k].item():g} m; limit "
                                                 f"{self.max_height_m:g} m")
                for i, (row_bad, k) in enumerate(zip(bad.any(dim=1).tolist(), first))]
