"""A runner process's garbage collection: full collections rarely while it runs, none at exit.

After torch, warp, Isaac Lab (and newton for a robot) have been imported, a process holds about a million objects
that live until it ends, and a full collection walks all of them: 0.1-0.4 s each on the 2-core CPU machine. With
CPython's default thresholds (700, 10, 10) a runner ran 6 (``environment_runner.py``, 0.7 s of a 3.6 s run) to 9
(``policy_runner.py`` on ``franka_table_pick_and_place``, 2.0 s of a 12 s run) of them, nearly all while importing
and building the env, and each freed at most a few hundred objects (0 to 326 in the policy runner's). The runners
therefore make full collections 100x rarer (:func:`collect_rarely`), take the imported modules' objects out of every
later collection (:func:`freeze_imports`) and freeze every object out of the final ones at shutdown
(:func:`skip_collection_at_exit`). Runner processes only (``if __name__ == "__main__"``), never from a
library: they change the process's collector.
"""

from __future__ import annotations

import atexit
import gc

#: Set by :func:`skip_collection_at_exit`, which only a runner's ``__main__`` block calls: this process is a runner's
#: own (:func:`freeze_imports` acts only then).
_runner_process = False

#: Young (generation 1) collections between two full ones; CPython's default is 10. Young collections keep their
#: default pace, so short-lived reference cycles are freed as before; a cycle that outlives two young collections
#: waits for the next full one (after 1,000 young collections, about 7 million net allocations of containers).
YOUNG_COLLECTIONS_PER_FULL = 1000


def collect_rarely() -> None:
    """Sets the full-collection threshold to :data:`YOUNG_COLLECTIONS_PER_FULL` (the other two unchanged). Called
    first thing in a runner, before its heavy imports (the first full collections come while importing)."""
    gen0, gen1, _ = gc.get_threshold()
    gc.set_threshold(gen0, gen1, YOUNG_COLLECTIONS_PER_FULL)


def skip_collection_at_exit() -> None:
    """Registers :func:`gc.freeze` as an exit hook. Exit hooks run last-registered first, so called first thing
    in a runner it runs after every hook registered later (writers, Ray, torch.distributed): those still run;
    only objects that nothing but a reference cycle keeps alive are left unfinalised, as Python never promised
    to finalise them at exit. When the interpreter shuts down it collects every object of the process in
    reference cycles (``Py_FinalizeEx`` -> ``finalize_modules``): after torch, warp and Isaac Lab have been
    imported that walk took about 1 s of a 4-5 s ``environment_runner.py`` run here, and the operating system
    releases a finished process's memory anyway."""
    global _runner_process
    _runner_process = True
    atexit.register(gc.freeze)


def freeze_imports() -> None:
    """Moves every object alive now into the permanent generation (:func:`gc.freeze`), which no collection walks.
    Called by a runner's ``main`` right after its heavy imports (torch, warp, Isaac Lab): their objects live as long
    as the process, and Isaac Lab's ``env.close()`` runs a full collection (``SimulationContext.clear_instance``)
    that walked all of them. Objects made later (the env, its simulation, the layouts) are collected as before. A
    policy evaluation on the 2-core machine (franka_table_pick_and_place, 2 envs, 2 episodes): seconds in
    collections 0.52-0.54 -> 0.36-0.42, wall 4.37-4.45 -> 4.10-4.25 s (alternated three times).

    Only in a runner's own process (its ``__main__`` block called :func:`skip_collection_at_exit`): a ``main``
    called from Python (a notebook, a test, a user's script) leaves that process's collector as it is."""
    if _runner_process:
        gc.freeze()
