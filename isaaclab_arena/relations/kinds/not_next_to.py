"""NotNextTo: a keep-out region past one side of the parent, within the parent's perpendicular footprint."""

from __future__ import annotations

from dataclasses import dataclass

import warp as wp

from isaaclab_arena.relations.kernels.freedom import can_move
from isaaclab_arena.relations.kernels.geometry import BIG, flagged, unit
from isaaclab_arena.relations.kernels.tables import CandidateState, SceneTables
from isaaclab_arena.relations.kinds.kind import (
    CauseCode,
    KindRole,
    PackedRelation,
    ParamColumns,
    ParamRow,
    RelationKind,
    RelationLossStrategy,
)
from isaaclab_arena.relations.relation_base import Relation, Side, coerce_enum, number


class NotNextTo(Relation):
    """Forbids the half-plane past the parent's ``side`` edge, within the parent's perpendicular footprint.

    Args:
        parent: The reference asset.
        relation_loss_weight: Weight of the relation's loss term.
        side: The blocked side (``Side`` or its string).
        tolerance_m: The check passes when the subject has cleared the keep-out zone to within this, metres.
    """

    yaml_kind = "not_next_to"
    is_spatial = True

    def __init__(self, parent, relation_loss_weight: float = 1.0, side: Side | str = Side.POSITIVE_X,
                 tolerance_m: float = 0.01):
        super().__init__(parent, relation_loss_weight)
        self.side = coerce_enum(Side, side, "NotNextTo", "side")
        self.tolerance_m = number(tolerance_m, "NotNextTo", "tolerance_m", minimum=0.0)
        #: Whether the user named ``side``: True / False when the spec says (YAML), None when unknown (Python).
        self.side_given: bool | None = None

    def params(self):
        return {"relation_loss_weight": self.relation_loss_weight, "side": self.side.value,
                "tolerance_m": self.tolerance_m}

    def describe(self) -> str:
        return f"not_next_to({self.parent.name}, {self.side.value})"

    def side_notice(self, subject_name: str) -> str:
        """One line saying which side of the parent is blocked (printed when the scene is compiled), and whether
        that side is the default: ``side`` defaults to ``positive_x``, which a user may not know they chose."""
        axis, across = ("x", "y") if self.side.axis_index == 0 else ("y", "x")
        where = (f"'{subject_name}' is kept out of the {self.side.value} side of '{self.parent.name}' (past its "
                 f"{'+' if self.side.sign > 0 else '-'}{axis} edge, within its {across} extent)")
        others = ", ".join(s.value for s in Side if s is not self.side)
        if self.side_given is False:
            return (f"[placement] not_next_to: {where}; positive_x is the default (no side was given); "
                    f"side: {others} blocks another side")
        if self.side_given is None and self.side is Side.POSITIVE_X:
            return f"[placement] not_next_to: {where}; positive_x is also the default when no side is given"
        return f"[placement] not_next_to: {where}"


#: At most this many side notices are printed per compile (the rest are counted in one line).
MAX_SIDE_NOTICES = 6


def keep_out_notices(assets) -> list[str]:
    """The side notice of every NotNextTo among ``assets``' relations (at most ``MAX_SIDE_NOTICES`` lines and one
    that counts the rest)."""
    lines = [rel.side_notice(a.name) for a in assets for rel in a.get_relations() if isinstance(rel, NotNextTo)]
    if len(lines) > MAX_SIDE_NOTICES:
        rest = len(lines) - MAX_SIDE_NOTICES
        lines = lines[:MAX_SIDE_NOTICES] + [f"[placement] not_next_to: {rest} more keep-out side(s) not listed"]
    return lines


@dataclass(frozen=True)
class NotNextToLossStrategy(RelationLossStrategy):
    """``margin_m``: how far past the keep-out region the solver pushes a subject (metres)."""

    slope: float = 10.0
    margin_m: float = 0.1


class NotNextToCause(CauseCode):
    INSIDE_KEEP_OUT = 1, "inside the keep-out region"


COLUMNS = ParamColumns("sign", "tolerance_m", "margin_m")
SIGN, TOLERANCE, MARGIN = COLUMNS.constants()


def pack(rel: NotNextTo, ctx) -> PackedRelation:
    """Axis column: the side's axis; the margin comes from the NotNextTo loss strategy."""
    strategy = ctx.solver_params.strategy_for(NotNextTo)
    return PackedRelation(axis=rel.side.axis_index, values={
        "sign": rel.side.sign, "tolerance_m": rel.tolerance_m, "margin_m": float(getattr(strategy, "margin_m", 0.0))})


@wp.func
def keep_out_depth(clo: wp.vec3, chi: wp.vec3, plo: wp.vec3, phi: wp.vec3, axis: int, sign: float, margin: float):
    """Depth (m) of the subject inside the keep-out region: past the parent's side face and within the
    parent's perpendicular footprint grown by ``margin``. Returns (depth, d depth / d subject position);
    depth <= 0 means cleared."""
    if sign > 0.0:
        past = chi[axis] - phi[axis]
    else:
        past = plo[axis] - clo[axis]
    c = 1 - axis
    lat1 = chi[c] - (plo[c] - margin)
    lat2 = (phi[c] + margin) - clo[c]
    grad = wp.vec3(0.0)
    depth = past
    if past <= wp.min(lat1, lat2):
        grad[axis] = sign
    elif lat1 <= lat2:
        depth = lat1
        grad[c] = 1.0
    else:
        depth = lat2
        grad[c] = -1.0
    return depth, grad


@wp.func
def penalty(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
            phi: wp.vec3):
    """(keep-out depth with the strategy's margin, the check's tolerance, gradient)."""
    depth, grad = keep_out_depth(clo, chi, plo, phi, axis, f[SIGN], f[MARGIN])
    return depth, f[TOLERANCE], grad


@wp.func
def push(T: SceneTables, S: CandidateState, b: int, ci: int, pi: int, p: wp.vec3, clo: wp.vec3, chi: wp.vec3,
         plo: wp.vec3, phi: wp.vec3, axis: int, f: ParamRow) -> wp.vec3:
    """The shallowest way out of the keep-out region (back past the side face, or out of either lateral
    edge of the grown footprint) that the subject or the parent can still move along."""
    sign = f[SIGN]
    margin = f[MARGIN]
    c = 1 - axis
    if sign > 0.0:
        past = chi[axis] - phi[axis]
    else:
        past = plo[axis] - clo[axis]
    lat1 = chi[c] - (plo[c] - margin)
    lat2 = (phi[c] + margin) - clo[c]
    best = float(BIG)
    grad = wp.vec3(0.0)
    if past < best and (can_move(T, S, b, ci, axis, -sign) or can_move(T, S, b, pi, axis, sign)):
        best = past
        grad = unit(axis) * sign
    if lat1 < best and (can_move(T, S, b, ci, c, -1.0) or can_move(T, S, b, pi, c, 1.0)):
        best = lat1
        grad = unit(c)
    if lat2 < best and (can_move(T, S, b, ci, c, 1.0) or can_move(T, S, b, pi, c, -1.0)):
        best = lat2
        grad = -unit(c)
    if best >= BIG:
        d, g0 = keep_out_depth(clo, chi, plo, phi, axis, sign, margin)
        grad = g0
    return grad


@wp.func
def violation(axis: int, flag: int, f: ParamRow, p: wp.vec3, clo: wp.vec3, chi: wp.vec3, plo: wp.vec3,
              phi: wp.vec3, slack: float):
    """Keep-out cleared within the tolerance."""
    depth, grad = keep_out_depth(clo, chi, plo, phi, axis, f[SIGN], f[MARGIN])
    return flagged(depth - f[TOLERANCE], slack, 1)


KIND = RelationKind(name="not_next_to", relation=NotNextTo, role=KindRole.PENALTY, columns=COLUMNS, pack=pack,
                    violation=violation, penalty=penalty, push=push, causes=NotNextToCause, check="not_next_to",
                    strategy=NotNextToLossStrategy,
                    feasibility=None, feasibility_help=None)
