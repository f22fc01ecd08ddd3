"""The kernels of one solve, in launch order on one argument list. Scenes with OBB / MESH pairs or MESH
support terms launch the general variants of the kernels that evaluate those (init, iterate, finalize); box scenes keep
the smaller kernels the CPU compiler inlines, and plain scenes (``tables.plain_scene``) init and finalize kernels
smaller still. Scenes whose pairs follow the rule (``tables.pair_rule``: large box scenes, ``kernels/pair_rule.py``)
launch the rule variants of the box and plain kernels.

Every kernel of a solve or a check takes its candidates in runs (its last two arguments, ``rows`` and ``count``):
thread t handles candidates [t * rows, min((t + 1) * rows, count)). On a GPU a run is one candidate (one thread
each); on the CPU, where warp calls the kernel once per thread index and each call loads the kernel's arguments
anew (hundreds of fields of the scene tables and the state), a run of ``CPU_ROWS_PER_TASK`` candidates shares one
call: boxes3's check pass 1.3x faster at 16,384 and 65,536 layouts. A candidate's result does not depend on the run
it is in."""

from __future__ import annotations

from isaaclab_arena.relations.kernels.solve_finalize import (
    finalize_kernel,
    finalize_kernel_general,
    finalize_kernel_plain,
    finalize_kernel_plain_rule,
    finalize_kernel_rule,
)
from isaaclab_arena.relations.kernels.solve_init import (
    init_kernel,
    init_kernel_general,
    init_kernel_plain,
    init_kernel_plain_rule,
    init_kernel_rule,
)
from isaaclab_arena.relations.kernels.solve_iterate import iterate_kernel, iterate_kernel_general, iterate_kernel_rule
from isaaclab_arena.relations.kernels.solve_prepare import prepare_kernel
from isaaclab_arena.relations.kernels.tables import is_box_scene

#: Generate (initial candidates), optimise, finalize: a solve of fresh candidates.
FRESH = (init_kernel, iterate_kernel, finalize_kernel)
#: The same for plain scenes (``tables.plain_scene``): their initial draws need none of the steps the plain init
#: kernel leaves out.
FRESH_PLAIN = (init_kernel_plain, iterate_kernel, finalize_kernel_plain)
#: The same for scenes with OBB / MESH pairs or MESH support terms (their initial draws score those too).
FRESH_GENERAL = (init_kernel_general, iterate_kernel_general, finalize_kernel_general)
#: Prepare given candidates (bounds, projection), optimise, finalize: a solve of existing candidates.
GIVEN = (prepare_kernel, iterate_kernel, finalize_kernel)
GIVEN_GENERAL = (prepare_kernel, iterate_kernel_general, finalize_kernel_general)
#: The same for scenes whose pairs follow the rule (box scenes, plain or not).
FRESH_RULE = (init_kernel_rule, iterate_kernel_rule, finalize_kernel_rule)
FRESH_PLAIN_RULE = (init_kernel_plain_rule, iterate_kernel_rule, finalize_kernel_plain_rule)
GIVEN_RULE = (prepare_kernel, iterate_kernel_rule, finalize_kernel_rule)


def fresh(tables) -> tuple:
    """The kernels of a fresh solve of a problem whose ``SceneTables`` are ``tables``."""
    if not is_box_scene(tables):
        return FRESH_GENERAL
    if tables.pair_rule:
        return FRESH_PLAIN_RULE if tables.plain else FRESH_RULE
    return FRESH_PLAIN if tables.plain else FRESH


def given(tables) -> tuple:
    """The kernels of a solve of given candidates of a problem whose ``SceneTables`` are ``tables``."""
    if not is_box_scene(tables):
        return GIVEN_GENERAL
    return GIVEN_RULE if tables.pair_rule else GIVEN


#: Candidates per kernel call on the CPU (one thread each on a GPU).
CPU_ROWS_PER_TASK = 64


def launch_rows(count: int, device) -> tuple[int, int, int]:
    """(launch dim, rows, count): the launch shape of ``count`` candidates on ``device``; ``rows`` and ``count``
    are the kernels' last two arguments."""
    rows = CPU_ROWS_PER_TASK if str(device) == "cpu" else 1
    return (count + rows - 1) // rows, rows, count
