"""isaaclab_arena: relation-based object placement for Isaac Lab 3.0 environments.

Import submodules directly (``isaaclab_arena.relations.relations``, ``isaaclab_arena.assets.asset``, ...);
importing the top-level package starts no simulator.
"""

import os

__version__ = "0.1.0"

#: Repository root (the folder holding ``isaaclab_arena``), for shipped assets and test data.
ARENA_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
