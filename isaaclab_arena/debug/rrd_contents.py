"""Reading a placement debug recording back with rerun's own reader (``rerun.chunk.RrdReader``).

    scripts/arena_python.sh -m isaaclab_arena.debug.rrd_contents placement_debug.rrd
    scripts/arena_python.sh -m isaaclab_arena.debug.rrd_contents placement_debug.rrd --view

prints each entity with its components and row count, then each batch's rejection summary (a way to read a
recording on a machine without a display); ``--view`` opens it in the Rerun viewer shipped with rerun-sdk
(needs a display; ``--screenshot PNG`` instead renders one picture of the view into a file and exits).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from dataclasses import dataclass, field

from isaaclab_arena.debug.rerun_import import import_rerun, viewer_executable


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


def open_viewer(path: str, screenshot: str | None = None) -> int:
    """Runs the Rerun viewer on ``path`` (or renders ``screenshot``, 1600 x 1000 points, and exits). Without a
    display (``DISPLAY`` / ``WAYLAND_DISPLAY``) it says so in one line, with the recording's path, and returns 2."""
    if not os.path.isfile(path):
        print(f"error: {path}: no such recording (paths are taken from the working directory {os.getcwd()})",
              file=sys.stderr)
        return 2
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        print(f"error: the Rerun viewer needs a display (DISPLAY / WAYLAND_DISPLAY is not set); the recording is "
              f"{os.path.abspath(path)}: copy it to a machine with a display and run `rerun <file>` there, or list "
              "it here without --view", file=sys.stderr)
        return 2
    import_rerun()
    exe = viewer_executable()
    if exe is None:
        print("the Rerun viewer binary (rerun_cli) is missing from the rerun-sdk install", file=sys.stderr)
        return 2
    extra = ["--window-size", "1600x1000", "--screenshot-to", screenshot] if screenshot else []
    return subprocess.run([exe, path, *extra]).returncode


def main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(allow_abbrev=False, description="What a placement debug recording (.rrd) holds.")
    p.add_argument("rrd")
    p.add_argument("--view", action="store_true", help="open the recording in the Rerun viewer (needs a display)")
    p.add_argument("--screenshot", default=None, help="render the view into this PNG and exit (needs a display)")
    args = p.parse_args(argv)
    if args.view or args.screenshot:
        return open_viewer(args.rrd, args.screenshot)
    entities = read_rrd(args.rrd)
    for path in sorted(entities):
        e = entities[path]
        print(f"{path}: {e.num_rows} row(s); " + ", ".join(sorted(e.components)))
    for text in entities.get("/summary", EntityRows("/summary")).components.get("TextDocument:text", []):
        print("\n" + str(text[0]))
    return 0


if __name__ == "__main__":
    from isaaclab_arena.debug.rerun_import import DebugViewerUnavailableError

    try:
        raise SystemExit(main(sys.argv[1:]))
    except DebugViewerUnavailableError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
