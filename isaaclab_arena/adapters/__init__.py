"""The adapter layer between the placement core and Isaac Lab / USD.

The placement core (``isaaclab_arena.relations``, ``isaaclab_arena.assets``, ``isaaclab_arena.utils``)
works on plain geometry and imports nothing from isaaclab, isaacsim, omni or pxr. Everything that reads
geometry out of spawner configs or USD files, builds Isaac Lab spawner configs, or loads example assets
lives here and is imported only by the integration code (environments, env specs, scripts, example
libraries).
"""
