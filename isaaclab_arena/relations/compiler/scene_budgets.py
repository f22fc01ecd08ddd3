"""Budgets of a scene's size, checked when it is compiled, before anything that grows with it is built.

``compile_placement_problem`` runs them first, each refusing in one line that names the figures and the knob:

* **Object count** (``check_object_budget``, before any other check): at most ``placer_params.max_objects``
  placed objects (default ``DEFAULT_MAX_OBJECTS``). The no_overlap pairs grow as n^2: on the 2-core CPU 2,000
  boxes compile and are placed (one env) in 1.7 s with a 288 MB peak, 3,000 in 2.8 s and 615 MB; 10,000 had taken
  5.4 GB after 75 s of compiling when the pairs were Python tuples (``docs/SOLVER.md``, "Budgets"). A scene whose
  pairs follow the rule (``pair_rule.py``) grows linearly (10,000 boxes: 2.4 s, 117 MB), but one with listed pairs
  (yawed or MESH objects) does not, hence the default.
* **Footprint** (``footprint_budget.check_footprint_budget``): the objects On one support must fit it by area.
* **Memory** (``check_memory_budget``, before the per-env geometry and the pair tables): the bytes that the
  compile, one solve batch and the failure tally of a fill that stays short would allocate
  (``estimate_memory``), against ``placer_params.memory_budget_gb`` or half the memory available (host:
  ``psutil``, else /proc/meminfo; CUDA: ``torch.cuda.mem_get_info``).
"""

from __future__ import annotations

from dataclasses import dataclass

from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError

#: Default ``ObjectPlacerParams.max_objects`` (see the module docstring for the measurement).
DEFAULT_MAX_OBJECTS = 2000
#: Share of the available memory a compile may plan to use when no ``memory_budget_gb`` is set.
AVAILABLE_SHARE = 0.5
#: Bytes per no_overlap pair of the compile's host arrays at its peak (the pair table and its rows, pair modes, the
#: objects' pair lists and their sort), beside the device tables (``estimate_memory``'s ``tables``, 32 B per pair):
#: the peak RSS of boxes-on-a-table scenes of 1,000 .. 4,000 objects, tables on the CPU included, grew by 135-146 MB
#: per million pairs (``bench_scale_refill.py``'s scene; 382 MB when the pairs were Python tuples).
COMPILE_BYTES_PER_PAIR = 120
#: Bytes per env and object of the per-env geometry (float64 and float32 bounds, the room table, the static
#: projection intervals: 4 vec3).
GEOMETRY_BYTES = 152
#: Bytes per candidate and object of a solve batch (7 vec3 scratch arrays, positions, rotations, the output
#: buffers, the batch's copy of them and the validation's tensors: 200 boxes x 5,120 candidates peaked 274 MB
#: above the same scene solved for one env, 267 B), and per candidate and relation (excess, cause, copies).
BATCH_BYTES_PER_OBJECT = 272
BATCH_BYTES_PER_RELATION = 16
#: Bytes of ``failure_explanation.FailureTally`` once an env stays short: per failing candidate (its worst
#: no_overlap and clearance pairs: int64 key and count, float32 depth each, twice that while a batch is merged in,
#: ``PairMisses``) and per env and relation (float32 x 2, int64 x 2).
TALLY_BYTES_PER_MISS = 80
TALLY_BYTES_PER_RELATION = 24
GB = 1e9


def check_object_budget(assets, placer_params) -> None:
    """Raises ``PlacementConfigError`` when the scene places more than ``placer_params.max_objects`` objects."""
    limit = placer_params.max_objects
    if limit is None:
        return
    n = sum(1 for a in assets if a.has_placement_relations)
    if n > limit:
        raise PlacementConfigError(
            f"the scene places {n} objects, more than placer_params.max_objects={limit} (its no_overlap pairs "
            f"grow as n^2: {n * (n - 1) // 2:,} here); split the scene, place fewer objects, or raise max_objects "
            "(null: no limit)")


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes a compile and one solve would allocate: ``compile_host`` (Python pair rows, per-env geometry;
    host memory on every device), ``tables`` (the pair tables on the device), ``batch`` (one solve batch of
    ``candidates``), ``tally`` (the failure tally of a fill with short envs)."""

    pairs: int
    candidates: int
    compile_host: int
    tables: int
    batch: int
    tally: int

    @property
    def device(self) -> int:
        return self.tables + self.batch + self.tally


def estimate_memory(n_mov: int, n_colliders: int, n_relations: int, num_envs: int, placer_params,
                    listed_pairs: bool = True) -> MemoryEstimate:
    """The allocation of a scene of ``n_mov`` placed objects, ``n_colliders`` fixed objects they may collide with
    and ``n_relations`` relations, over ``num_envs`` envs (an upper bound: no pair counted as exempt).
    ``listed_pairs`` False: the scene keeps its pairs as the rule (``compiler/pair_rule.py``), no row per pair."""
    pairs = n_mov * (n_mov - 1) // 2 + n_mov * n_colliders
    n_all = n_mov + n_colliders
    # a solve batch: ``place()`` solves max_placement_attempts candidates per env, a pool fill
    # min_unique_layouts_per_env per env
    candidates = num_envs * max(placer_params.max_placement_attempts, placer_params.min_unique_layouts_per_env)
    sp = placer_params.solver_params
    per_object = BATCH_BYTES_PER_OBJECT + (12 * (sp.max_iters // 10 + 1) if sp.save_position_history else 0)
    batch = candidates * (per_object * max(n_mov, 1) + BATCH_BYTES_PER_RELATION * n_relations)
    # the tally's pairs: at most one entry per candidate and pair check, over every batch of a fill
    misses = min(candidates * placer_params.max_placement_attempts, num_envs * pairs)
    tally = TALLY_BYTES_PER_MISS * misses + TALLY_BYTES_PER_RELATION * num_envs * n_relations
    listed = pairs if listed_pairs else 0
    return MemoryEstimate(pairs, candidates, COMPILE_BYTES_PER_PAIR * listed + GEOMETRY_BYTES * num_envs * n_all,
                          32 * listed, batch, tally)


def available_host_bytes() -> int | None:
    """Memory available to new allocations (``psutil``, else /proc/meminfo's MemAvailable); None if unknown."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - psutil is optional
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def available_device_bytes(device: str) -> int | None:
    """Free memory of a CUDA device (``torch.cuda.mem_get_info``); None for the CPU or when unknown."""
    if not str(device).startswith("cuda"):
        return None
    try:
        import torch

        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    except Exception:  # noqa: BLE001
        return None


def _gb(b: float) -> str:
    return f"{b / GB:.2f} GB" if b < 10 * GB else f"{b / GB:.0f} GB"


def check_memory_budget(n_mov: int, n_colliders: int, n_relations: int, num_envs: int, placer_params,
                        device: str = "cpu", listed_pairs: bool = True) -> MemoryEstimate:
    """Raises ``PlacementConfigError`` (one line) when ``estimate_memory`` exceeds the budget: on the CPU the whole
    estimate against the host's; on CUDA the compile's host part against the host's and the rest against the
    device's. Returns the estimate."""
    est = estimate_memory(n_mov, n_colliders, n_relations, num_envs, placer_params, listed_pairs)
    override = placer_params.memory_budget_gb
    cuda = str(device).startswith("cuda")
    checks = [("host", est.compile_host + (0 if cuda else est.device), available_host_bytes())]
    if cuda:
        checks.append((str(device), est.device, available_device_bytes(device)))
    for where, need, free in checks:
        if override is not None:
            budget, whose = override * GB, f"placer_params.memory_budget_gb={override:g}"
        elif free is not None:
            budget = AVAILABLE_SHARE * free
            whose = f"half the {_gb(free)} available{'' if where == 'host' else ' on ' + where}; memory_budget_gb"
        else:
            continue
        if need <= budget:
            continue
        parts = [f"compile {_gb(est.compile_host)} for {est.pairs:,} pairs"] if where == "host" else []
        if where != "host" or not cuda:
            parts += [f"a {est.candidates}-candidate batch {_gb(est.batch)}", f"failure tally {_gb(est.tally)}"]
        raise PlacementConfigError(
            f"placement would allocate about {_gb(need)} ({', '.join(parts)}) but the budget is {_gb(budget)} "
            f"({whose}); lower num_envs ({num_envs}) or max_placement_attempts "
            f"({placer_params.max_placement_attempts}), or place fewer than {n_mov} objects")
    return est
