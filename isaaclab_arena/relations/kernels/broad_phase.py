"""Broad phase of large box scenes: sort and sweep along X, one candidate per thread (issue 21).

In a scene with ``T.sweep`` set (many relation-placed objects, see ``compiler/pair_tables.py::SWEEP_FROM_OBJECTS``), the
axis-aligned pairs of two placed objects are visited through a per-candidate list of those objects sorted by
the low X of their world boxes (``S.order`` / ``S.key``, (B, n_mov)), so that the pair work grows with the pairs
whose X ranges come within reach of each other instead of with every pair; pairs with a fixed object are
visited per placed object through ``T.pair_of`` (few fixed objects in such scenes). A pair left out lies
farther apart along X than the pad the caller gives (its clearance, plus the solver's margin where pushes
count), so it adds nothing to a loss, a push or a verdict; what it changes is only the order of the sums.

The order is by (low X, object index), a unique order whatever permutation the list held before, so a candidate's
results do not depend on where its sort started: the list is allocated in index order
(``tables.sweep_scratch``), only ever permuted after that, and the solver keeps the previous iteration's order,
nearly sorted already. Metres, env-local world frame.
"""

from __future__ import annotations

import warp as wp

from isaaclab_arena.relations.kernels.tables import CandidateState


@wp.func
def low_x(x: wp.array2d(dtype=wp.vec3), olo: wp.array2d(dtype=wp.vec3), b: int, i: int) -> float:
    """Low X (m) of placed object i's world box in candidate b: the list's key."""
    return x[b, i][0] + olo[b, i][0]


@wp.func
def before(ka: float, ia: int, kb: float, ib: int) -> bool:
    """Whether (key ka, object ia) sorts before (kb, ib)."""
    return ka < kb or (ka == kb and ia < ib)


@wp.func
def place_in_list(order: wp.array2d(dtype=int), key: wp.array2d(dtype=float), b: int, i: int, ki: float,
                  count: int):
    """Puts object i with low X ``ki`` into the sorted first ``count`` entries of candidate b's list (shifting
    the later ones up by one)."""
    m = count - 1
    while m >= 0 and before(ki, i, key[b, m], order[b, m]):
        order[b, m + 1] = order[b, m]
        key[b, m + 1] = key[b, m]
        m -= 1
    order[b, m + 1] = i
    key[b, m + 1] = ki


@wp.func
def sort_list(order: wp.array2d(dtype=int), key: wp.array2d(dtype=float), x: wp.array2d(dtype=wp.vec3),
              olo: wp.array2d(dtype=wp.vec3), b: int, count: int):
    """Sorts the first ``count`` entries of candidate b's list by (low X, index), keys refreshed from the
    current boxes (insertion sort: linear on a list that was nearly sorted)."""
    for k in range(count):
        key[b, k] = low_x(x, olo, b, order[b, k])
    for k in range(1, count):
        place_in_list(order, key, b, order[b, k], key[b, k], k)


@wp.func
def sweep_sort(S: CandidateState, b: int, count: int):
    """``sort_list`` of candidate b's list."""
    sort_list(S.order, S.key, S.x, S.olo, b, count)


@wp.func
def sweep_insert(S: CandidateState, b: int, i: int, count: int) -> int:
    """Inserts placed object i into the sorted first ``count`` entries of candidate b's list; returns the new
    count."""
    place_in_list(S.order, S.key, b, i, low_x(S.x, S.olo, b, i), count)
    return count + 1


@wp.func
def first_at_or_after(S: CandidateState, b: int, count: int, x: float) -> int:
    """Index of the first of the sorted ``count`` entries whose low X is at least ``x`` (count when none).

    Interpolation, then a walk: the placed objects' low X spread over the support about evenly, so the guess from
    the first and last keys lands within a step or two of the answer (a binary search takes log2(count) dependent
    loads: 80 boxes' init kernel 5 % slower with it). The answer is exact for any sorted keys, repeats and uneven
    spreads included (the guess only sets where the walk starts): the walk moves down while the key below is at
    least ``x``, then up while the key is below it."""
    if count == 0 or x <= S.key[b, 0]:
        return 0
    last = S.key[b, count - 1]
    if x > last:
        return count
    g = wp.clamp(int((x - S.key[b, 0]) / (last - S.key[b, 0]) * float(count - 1)), 0, count - 1)
    while g > 0 and S.key[b, g - 1] >= x:
        g -= 1
    while g < count and S.key[b, g] < x:
        g += 1
    return g


@wp.func
def next_box_pair(sweep: int, rule: int, n_box_pairs: int, n_mov: int, n_all: int, order: wp.array2d(dtype=int),
                  key: wp.array2d(dtype=float), x: wp.array2d(dtype=wp.vec3), olo: wp.array2d(dtype=wp.vec3),
                  ohi: wp.array2d(dtype=wp.vec3), pair_of: wp.array2d(dtype=int), b: int, pad: float, a: int, t: int,
                  reach: float):
    """The next axis-aligned pair a candidate's loop visits: ``(k, a, t, reach, i, j)`` with k the pair index, -1
    when the walk is over. Call with ``a = 0, t = -1`` first (the list is sorted then), then with the returned cursor.

    Without the broad phase (``sweep`` 0): k = t, every pair in index order. With it: for each placed object i at
    list position a, the placed objects j after it in the list whose low X is within its high X plus ``pad`` (m),
    then the fixed objects j it forms a pair with. With pairs by ``rule`` (``kernels/pair_rule.py``) k is 0 for
    every such (i, j), a pair or not: the caller asks the rule. It takes the arrays it reads, not the scene tables
    and state (which warp copies by value to a function that is not inlined)."""
    if t < 0:
        t = 0
        if sweep != 0:
            sort_list(order, key, x, olo, b, n_mov)
    k = int(-1)
    i = int(-1)
    j = int(-1)
    if sweep == 0:
        if t < n_box_pairs:
            k = t
            t += 1
        return k, a, t, reach, i, j
    while k < 0 and a < n_mov:
        i = order[b, a]
        if t == 0:  # a new object of the list: its reach along X
            t = a + 1
            reach = x[b, i][0] + ohi[b, i][0] + pad
        if t < n_mov:
            if key[b, t] <= reach:
                j = order[b, t]
                k = 0
                if rule == 0:
                    k = pair_of[i, j]
                t += 1
            else:
                t = n_mov  # past its reach: the fixed objects next
        elif t < n_all:
            j = t
            k = 0
            if rule == 0:
                k = pair_of[i, t]
            t += 1
        else:
            a += 1
            t = 0
    return k, a, t, reach, i, j


@wp.func
def sweep_width(S: CandidateState, b: int, i: int) -> float:
    """X extent (m) of placed object i's world box in candidate b."""
    return S.ohi[b, i][0] - S.olo[b, i][0]


@wp.func
def sweep_refresh(S: CandidateState, b: int, count: int) -> float:
    """Sorts the first ``count`` entries again from the current boxes (after something moved or turned objects
    already in the list); returns the largest X extent among them (m)."""
    sweep_sort(S, b, count)
    w = float(0.0)
    for m in range(count):
        w = wp.max(w, sweep_width(S, b, S.order[b, m]))
    return w
