"""Device row types of the compiled relation table that the kinds and the scene tables share: a kind's packed
parameter row (``ParamRow``: at most ``MAX_PARAMS`` named columns, its loss weight last, ``kinds/kind.py``'s
``ParamColumns``) and an object's NextTo room row (``RoomRow``, ``compiler/chain_room.py``).

A leaf module (warp only), so that the scene tables (``tables.py``) take these types without importing the kinds
package, whose kinds import the kernels' device functions (and so ``tables.py``) back.
"""

from __future__ import annotations

import warp as wp

#: Most named columns of a kind's packed parameter row.
MAX_PARAMS = 11
#: Column of every packed row that holds slope x relation_loss_weight.
WEIGHT = wp.constant(MAX_PARAMS)
#: Width of a packed row.
ROW_WIDTH = MAX_PARAMS + 1
#: Device type of a packed row.
ParamRow = wp.types.vector(length=ROW_WIDTH, dtype=wp.float32)
#: Room (m) an object's NextTo chain needs beyond its footprint (-X, +X, -Y, +Y) and beyond its origin (same
#: order), per env and movable object (``chain_room.py``); INTERVAL kinds that contain the subject shrink by it.
RoomRow = wp.types.vector(length=8, dtype=wp.float32)
