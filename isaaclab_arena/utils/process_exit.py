"""A runner's exit without Python's final garbage collections.

When the interpreter shuts down it collects every object of the process in reference cycles (``Py_FinalizeEx``
-> ``finalize_modules``); after torch, warp and Isaac Lab have been imported that walk took about 1 s of a 4-5 s
``environment_runner.py`` run here. The operating system releases a finished process's memory anyway, so the
runners freeze every object out of those collections as the last thing before shutdown.
"""

from __future__ import annotations

import atexit
import gc


def skip_collection_at_exit() -> None:
    """Registers :func:`gc.freeze` as an exit hook. Exit hooks run last-registered first, so called first thing
    in a runner it runs after every hook registered later (writers, Ray, torch.distributed): those still run;
    only objects that nothing but a reference cycle keeps alive are left unfinalised, as Python never promised
    to finalise them at exit. Runner processes only (``if __name__ == "__main__"``), never from a library."""
    atexit.register(gc.freeze)
