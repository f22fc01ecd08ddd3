"""YAML environment specs (``ArenaEnvGraphSpec``): load, validate, build, write back."""

from isaaclab_arena.env_spec.arena_env_graph_spec import (  # noqa: F401
    ArenaEnvGraphSpec,
    EnvSpecError,
    spec_from_arena_env,
)
