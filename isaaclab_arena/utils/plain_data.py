"""Values as plain YAML data (for writing specs back out)."""

from __future__ import annotations

import enum
from typing import Any

from isaaclab_arena.utils.pose import Pose


def plain(value: Any) -> Any:
    """``value`` as plain YAML data: tuples -> lists, enums -> their values, Poses -> dicts, recursively."""
    if isinstance(value, Pose):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
