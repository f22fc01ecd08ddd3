"""Feasibility pre-check: before solving, refuse a scene that no layout can satisfy, and say why in metres.

``check_feasibility`` runs at the end of ``compile_placement_problem`` on the compiled geometry (per env:
a RigidObjectSet's member of that env) and on the relations whose checks are required (objective-only
kinds count too: the solver aims for them). Pure Python and numpy, once per compile; nothing here runs
per candidate. Lengths are metres, env-local world frame, rotations xyzw.

What it proves:

* Per world axis, the interval parts of the relations are difference constraints between the lower face
  (L), origin (O), centre (C) and upper face (H) of each object's world AABB: On / ClutterOn containment
  (edge margins, the release region) and heights, NextTo gaps (``distance_m`` .. ``+ tolerance_m``), sides
  and cross extents, AlignWith, AtPosition, PositionLimitsBox and the bounding square of
  PositionLimitsCylindrical; each object's size ties its faces together, fixed objects are tied to the env
  origin. A positive cycle of that system (Bellman-Ford) is a chain that cannot fit: an On footprint larger
  than its support's room, a NextTo chain longer than its support, limits disjoint from the support. Its
  weight is the missing amount; its edges name the relations and the sizes.
* A PositionLimitsCylindrical annulus must meet the rectangle the rest of the system confines its
  subject's origin to (the support's room): refused when the annulus lies wholly outside it, or its
  radius_min disc covers it.
* Rotations: an object whose yaw is drawn (random yaw, FaceTo, a RandomAroundSolution yaw range) counts with
  the range of its AABB over the yaws at which it fits its On / ClutterOn room, sampled with a Lipschitz
  margin so that the ranges only widen; with a roll/pitch range, with bounds that hold for every rotation.
  Both are relaxations (each axis on its own): a refusal is always right; a scene that only fails because
  one heading cannot suit two axes at once passes here and is explained after solving instead.

Crowding (``footprint_budget.check_footprint_budget``, run early in the compile, before the pair tables are
built): the objects that stand directly On one support at overlapping heights and must not overlap each other
need at least the sum of their footprint areas inside the support's room; more is refused in one line.

Not proven here (left to the solver and the failure explanation of ``placement_diagnostics``): crowding below
the area bound (no_overlap and clearance between objects), NotNextTo keep-outs, RandomAroundSolution's grown
solver bounds.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from isaaclab_arena.relations.compiler.difference_constraints import C, H, L, O, DifferenceConstraints, RelationEdges
from isaaclab_arena.relations.kernels.tables import YawMode
from isaaclab_arena.relations.kinds import kind_of
from isaaclab_arena.relations.compiler.object_yaw import yaw_mode
from isaaclab_arena.relations.compiler.placement_restrictions import PlacementConfigError
from isaaclab_arena.relations.relations import ClutterOn, On, PositionLimitsCylindrical
from isaaclab_arena.utils.pose_math import matrix_from_quat

logger = logging.getLogger(__name__)

AXES = "xyz"
#: Slack granted to every relation constraint (metres): the checks' 1e-6 m plus float32 rounding.
EPS_M = 2.0e-6
#: Yaw samples of a turning object's AABB over a full turn.
YAW_SAMPLES = 1024
FACES = ("min", "origin", "centre", "max")


def _help(relation) -> str:
    """What would make an impossible chain through ``relation`` possible (its kind's ``feasibility_help``)."""
    kind = kind_of(relation)
    return (kind.feasibility_help if kind is not None else None) or "other relation settings"


@dataclass(frozen=True)
class Infeasibility:
    """One proven impossibility: the envs it holds in and the message naming relations and metres."""

    envs: tuple[int, ...]
    message: str
    missing_m: float


# ---------------------------------------------------------------------------------------------- rotations
@dataclass(frozen=True)
class _Turning:
    """How the solver may rotate an object: ``base`` (xyzw) then a world-Z yaw in [yaw_lo, yaw_hi] radians;
    ``any``: every rotation (a roll/pitch range)."""

    base: tuple
    yaw_lo: float = 0.0
    yaw_hi: float = 0.0
    any: bool = False


def _turning(asset, random_yaw_init: bool) -> _Turning:
    rot = asset.rotate_around_solution
    base = tuple(rot.quaternion_xyzw()) if rot is not None else (0.0, 0.0, 0.0, 1.0)
    rnd = asset.random_around_solution
    if rnd is not None and (rnd.roll_half_rad > 0.0 or rnd.pitch_half_rad > 0.0):
        return _Turning(base, any=True)
    if yaw_mode(asset, random_yaw_init) != YawMode.FIXED:
        return _Turning(base, -math.pi, math.pi)
    if rnd is not None and rnd.yaw_half_rad > 0.0:
        return _Turning(base, -rnd.yaw_half_rad, rnd.yaw_half_rad)
    return _Turning(base)


def _ranges(lo, hi, turning: _Turning, room=None, cache: dict | None = None):
    """``_yaw_ranges`` of one object, looked up in ``cache`` first (scenes repeat their sizes)."""
    key = (tuple(np.asarray(lo).tolist()), tuple(np.asarray(hi).tolist()), turning,
           None if room is None else tuple(room.tolist()))
    if cache is not None and key in cache:
        return cache[key]
    out = _yaw_ranges(lo, hi, turning, room)
    if cache is not None:
        cache[key] = out
    return out


def _yaw_ranges(lo, hi, turning: _Turning, room=None):
    """(3, 4, 2) ranges (min, max) per axis of O - L, H - O, H - L and C - O of the object's world AABB over
    the rotations ``turning`` allows (restricted to the yaws at which its XY extent fits ``room``), and the
    least amount (m) by which it misses ``room`` at every yaw (<= 0 when some yaw may fit)."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    out = np.zeros((3, 4, 2))
    if turning.any:
        c, e = 0.5 * (lo + hi), 0.5 * (hi - lo)
        cn, en, emin = float(np.linalg.norm(c)), float(np.linalg.norm(e)), float(e.min())
        out[:, 0] = out[:, 1] = (emin - cn, en + cn)
        out[:, 2] = (2.0 * emin, 2.0 * en)
        out[:, 3] = (-cn, cn)
        return out, -1.0
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    pts = corners @ matrix_from_quat(np.asarray(turning.base, np.float64)).T
    span = turning.yaw_hi - turning.yaw_lo
    if span <= 0.0:
        theta, err = np.zeros(1), 0.0
    else:
        full = span >= 2.0 * math.pi - 1e-9
        n = YAW_SAMPLES if full else max(2, int(YAW_SAMPLES * span / (2.0 * math.pi)) + 1)
        theta = (np.arange(n) * (2.0 * math.pi / n) if full else np.linspace(turning.yaw_lo, turning.yaw_hi, n))
        step = 2.0 * math.pi / n if full else span / (n - 1)
        err = float(np.hypot(pts[:, 0], pts[:, 1]).max()) * step / 2.0  # Lipschitz bound between samples
    cs, sn = np.cos(theta)[:, None], np.sin(theta)[:, None]
    xy = (pts[:, 0] * cs - pts[:, 1] * sn, pts[:, 0] * sn + pts[:, 1] * cs)
    flo = np.stack([xy[0].min(1), xy[1].min(1), np.full(len(theta), pts[:, 2].min())], 1)  # (T, 3)
    fhi = np.stack([xy[0].max(1), xy[1].max(1), np.full(len(theta), pts[:, 2].max())], 1)
    miss = -1.0
    if room is not None:
        over = np.maximum(fhi[:, 0] - flo[:, 0] - room[0], fhi[:, 1] - flo[:, 1] - room[1])
        fits = over <= 2.0 * err + 1e-9
        if not fits.any():
            return None, float(over.min() - 2.0 * err)
        flo, fhi = flo[fits], fhi[fits]
    err3 = np.array([err, err, 0.0])
    for part, v, k in ((0, -flo, 1.0), (1, fhi, 1.0), (2, fhi - flo, 2.0), (3, 0.5 * (flo + fhi), 1.0)):
        out[:, part, 0] = v.min(0) - k * err3
        out[:, part, 1] = v.max(0) + k * err3
    return out, miss


# ------------------------------------------------------------------------------------------- the checker
def _required(kind, placer_params) -> bool:
    """Whether a layout must meet the relation: its check is required (objectives always count)."""
    return kind.check is None or _check_required(kind.check, placer_params)


def _check_required(check: str, placer_params) -> bool:
    """Whether the check ``check`` runs and must pass."""
    enabled, required = placer_params.enabled_checks, placer_params.required_checks
    if enabled is not None and check not in enabled:
        return False
    return required is None or check in required


def _describe(cr) -> str:
    rel = cr.relation
    if rel.parent is not None:
        return cr.description
    args = ", ".join(f"{k}={v}" for k, v in rel.params().items() if k != "relation_loss_weight" and v is not None
                     and v != [None, None])
    return f"'{cr.subject}' {rel.yaml_kind}({args})"


def _bound_text(label: tuple, node: int, axis: int) -> str:
    if label[0] == "fixed":
        return f"'{label[1]}' {FACES[(node - 1) % 4]} {AXES[axis]}"
    return _describe(label[1])


class _EnvGroup:
    """The system of one group of envs that share their geometry."""

    def __init__(self, checker: "_FeasibilityChecker", envs: list[int]):
        self.ck, self.envs = checker, envs
        e = envs[0]
        p = checker.problem
        self.llo, self.lhi = checker.local_lo[e], checker.local_hi[e]
        self.flo, self.fhi = checker.fixed_lo[e], checker.fixed_hi[e]
        self.ranges: dict[int, np.ndarray] = {}
        self.n_mov = p.num_objects

    def width(self, k: int, axis: int) -> float | None:
        """World extent of object ``k`` along ``axis`` when it does not depend on the rotation drawn."""
        if k >= self.n_mov:
            return float(self.fhi[k - self.n_mov, axis] - self.flo[k - self.n_mov, axis])
        r = self.ranges.get(k)
        if r is None or r[axis, 2, 1] - r[axis, 2, 0] > 1e-9:
            return None
        return float(r[axis, 2, 0])

    def room(self, k: int):
        """The XY room object ``k``'s On / ClutterOn relations with rotation-independent supports leave."""
        room = None
        for cr in self.ck.binding.get(k, []):
            rel = cr.relation
            if not (isinstance(rel, ClutterOn) or (isinstance(rel, On) and not rel.overlap)):
                continue
            p = self.ck.index[cr.parent]
            w = [self.width(p, a) for a in (0, 1)]
            if None in w:
                continue
            scale = rel.spread if isinstance(rel, ClutterOn) else 1.0
            r = np.array([scale * w[0] - 2 * rel.edge_margin_m, scale * w[1] - 2 * rel.edge_margin_m])
            room = r if room is None else np.minimum(room, r)
        return room

    def solve_sizes(self) -> Infeasibility | None:
        """Rotation ranges of every movable: fixed ones first (their extents are supports' rooms)."""
        turns = self.ck.turning
        for k in sorted(range(self.n_mov), key=lambda k: turns[k].any or turns[k].yaw_hi > turns[k].yaw_lo):
            t = self.ck.turning[k]
            room = None if t.any or t.yaw_hi <= t.yaw_lo else self.room(k)
            r, miss = _ranges(self.llo[k], self.lhi[k], t, room, self.ck.range_cache)
            if r is None:
                return self.ck.no_yaw_fits(self, k, room, miss)
            self.ranges[k] = r
        return None

    def graph(self, axis: int) -> DifferenceConstraints:
        ck, g, N = self.ck, DifferenceConstraints(len(self.ck.names)), DifferenceConstraints.node
        for f in range(len(ck.names) - self.n_mov):
            k, lab = self.n_mov + f, ("fixed", ck.names[self.n_mov + f])
            lo, hi = float(self.flo[f, axis]), float(self.fhi[f, axis])
            for face, v in ((L, lo), (H, hi), (C, 0.5 * (lo + hi))):
                g.between(0, N(k, face), v, v, lab)
        for k, r in self.ranges.items():
            lab = ("size", ck.names[k])
            ra = r[axis]
            g.between(N(k, L), N(k, O), *ra[0], lab)
            g.between(N(k, O), N(k, H), *ra[1], lab)
            g.between(N(k, L), N(k, H), *ra[2], lab)
            g.between(N(k, O), N(k, C), *ra[3], lab)
            g.between(N(k, L), N(k, C), *(0.5 * ra[2]), lab)
            g.between(N(k, C), N(k, H), *(0.5 * ra[2]), lab)
        for c, rels in ck.binding.items():
            for cr in rels:
                self.relation_edges(g, axis, c, cr)
        return g

    def relation_edges(self, g: DifferenceConstraints, axis: int, c: int, cr) -> None:
        """The constraints relation ``cr`` of object ``c`` adds on ``axis``: its kind's ``feasibility`` function
        (``relations/kinds/<kind>.py``, the one home of each kind's facts)."""
        kind = kind_of(cr.relation)
        if kind is None or kind.feasibility is None:
            return
        p = self.ck.index.get(cr.parent, -1) if cr.parent is not None else -1
        kind.feasibility(cr.relation, RelationEdges(g, axis, c, p, ("relation", cr), EPS_M, self.width,
                                                    self.ck.placer_params.on_relation_z_tolerance_m))


class _FeasibilityChecker:
    def __init__(self, problem, assets, placer_params):
        self.problem, self.placer_params = problem, placer_params
        self.names = problem.all_names
        self.index = {n: k for k, n in enumerate(self.names)}
        by_name = {a.name: a for a in assets}
        self.assets = [by_name[n] for n in self.names]
        self.turning = [_turning(self.assets[k], placer_params.random_yaw_init) for k in range(problem.num_objects)]
        self.binding: dict[int, list] = {}
        self.range_cache: dict = {}
        for cr in problem.relations:
            if _required(cr.kind, placer_params):
                self.binding.setdefault(self.index[cr.subject], []).append(cr)
        as_np = lambda t: t.detach().cpu().double().numpy()  # noqa: E731
        self.local_lo, self.local_hi = as_np(problem.local_lo), as_np(problem.local_hi)
        self.fixed_lo, self.fixed_hi = as_np(problem.fixed_lo), as_np(problem.fixed_hi)

    def groups(self) -> list[list[int]]:
        """Envs grouped by identical geometry (a RigidObjectSet's member per env), first env first."""
        E = self.problem.num_envs
        key = np.concatenate([a.reshape(E, -1) for a in (self.local_lo, self.local_hi, self.fixed_lo,
                                                          self.fixed_hi)], 1)
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        return [np.nonzero(inverse == g)[0].tolist() for g in np.argsort(first)]

    def where(self, group: _EnvGroup, objects) -> str:
        """' in env(s) [..] (where 'set' is its member 'm')' when the group is not every env."""
        if len(group.envs) == self.problem.num_envs:
            return ""
        envs = group.envs[:8]
        text = f" in env(s) {envs}{' ...' if len(group.envs) > 8 else ''}"
        members = []
        for k in sorted(set(objects)):
            a = self.assets[k]
            if hasattr(a, "member_indices_per_env"):
                m = a.member_indices_per_env(self.problem.num_envs, self.problem.placement_seed)[group.envs[0]]
                members.append(f"'{a.name}' is its member '{a.objects[m].name}'")
        return text + (f" (where {', '.join(members)})" if members else "")

    def no_yaw_fits(self, group: _EnvGroup, k: int, room, miss: float) -> Infeasibility:
        rels = [cr for cr in self.binding.get(k, []) if isinstance(cr.relation, (On, ClutterOn))]
        head = _describe(rels[0]) if rels else f"'{self.names[k]}'"
        lo, hi = group.llo[k], group.lhi[k]
        supports = " and ".join(f"'{cr.parent}'" for cr in rels)
        msg = (f"asset {head}: its {hi[0] - lo[0]:.3f} x {hi[1] - lo[1]:.3f} m footprint fits the "
               f"{room[0]:.3f} x {room[1]:.3f} m room {supports} offer(s) inside the margins at no yaw it may take "
               f"(its yaw is drawn or faces a target){self.where(group, [k])}: at least {miss:.3f} m too large at "
               "every heading; use "
               + " or ".join(dict.fromkeys(["smaller objects"] + [_help(cr.relation) for cr in rels])))
        return Infeasibility(tuple(group.envs), msg, miss)

    def cycle_message(self, group: _EnvGroup, g: DifferenceConstraints, axis: int, cycle: list[int]) -> Infeasibility:
        edges = [g.edges[i] for i in cycle]
        missing = sum(e[3] for e in edges)
        rels, sizes, objects, bounds = [], {}, [], []
        rel_sum = 0.0
        for u, v, _, w, label in edges:
            if label[0] == "relation" and label[1] not in rels:
                rels.append(label[1])
            if u == 0 or v == 0:
                bounds.append((u, v, w, label))
            elif label[0] == "size":
                sizes[label[1]] = sizes.get(label[1], 0.0) + w
            else:
                rel_sum += w
            for n in (u, v):
                if n:
                    objects.append((n - 1) // 4)
        first = sorted(rels, key=lambda cr: isinstance(cr.relation, (On, ClutterOn)))
        head = f"asset {_describe(first[0])}" if first else f"asset '{self.names[objects[0]]}'"
        others = [_describe(cr) for cr in first[1:]]
        parts = ", ".join(f"'{n}' {w:.3f} m" for n, w in sizes.items() if abs(w) > 1e-9)
        parts = (parts + ", " if parts else "") + f"gaps, margins and offsets {rel_sum:.3f} m"
        msg = f"{head}: along {AXES[axis]}" + (f" it cannot hold together with {', '.join(others)}" if others else
                                               " it cannot hold") + f"{self.where(group, objects)}: "
        if len(bounds) == 2:
            (u0, v0, w0, lab0), (u1, v1, w1, lab1) = bounds if bounds[0][0] == 0 else bounds[::-1]
            need, low, high = missing - w0 - w1, w0, -w1
            msg += (f"{missing:.3f} m of room is missing: the chain needs {need:.3f} m ({parts}) between "
                    f"{_bound_text(lab0, v0, axis)} at {low:.3f} m and {_bound_text(lab1, u1, axis)} at {high:.3f} m, "
                    + (f"{high - low:.3f} m apart" if high >= low else f"{low - high:.3f} m the wrong way round"))
        else:
            msg += f"the relations contradict each other by {missing:.3f} m ({parts})"
        helps = [_help(cr.relation) for cr in rels] + (["smaller objects"] if sizes else [])
        msg += "; " + ("" if len(bounds) == 2 else "drop one of them, or ") + "use " + " or ".join(dict.fromkeys(helps))
        return Infeasibility(tuple(group.envs), msg, missing)

    def annulus(self, group: _EnvGroup, graphs: list[DifferenceConstraints]) -> Infeasibility | None:
        paths = {}
        for c, rels in self.binding.items():
            for cr in rels:
                rel = cr.relation
                if not isinstance(rel, PositionLimitsCylindrical):
                    continue
                box, why = [], []
                for axis in (0, 1):
                    g, node = graphs[axis], DifferenceConstraints.node(c, O)
                    if axis not in paths:
                        paths[axis] = (g.longest_from_origin(), g.longest_from_origin(reverse=True))
                    (lo, lpred), (up, upred) = paths[axis]
                    box.append((lo[node], -up[node]))
                    why += g.path_labels(lpred, node) + g.path_labels(upred, node, reverse=True)
                centre = np.array([rel.center_x, rel.center_y])
                near = np.array([min(max(centre[a], box[a][0]), box[a][1]) for a in (0, 1)])
                far = np.array([box[a][0] if abs(box[a][0] - centre[a]) > abs(box[a][1] - centre[a]) else box[a][1]
                                for a in (0, 1)])
                dmin, dmax = float(np.linalg.norm(near - centre)), float(np.linalg.norm(far - centre))
                if rel.radius_max is not None and dmin > rel.radius_max + EPS_M:
                    miss, text = dmin - rel.radius_max, (f"its nearest point is {dmin:.3f} m from the centre, "
                                                         f"beyond radius_max={rel.radius_max:g}")
                elif rel.radius_min is not None and dmax < rel.radius_min - EPS_M:
                    miss, text = rel.radius_min - dmax, (f"its farthest point is {dmax:.3f} m from the centre, "
                                                         f"inside radius_min={rel.radius_min:g}")
                else:
                    continue
                names = [_describe(lab[1]) for lab in dict.fromkeys(why) if lab[0] == "relation" and lab[1] is not cr]
                names += [f"'{lab[1]}' (fixed)" for lab in dict.fromkeys(why) if lab[0] == "fixed"]
                msg = (f"asset {_describe(cr)}: the annulus around ({rel.center_x:g}, {rel.center_y:g}) misses the "
                       f"area x in [{box[0][0]:.3f}, {box[0][1]:.3f}], y in [{box[1][0]:.3f}, {box[1][1]:.3f}] m "
                       f"that {', '.join(dict.fromkeys(names)) or 'the scene'} leave(s) for the origin"
                       f"{self.where(group, [c])}: {text}, {miss:.3f} m missing; use wider radius limits, another "
                       "centre or a larger support")
                return Infeasibility(tuple(group.envs), msg, miss)
        return None

    def run(self) -> list[Infeasibility]:
        found = []
        for envs in self.groups():
            group = _EnvGroup(self, envs)
            bad = group.solve_sizes()
            graphs = []
            for axis in range(3):
                if bad is not None:
                    break
                g = group.graph(axis)
                cycle = g.positive_cycle()
                if cycle is not None:
                    bad = self.cycle_message(group, g, axis, cycle)
                graphs.append(g)
            if bad is None:
                bad = self.annulus(group, graphs)
            if bad is not None:
                found.append(bad)
        return found


def find_infeasibilities(problem, assets, placer_params) -> list[Infeasibility]:
    """Every env group's first proven impossibility (empty: nothing could be proven impossible)."""
    return _FeasibilityChecker(problem, assets, placer_params).run()


def check_feasibility(problem, assets, placer_params) -> None:
    """Raises ``PlacementConfigError`` (naming relations and metres) when no env, or with
    ``allow_best_loss_fallbacks=False`` any env, can be placed; logs a warning when only some envs cannot
    (those get best-loss fallbacks)."""
    found = find_infeasibilities(problem, assets, placer_params)
    if not found:
        return
    bad = sorted({e for f in found for e in f.envs})
    if len(bad) == problem.num_envs or not placer_params.allow_best_loss_fallbacks:
        more = f" (and {len(found) - 1} other env group(s) fail too)" if len(found) > 1 else ""
        raise PlacementConfigError(found[0].message + more)
    logger.warning("placement cannot succeed in env(s) %s; they will use best-loss fallbacks: %s", bad[:16],
                   "; ".join(f.message for f in found))
