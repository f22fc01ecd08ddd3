"""The ``object_pools`` section of a spec: N objects of which k (or k in a range) join each layout.

```yaml
objects:
  - {id: apple, registry_name: apple}
  - ...
object_pools:
  - id: clutter
    members: [apple, can, box_a, box_b, ...]   # ids of entries under objects
    count: [3, 5]                              # k, or [k_min, k_max]: how many join each layout
    physical_properties: {static_friction: [0.4, 0.9]}   # optional: for every member without its own
relations:
  - {kind: 'on', subject: clutter, reference: table}      # a pool as subject: every member, on its own
```

A pool cannot be a relation's reference, and neither can its members (they may be parked). Refusals name the
file, line, entry and key like the rest of the loader (``SpecIssue``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from isaaclab_arena.env_spec.nodes import _Located
from isaaclab_arena.env_spec.parse_assets import check_mapping, key_lines_of
from isaaclab_arena.env_spec.spec_issue import SpecIssue
from isaaclab_arena.env_spec.yaml_lines import line_of, start_line
from isaaclab_arena.utils.checks import did_you_mean, short_repr
from isaaclab_arena.utils.plain_data import plain

OBJECT_POOL_KEYS = ("id", "members", "count", "physical_properties")


@dataclass
class ObjectPoolNode(_Located):
    """``object_pools`` entry: pool ``id`` of ``members`` (ids under ``objects``), ``count`` k or [k_min, k_max],
    optional ``physical_properties`` for every member that has none of its own."""

    id: str
    members: list[str]
    count: Any
    physical_properties: dict = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.label} (id '{self.id}')"

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"id": self.id, "members": list(self.members), "count": plain(self.count)}
        if self.physical_properties:
            out["physical_properties"] = plain(self.physical_properties)
        return out


def parse_object_pool(raw: Any, label: str, line: int | None) -> ObjectPoolNode:
    """An ``object_pools`` entry (shape only; ids and counts are checked against the objects by ``build_pools``)."""
    check_mapping(raw, label, OBJECT_POOL_KEYS, line)
    line = start_line(raw) or line
    pid = raw.get("id")
    if not isinstance(pid, str) or not pid:
        raise SpecIssue(f"'id' must be a non-empty name, got {short_repr(pid)}", where=label, key="id", line=line)
    where = f"{label} (id '{pid}')"
    members = raw.get("members")
    mline = line_of(raw, "members") or line
    if not isinstance(members, list) or not members:
        raise SpecIssue(f"'members' must be a non-empty list of object ids, got {short_repr(members)}", where=where,
                        key="members", line=mline)
    for i, m in enumerate(members):
        if not isinstance(m, str) or not m:
            raise SpecIssue(f"members[{i}] must be an object id, got {short_repr(m)}", where=where, key=f"members[{i}]",
                            line=line_of(members, i) or mline)
        if m in members[:i]:
            raise SpecIssue(f"members[{i}] '{m}' is listed twice; list each member once", where=where,
                            key=f"members[{i}]", line=line_of(members, i) or mline)
    if "count" not in raw:
        raise SpecIssue("'count' is missing: how many members join each layout, k or [k_min, k_max]", where=where,
                        key="count", line=line)
    props = raw.get("physical_properties") or {}
    lines = key_lines_of(raw)
    lines.update({f"members[{i}]": line_of(members, i) for i in range(len(members))})
    return ObjectPoolNode(pid, list(members), raw["count"], dict(props), line=line, key_lines=lines, label=label)


def build_pools(nodes: list[ObjectPoolNode], assets: dict) -> dict:
    """``{pool id: ObjectPool}`` over the built ``assets``; refuses unknown or non-object members, a member in two
    pools, a bad count (k > N, k_min > k_max, ...) and bad ``physical_properties``, naming key and line."""
    from isaaclab_arena.assets.asset import Object
    from isaaclab_arena.assets.object_pool import ObjectPool
    from isaaclab_arena.assets.physical_properties import (
        PhysicalPropertyRanges,
        physical_property_ranges_of,
        set_physical_property_ranges,
    )

    pools, owner = {}, {}
    for node in nodes:
        if node.id in assets or node.id in pools:
            raise SpecIssue(f"id '{node.id}' is already used by an asset or another pool; every id must be unique",
                            where=node.where, key="id", line=node.key_line("id"))
        members = []
        for i, m in enumerate(node.members):
            key = f"members[{i}]"
            asset = assets.get(m)
            if asset is None:
                objects = [k for k, a in assets.items() if isinstance(a, Object)]
                raise SpecIssue(f"unknown member '{m}'{did_you_mean(m, objects)}; members are ids of entries under "
                                f"objects: {', '.join(objects) or 'none'}", where=node.where, key=key,
                                line=node.key_line(key))
            if type(asset) is not Object:
                raise SpecIssue(f"member '{m}' is a {type(asset).__name__}; members must be entries under objects",
                                where=node.where, key=key, line=node.key_line(key))
            if m in owner:
                raise SpecIssue(f"member '{m}' is already in pool '{owner[m]}'; an object joins one pool at most",
                                where=node.where, key=key, line=node.key_line(key))
            owner[m] = node.id
            members.append(asset)
        try:
            pool = ObjectPool(node.id, members, node.count)
        except (ValueError, TypeError) as err:
            key = "count" if "count" in str(err) else None
            raise SpecIssue(str(err), where=node.where, key=key, line=node.key_line(key) if key else node.line) from None
        if node.physical_properties:
            try:
                ranges = PhysicalPropertyRanges.from_mapping(node.physical_properties, f"pool '{node.id}'")
            except ValueError as err:
                raise SpecIssue(str(err), where=node.where, key="physical_properties",
                                line=node.key_line("physical_properties")) from None
            for m in members:
                if physical_property_ranges_of(m) is None:
                    set_physical_property_ranges(m, ranges)
        pools[node.id] = pool
    return pools


def check_pool_relation(node, pools: dict, members: dict) -> None:
    """Refuses a relation whose reference is a pool or a pool member (it may be parked)."""
    ref = node.reference
    if ref is None:
        return
    if ref in pools:
        raise SpecIssue(f"reference '{ref}' is an object pool; a pool can be a subject (every member) but not a "
                        "reference", where=node.where, key="reference", line=node.key_line("reference"))
    if ref in members:
        raise SpecIssue(f"reference '{ref}' is a member of object pool '{members[ref]}' and may be parked; relations "
                        "may only refer to objects that always join", where=node.where, key="reference",
                        line=node.key_line("reference"))


__all__ = ["OBJECT_POOL_KEYS", "ObjectPoolNode", "build_pools", "check_pool_relation", "parse_object_pool"]
