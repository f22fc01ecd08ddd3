"""Example assets: a table background, a bin and concave assets (hollow bowl, mug with a handle, shelf, kitchen
counter) authored with pxr and trimesh, procedural mug, bowl and boxes.

Importing this package registers every factory of ``library.FACTORIES`` with the asset registry
(``isaaclab_arena.adapters.asset_registry.register_asset``); the registry imports it on its first lookup.
"""

from isaaclab_arena.adapters.asset_registry import register_asset
from isaaclab_arena_environments.assets.library import FACTORIES, GROUND_PLANE_USD  # noqa: F401

for _name, _factory in FACTORIES.items():
    register_asset(_name)(_factory)
