"""Kit-less launch for the runners and the recorder, with refusals that stay one line.

``isaaclab.app.launch_simulation`` prints a traceback for any exception raised in its block. A refused input
found only once the env exists (e.g. a recorder check that needs the scene, an env index that does not exist)
is not a crash: :func:`kitless_session` lets the launcher close first and raises the refusal after it, so the
runner reports it as ``error: <message>`` (exit status 2) without a traceback. Anything else keeps its
traceback.
"""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def kitless_session(env_cfg, device: str):
    """``launch_simulation(env_cfg, {"headless": True, "device": device})`` deferring refused input past its exit."""
    from isaaclab.app import launch_simulation

    from isaaclab_arena.environments.cli import is_user_error

    refused = None
    with launch_simulation(env_cfg, {"headless": True, "device": device}):
        try:
            yield
        except Exception as err:  # noqa: BLE001 - classified: refusals are re-raised after the launcher closed
            if not is_user_error(err):
                raise
            refused = err
    if refused is not None:
        raise refused
