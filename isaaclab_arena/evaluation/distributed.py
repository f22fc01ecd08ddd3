"""One evaluation job over several processes (torchrun): shares, shards, resume and the gather on rank 0.

Under ``python -m torch.distributed.run --nproc_per_node=N <runner> ... --distributed`` (multi-node with
``--nnodes`` / ``--rdzv_endpoint``) every process is a rank with its own env on its own device
(``cuda:LOCAL_RANK`` when CUDA is there, else the CPU with the ``gloo`` backend). Rank ``r`` of ``W`` runs the
episodes ``k`` with ``k % W == r``: a share fixed by the global episode index, so the layouts (episode ``k``:
layout ``k``) and, with ``--env_spacing 0``, the records are exactly those of a single-process run.

Each rank keeps its finished records in a shard, ``<output_dir>/shards/rank<r>-of-<W>.jsonl`` (rewritten
atomically as episodes finish) beside a manifest of the run's settings; a rank that dies and is restarted
(``torchrun --max-restarts``) reads its shard and runs only the episodes it lacks, so nothing is duplicated
or lost. A shard whose manifest differs (world size, seed, episodes, policy, environment) is refused in one
line naming both values. Rank 0 gathers every rank's records through ``torch.distributed`` and writes the
merged records, summary and report.
"""

from __future__ import annotations

import json
import os

from isaaclab_arena.utils.distributed import RankContext

#: The rank context of an evaluation job (``utils.distributed.RankContext``).
DistContext = RankContext


def share(ctx: RankContext, num_episodes: int) -> list[int]:
    """The global episodes rank ``ctx.rank`` runs (``k % world_size == rank``)."""
    return list(range(ctx.rank, num_episodes, ctx.world_size))


def shared_placement_seed(ctx: RankContext, output_dir: str) -> int:
    """One placement seed for every rank when none was given: the one an earlier start saved in the shards'
    manifest (a resume), else one drawn on rank 0; broadcast from rank 0."""
    import random

    import torch.distributed as dist

    box = [None]
    if ctx.is_main:
        manifest = os.path.join(output_dir, "shards", "manifest.json")
        saved = None
        if os.path.isfile(manifest):
            with open(manifest) as f:
                saved = json.load(f).get("placement_seed")
        box[0] = saved if isinstance(saved, int) else random.SystemRandom().randrange(2**31 - 1)
    dist.broadcast_object_list(box, src=0)
    return int(box[0])


class ShardStore:
    """A rank's finished records on disk, with the manifest a resume is checked against.

    Args:
        output_dir: The run's output folder (shards go to ``<output_dir>/shards``).
        ctx: The rank.
        manifest: The settings a resume must match (world size, seed, episodes, policy, environment ...).
    """

    def __init__(self, output_dir: str, ctx: RankContext, manifest: dict):
        self.folder = os.path.join(output_dir, "shards")
        self.ctx = ctx
        self.manifest = dict(manifest, world_size=ctx.world_size, rank=ctx.rank)
        stem = f"rank{ctx.rank}-of-{ctx.world_size}"
        self.path = os.path.join(self.folder, stem + ".jsonl")
        self.manifest_path = os.path.join(self.folder, "manifest.json")

    def load(self) -> list[dict]:
        """Records saved by an earlier start of this rank (resume), after checking the manifest; [] when new."""
        from isaaclab_arena.evaluation.episode_records import read_records

        if os.path.isfile(self.manifest_path):
            with open(self.manifest_path) as f:
                saved = json.load(f)
            first = ("world_size", "placement_seed", "num_episodes")
            for key in [*first, *(k for k in self.manifest if k not in first)]:
                value = self.manifest[key]
                if key == "rank":
                    continue
                if saved.get(key) != value:
                    raise ValueError(f"resume of {self.folder}: {key} was {saved.get(key)!r} when these shards were "
                                     f"written, this run has {value!r}; resume with the same settings or use another "
                                     "--output_dir")
        if not os.path.isfile(self.path):
            return []
        return read_records(self.path)

    def save(self, records: list[dict]) -> None:
        """Rewrites the shard (and, on rank 0, the manifest) atomically."""
        from isaaclab_arena.evaluation.episode_records import records_text, write_json_atomic, write_text_atomic

        os.makedirs(self.folder, exist_ok=True)
        if self.ctx.is_main or not os.path.isfile(self.manifest_path):
            write_json_atomic(self.manifest_path, {k: v for k, v in self.manifest.items() if k != "rank"})
        write_text_atomic(self.path, records_text(sorted(records, key=lambda r: r["episode"])))


__all__ = ["DistContext", "ShardStore", "share", "shared_placement_seed"]
