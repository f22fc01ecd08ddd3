"""YAML environment specs (``ArenaEnvGraphSpec``): parse, build, command-line overrides, write back."""

from isaaclab_arena.env_spec.arena_env_graph_spec import (  # noqa: F401
    ArenaEnvGraphSpec,
    EnvSpecError,
    spec_from_arena_env,
)
from isaaclab_arena.env_spec.spec_issue import EnvSpecWarning  # noqa: F401
