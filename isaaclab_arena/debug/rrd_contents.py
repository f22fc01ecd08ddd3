"""Reading a placement debug recording back with rerun's own reader (``rerun.chunk.RrdReader``).

    scripts/arena_python.sh -m isaaclab_arena.debug.rrd_contents placement_debug.rrd

prints each entity with its components and row count, then each batch's rejection summary: a way to read a
recording on a machine without a display.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field

from isaaclab_arena.debug.rerun_import import import_rerun


@dataclass
class EntityRows:
    """Everything one entity holds in a recording: component -> one value per row (in logging order), and
    the rows' times per timeline."""

    path: str
    components: dict[str, list] = field(default_factory=dict)
    times: dict[str, list[int]] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        return max((len(v) for v in self.components.values()), default=0)


def read_rrd(path: str) -> dict[str, EntityRows]:
    """Entity path (``/placement/batch_000/objects/mug``, ...) -> its rows, from the ``.rrd`` at ``path``."""
    import_rerun()
    from rerun.chunk import RrdReader

    out: dict[str, EntityRows] = {}
    with warnings.catch_warnings():  # a recording still open (or not closed) has no footer; stream() reads it
        warnings.filterwarnings("ignore", message=".*no footer.*")
        reader = RrdReader(path)
    for chunk in reader.stream():
        rows = out.setdefault(chunk.entity_path, EntityRows(chunk.entity_path))
        batch = chunk.to_record_batch()
        timelines = set(chunk.timeline_names)
        for name in batch.schema.names:
            if name == "rerun.controls.RowId" or name == "log_time" or name == "log_tick":
                continue
            column = batch.column(name)
            if name in timelines:
                rows.times.setdefault(name, []).extend(column.cast("int64").to_pylist())
            else:
                rows.components.setdefault(name, []).extend(column.to_pylist())
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: rrd_contents.py <recording.rrd>", file=sys.stderr)
        return 2
    entities = read_rrd(argv[0])
    for path in sorted(entities):
        e = entities[path]
        print(f"{path}: {e.num_rows} row(s); " + ", ".join(sorted(e.components)))
    for path in sorted(p for p in entities if p.startswith("/summary/")):
        print(f"\n{path}:\n" + "\n".join(str(t[0]) for t in entities[path].components.get("TextDocument:text", [])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
