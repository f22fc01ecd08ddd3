"""The rank side of a torchrun job, shared by the evaluation runner and the recorder (``--distributed``).

``scripts/arena_python.sh -m torch.distributed.run --nproc_per_node=N <script> ... --distributed`` starts one process
per rank; each joins the job with :func:`init_rank`: ``gloo`` on the CPU, ``nccl`` with ``cuda:LOCAL_RANK`` when
CUDA is asked for and there. A restarted group (``torchrun --max-restarts``) joins through the torchrun agent's
store under a prefix of its start, so a restarted rank never reads a dead rank's address (gloo: "connection
refused"). :func:`agree_or_refuse` makes a refusal found on any rank one ``error:`` line (rank 0's) and exit
status 2 on every rank; :func:`gather_to_main` collects Python objects on rank 0.
"""

from __future__ import annotations

import datetime
import os
import sys
from dataclasses import dataclass

#: How to start a job (refusals name it).
TORCHRUN = ("scripts/arena_python.sh -m torch.distributed.run --nproc_per_node=2 <script> <its arguments> "
            "--distributed")


@dataclass
class RankContext:
    """This process's place in a torchrun job (``device``: the one its env uses)."""

    rank: int
    world_size: int
    local_rank: int
    device: str
    backend: str

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def torchrun_vars() -> dict | None:
    """``{"rank", "world_size", "local_rank"}`` from torchrun's variables, or None outside torchrun."""
    keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
    if not all(os.environ.get(k, "").strip() for k in keys):
        return None
    try:
        return {"rank": int(os.environ["RANK"]), "world_size": int(os.environ["WORLD_SIZE"]),
                "local_rank": int(os.environ["LOCAL_RANK"])}
    except ValueError:
        return None


def require_torchrun(flag: str = "--distributed", command: str = TORCHRUN) -> dict:
    """torchrun's variables, or ``ValueError`` (one line naming torchrun) outside a torchrun job."""
    found = torchrun_vars()
    if found is None:
        raise ValueError(f"{flag} runs one process per rank under torchrun (RANK / WORLD_SIZE / LOCAL_RANK are not "
                         f"set): {command}")
    return found


def _attempt_store():
    """The torchrun agent's store under a prefix of this start (``TORCHELASTIC_RESTART_COUNT``), or None (then
    ``env://``): after a restart the agent's store still holds the process-group keys of the killed start."""
    import torch.distributed as dist

    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True" or "MASTER_ADDR" not in os.environ:
        return None
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                          timeout=datetime.timedelta(minutes=30))
    return dist.PrefixStore(f"/arena/attempt_{attempt}", store)


def init_rank(device: str) -> RankContext:
    """Joins the torchrun job (see the module docstring); returns the rank's context."""
    import torch
    import torch.distributed as dist

    env = require_torchrun()
    use_cuda = str(device).startswith("cuda") and torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(env["local_rank"])
    backend = "nccl" if use_cuda else "gloo"
    if not dist.is_initialized():
        store = _attempt_store()
        if store is None:
            dist.init_process_group(backend=backend)
        else:
            dist.init_process_group(backend=backend, store=store, rank=env["rank"], world_size=env["world_size"])
    return RankContext(env["rank"], env["world_size"], env["local_rank"],
                       f"cuda:{env['local_rank']}" if use_cuda else "cpu", backend)


def agree_or_refuse(ctx: RankContext, refusal: str | None) -> None:
    """Collective: when any rank has a refusal, rank 0 prints the first one (``error: ...``, one line), then every
    rank exits with status 2 (after a barrier, so no rank is stopped before the line is out)."""
    import torch.distributed as dist

    found = [None] * ctx.world_size
    dist.all_gather_object(found, refusal)
    first = next((r for r in found if r), None)
    if first is None:
        return
    if ctx.is_main:
        print(f"error: {first}", file=sys.stderr, flush=True)
    dist.barrier()
    dist.destroy_process_group()  # a live gloo group at interpreter exit aborts the process (SIGABRT)
    raise SystemExit(2)


def gather_to_main(ctx: RankContext, obj):
    """Rank 0: the list of every rank's ``obj`` (rank order); other ranks: None."""
    import torch.distributed as dist

    out = [None] * ctx.world_size if ctx.is_main else None
    dist.gather_object(obj, out, dst=0)
    return out


def finish(ctx: RankContext) -> None:
    """Barrier, then leaves the process group."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


__all__ = ["RankContext", "TORCHRUN", "agree_or_refuse", "finish", "gather_to_main", "init_rank", "require_torchrun",
           "torchrun_vars"]
