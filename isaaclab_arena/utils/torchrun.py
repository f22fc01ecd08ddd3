"""``python -m torch.distributed.run`` as the launcher runs it: torchrun itself, with the runners' exit statuses.

``scripts/arena_python.sh -m torch.distributed.run <torchrun flags> <script> <arguments>`` runs this module. It
calls torchrun's own ``main`` unchanged (rendezvous, restarts, multi-node), and when every failed rank ended with
a refusal (exit status 2: the rank already printed its one ``error: ...`` line) or an interruption (130 / 143),
it exits with that status instead of printing torchrun's failure report and its traceback.
"""

from __future__ import annotations

import sys

#: Rank exit statuses that mean "refused" / "interrupted" (the rank printed why).
QUIET_STATUSES = (2, 130, 143)


def main(argv: list[str] | None = None) -> int:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import main as torchrun_main

    import os

    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # torchrun's own default for several ranks, without its banner
    if not os.environ.get("ARENA_TORCHRUN_LOGS"):  # the agent's per-rank SIGTERM / exit lines; a crash still
        import logging                                # raises torchrun's full failure report below

        logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    try:
        torchrun_main(argv)
    except ChildFailedError as err:
        _, root = err.get_first_failure()
        others = {f.exitcode for f in err.failures.values()}
        # the first rank to fail refused (or was interrupted); the rest refused too or were stopped by torchrun
        if root.exitcode in QUIET_STATUSES and others <= {*QUIET_STATUSES, -15, -2}:
            return root.exitcode
        raise
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
