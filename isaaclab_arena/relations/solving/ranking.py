"""Rank stage: candidates of each env ordered by required-check failures, optional-check failures, then
solver loss (all ascending). Batched torch on the batch's device, numpy on the CPU (one thread: torch's parallel
ops leave their threads spinning on the cores the placement uses next, ``kernels/geometry.copy_into``; and a
numpy call on a few thousand values costs a fraction of torch's per-op overhead); the one ranking definition used
by ``ObjectPlacer.place`` and the pool."""

from __future__ import annotations

import numpy as np
import torch

from isaaclab_arena.relations.validation.results import ValidatedBatch


def _on_host(t: torch.Tensor) -> bool:
    """Whether the numpy branch ranks ``t``'s batch (CPU tensors; tests switch it off to check torch's branch)."""
    return t.device.type == "cpu"


def rank_keys(env_ids: torch.Tensor, required_failures: torch.Tensor, optional_failures: torch.Tensor,
              loss: torch.Tensor) -> torch.Tensor:
    """Candidate indices grouped by env (ascending env id), each env's candidates ordered by required
    failures, then optional failures, then loss (stable: ties keep batch order).

    One stable sort of a single int64 key ``((env * R + required) * O + optional) * 2**32 + loss bits``, where
    the loss bits are a float32 loss's 32 bits mapped so that their order is the losses' (:func:`loss_order_bits`);
    a key too wide for that (or a loss of another dtype) sorts once per key instead.
    """
    B = loss.numel()
    if B == 0:
        return torch.zeros(0, dtype=torch.long, device=loss.device)
    if _on_host(loss) and loss.dtype == torch.float32:
        env, req, opt = (t.numpy().astype(np.int64) for t in (env_ids, required_failures, optional_failures))
        r_width, o_width = int(req.max()) + 1, int(opt.max()) + 1  # failure counts are >= 0 and small
        if (int(env.max()) + 1) * r_width * o_width < 1 << 31:
            key = (((env * r_width + req) * o_width + opt) << 32) | loss_order_bits(loss).numpy()
            return torch.from_numpy(np.argsort(key, kind="stable"))
    req, opt = required_failures.to(torch.long), optional_failures.to(torch.long)
    r_width, o_width = int(req.max()) + 1, int(opt.max()) + 1
    if loss.dtype != torch.float32 or (int(env_ids.max()) + 1) * r_width * o_width >= 1 << 31:
        idx = torch.argsort(loss, stable=True)
        for k in (opt, req, env_ids):
            idx = idx[torch.argsort(k[idx], stable=True)]
        return idx
    key = (((env_ids.to(torch.long) * r_width + req) * o_width + opt) << 32) | loss_order_bits(loss)
    return torch.argsort(key, stable=True)


def loss_order_bits(loss: torch.Tensor) -> torch.Tensor:
    """(B,) int64 in [0, 2**32) ordered as the float32 ``loss`` values are: equal losses get equal values
    (-0.0 as 0.0) and NaN comes last, as in a sort of the losses. IEEE-754 bits of a non-negative float grow
    with it: their sign bit is set to put them above the negatives, whose bits are inverted (they grow the
    other way)."""
    if _on_host(loss):
        x = loss.detach().numpy() + np.float32(0.0)  # a new array; -0.0 becomes 0.0
        x[np.isnan(x)] = np.float32("nan")  # one NaN (positive): last
        bits = x.view(np.uint32).astype(np.int64)
        return torch.from_numpy(np.where(bits >= 1 << 31, bits ^ 0xFFFFFFFF, bits | (1 << 31)))
    x = loss + 0.0
    x = torch.where(torch.isnan(x), torch.full_like(x, float("nan")), x)
    bits = x.view(torch.int32).to(torch.long) & 0xFFFFFFFF
    return torch.where(bits >= 1 << 31, bits ^ 0xFFFFFFFF, bits | (1 << 31))


def rank_order(batch: ValidatedBatch) -> torch.Tensor:
    """``rank_keys`` of a validated batch: each env's candidates best first."""
    v = batch.validation
    return rank_keys(batch.env_ids, v.required_failures, v.optional_failures, batch.loss)


def best_per_env(batch: ValidatedBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(env ids present, index of each one's best-ranked candidate)."""
    order = rank_order(batch)
    envs = batch.env_ids[order]
    first = torch.ones_like(envs, dtype=torch.bool)
    first[1:] = envs[1:] != envs[:-1]
    return envs[first], order[first]


def rank_within_env(env_sorted: torch.Tensor, mask: torch.Tensor, num_envs: int) -> torch.Tensor:
    """For candidates already sorted by env, the 0-based rank of each masked candidate among its env's masked
    candidates (unmasked entries get a large value)."""
    if _on_host(env_sorted):
        env, keep = env_sorted.numpy(), mask.numpy().astype(bool)
        counts = np.bincount(env[keep], minlength=num_envs)
        rank = np.cumsum(keep, dtype=np.int64) - 1 - (np.cumsum(counts) - counts)[env]
        return torch.from_numpy(np.where(keep, rank, np.int64(1 << 40)))
    m = mask.to(torch.long)
    csum = torch.cumsum(m, 0)
    counts = torch.zeros(num_envs, dtype=torch.long, device=env_sorted.device).index_add_(0, env_sorted, m)
    before = torch.cumsum(counts, 0) - counts
    rank = csum - 1 - before.index_select(0, env_sorted)
    return torch.where(mask, rank, torch.full_like(rank, 1 << 40))


def _whole_partitions(env: np.ndarray, keep: np.ndarray, count: np.ndarray, L: int):
    """``assign_slots`` of the common fill (numpy): every candidate masked, each env's run of exactly ``L``
    candidates going into its empty partition, so candidate k takes slot k % L; None when the batch is not that."""
    n = env.shape[0]
    if n == 0 or n % L or not keep.all():
        return None
    groups = env.reshape(-1, L)
    heads = groups[:, 0]
    if not (groups == heads[:, None]).all() or not (heads[1:] > heads[:-1]).all() or count[heads].any():
        return None
    count[heads] += L  # writes ``filled``
    slots = np.tile(np.arange(L, dtype=np.int64), heads.shape[0])
    return torch.from_numpy(np.arange(n, dtype=np.int64)), torch.from_numpy(env.copy()), torch.from_numpy(slots)


def assign_slots(env_sorted: torch.Tensor, mask: torch.Tensor, filled: torch.Tensor,
                 layouts_per_env: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Which candidates fill their env's free slots, and which slots: for candidates sorted by env (each env's best
    first), the k-th masked candidate of env e takes slot ``filled[e] + k`` while that is below ``layouts_per_env``.

    Returns ``(picked, envs, slots)``: the indices of the taken candidates in the sorted order, their envs and
    their slots (each (T,) int64). Adds the taken counts to ``filled`` ((num_envs,) int64, in place)."""
    L = layouts_per_env
    if _on_host(env_sorted):
        whole = _whole_partitions(env_sorted.numpy(), mask.numpy(), filled.numpy(), L)
        if whole is not None:
            return whole
    rank = rank_within_env(env_sorted, mask, filled.shape[0])  # unmasked candidates rank 2**40: never a free slot
    if _on_host(env_sorted):
        env, rank, count = env_sorted.numpy(), rank.numpy(), filled.numpy()
        picked = np.flatnonzero(rank < (L - count)[env])
        envs = env[picked]
        slots = count[envs] + rank[picked]
        count += np.bincount(envs, minlength=len(count))  # writes ``filled``
        return torch.from_numpy(picked), torch.from_numpy(envs), torch.from_numpy(slots)
    picked = (rank < (L - filled).index_select(0, env_sorted)).nonzero().flatten()
    envs = env_sorted.index_select(0, picked)
    slots = filled.index_select(0, envs) + rank.index_select(0, picked)
    filled.index_add_(0, envs, torch.ones_like(envs))
    return picked, envs, slots
