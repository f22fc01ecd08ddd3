"""The adapter layer between the placement core and Isaac Lab / USD.

The placement core (``isaaclab_arena.relations``, ``isaaclab_arena.assets``, ``isaaclab_arena.utils``)
works on plain geometry and imports nothing from isaaclab, isaacsim, omni or pxr. Everything that reads
geometry out of spawner configs or USD files, builds Isaac Lab spawner configs, or loads example assets
lives here and is imported only by the integration code (environments, env specs, scripts, example
libraries).

Importing this package installs the USD geometry reader of the asset model (``spawn_geometry``), so that
``Object(name, UsdFileCfg(...)).get_bounding_box()`` and ``ObjectReference`` work:

- ``usd_geometry``: bounds and prim poses read from USD files with pxr.
- ``spawn_geometry``: the ``GeometryReader`` the asset model asks for geometry it cannot compute itself.
- ``procedural``: the built-in registry entries (``box``, ``cylinder``, ``sphere``, ``usd_file``,
  ``static_box``, ``usd_background``) as Isaac Lab spawner configs.
- ``asset_registry``: registry names (YAML ``registry_name``) -> asset factories, with the example assets.
- ``asset_catalog``: one record per registry name (kind, size in metres, collision mode, parameters) for
  ``--list_assets`` and ``docs/ASSETS.md``.
"""

from isaaclab_arena.adapters import spawn_geometry  # noqa: F401  (installs the USD geometry reader)
