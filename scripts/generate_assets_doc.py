"""Writes docs/ASSETS.md and one thumbnail per asset (docs/images/assets/<name>.png) from the asset registry.

    scripts/arena_python.sh scripts/generate_assets_doc.py                  # into the checkout's docs/
    scripts/arena_python.sh scripts/generate_assets_doc.py --out_dir DIR    # DIR/ASSETS.md, DIR/images/assets/

Run it after adding or changing a registered asset: tests/test_asset_listing.py fails while docs/ASSETS.md differs
from what this script writes. The records come from ``isaaclab_arena.adapters.asset_catalog`` (what
``--list_assets`` prints). A thumbnail (160 x 160 px) draws the asset's collision mesh seen from above (X right,
Y up; upward faces, lower ones lighter) and from the side (X right, Z up, seen from -Y; its silhouette) on one
scale, each in its dashed bounding box; an asset without a collision mesh gets its box alone, and the page says
so. Thumbnails of assets no longer registered are removed. An asset the catalog cannot describe stops the
script: ``error: ...`` on stderr, exit status 2.
"""

from __future__ import annotations

import glob
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THUMBNAIL_PX = 160
IMAGE_DIR = os.path.join("images", "assets")  # relative to the folder of ASSETS.md
COLORS = {"Object": "#4c72b0", "Background": "#8c6d4f"}


def _arrangement(size) -> tuple[str, float, float]:
    """``("stacked" | "side_by_side", width, height)`` of the two views (metres), the one closer to square."""
    dx, dy, dz = (max(float(v), 1e-6) for v in size)
    gap = 0.15 * max(dx, dy, dz)
    stacked = (dx, dy + dz + gap)
    beside = (2 * dx + gap, max(dy, dz))
    squareness = lambda wh: max(wh[0] / wh[1], wh[1] / wh[0])  # noqa: E731
    if squareness(stacked) <= squareness(beside):
        return "stacked", *stacked
    return "side_by_side", *beside


def draw_from_above(ax, vertices, faces, color, height: float) -> None:
    """The upward-facing triangles of a mesh seen from above (vertices already in the picture's plane, third
    column the height above the bounding box's floor, ``height`` its top), lowest first, shaded by height: lower
    is lighter (an open bin's floor, a sink), the top in ``color``."""
    import numpy as np
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import to_rgb

    tri = np.asarray(vertices, np.float64)[np.asarray(faces)]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    tri = tri[normal[:, 2] > 1e-12]
    if not len(tri):
        return
    z = tri[:, :, 2].mean(1)
    order = np.argsort(z, kind="stable")
    t = np.clip(z[order] / max(float(height), 1e-9), 0.0, 1.0)
    weight = (0.35 + 0.65 * t)[:, None]
    shades = weight * np.asarray(to_rgb(color)) + (1.0 - weight) * np.ones(3)
    ax.add_collection(PolyCollection(tri[order][:, :, :2], facecolors=shades, edgecolors=shades, linewidths=0.3,
                                     antialiased=False, zorder=2))


def write_thumbnail(asset, path: str) -> bool:
    """Draws ``asset`` (an ``Object``) into ``path`` (PNG, 160 x 160 px); False when it had no collision mesh and
    only its bounding box is drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Rectangle

    from isaaclab_arena.assets.asset import Background
    from isaaclab_arena.assets.geometry_reader import collision_mesh_of_spawn_cfg
    from isaaclab_arena.environments.mesh_pictures import draw_silhouette

    box = asset.get_bounding_box()
    lo, hi = np.asarray(box.min_point, np.float64), np.asarray(box.max_point, np.float64)
    size = hi - lo
    try:
        vertices, faces = collision_mesh_of_spawn_cfg(asset.spawn_cfg, f"asset '{asset.name}'")
    except ValueError:
        vertices, faces = None, None
    layout, width, height = _arrangement(size)
    gap = 0.15 * float(max(size.max(), 1e-6))
    # view origins (lower-left corner of each view's box) in the picture's plane, metres
    if layout == "stacked":
        top_at, side_at = (0.0, size[2] + gap), (0.0, 0.0)
    else:
        top_at, side_at = (0.0, 0.0), (size[0] + gap, 0.0)
    color = COLORS["Background" if isinstance(asset, Background) else "Object"]
    fig = plt.figure(figsize=(THUMBNAIL_PX / 100, THUMBNAIL_PX / 100), dpi=100)
    ax = fig.add_axes((0, 0, 1, 1))
    views = ((top_at, (0, 1, 2), (size[0], size[1])), (side_at, (0, 2, 1), (size[0], size[2])))
    for (ox, oy), axes, (w, h) in views:
        if vertices is not None:
            v = np.asarray(vertices, np.float64)[:, axes] - lo[list(axes)]
            v[:, 0] += ox
            v[:, 1] += oy
            if axes == (0, 1, 2):
                draw_from_above(ax, v, faces, color, size[2])
            else:
                draw_silhouette(ax, v, faces, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), color, alpha=0.85)
        ax.add_patch(Rectangle((ox, oy), w, h, fill=False, ec="#333333", lw=0.6, ls=(0, (3, 2)), zorder=3))
    pad = 0.06 * max(width, height)
    ax.set_xlim(-pad, width + pad)
    ax.set_ylim(-pad, height + pad)
    ax.set_aspect("equal")
    ax.set_axis_off()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100, metadata={"Software": None}, pil_kwargs={"optimize": True})
    plt.close(fig)
    return vertices is not None


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _param_cell(record, shared: bool) -> str:
    params = record.own_params() if shared else record.params
    if not params:
        return "–"
    return ", ".join(f"`{p.name}` (required)" if p.required else f"`{p.label()}`" for p in params)


def markdown(records, pictures: dict[str, str | None]) -> str:
    """The text of ASSETS.md; ``pictures``: registry name -> alt-text note ('' for a mesh picture, None: none)."""
    from isaaclab_arena.adapters.asset_catalog import COMMON_PARAMS

    shared = all(all(c in {p.name for p in r.params} for c in COMMON_PARAMS) for r in records)
    lines = [
        "# Assets",
        "",
        "<!-- Generated by scripts/generate_assets_doc.py from the asset registry; do not edit by hand. -->",
        "",
        "Every asset a scene can name by its registry name (YAML `registry_name` of an object or the background; "
        "Python `build_registered_asset(registry_name, instance_name, params)` from "
        "`isaaclab_arena/adapters/asset_registry.py`). The runners list them too, without a scene:",
        "",
        "```bash",
        "scripts/arena_python.sh isaaclab_arena/scripts/environment_runner.py --list_assets",
        "```",
        "",
        "- **size**: extents x × y × z in metres of the asset's axis-aligned bounding box in its own root frame, the "
        "box the placer uses (from the spawner's shape, or read from the USD file with pxr); *set by parameters*: "
        "the asset needs the parameters marked required.",
        "- **kind**: `Object` (placed by relations; a `rigid` one is moved by physics) or `Background` (a static "
        "`base` collider, at the env origin unless `initial_pose` says otherwise).",
        "- **collision**: the asset's own `collision_mode`; *default* follows the solver's (`bbox` unless "
        "`placer_params.solver_params.collision_mode` says `mesh`), see [COLLISION.md](COLLISION.md).",
        "- **parameters** (YAML `params:`): `name=value` has that default, a bare name is optional"
        + ("; every asset also takes `initial_pose` (`{position_xyz: [x, y, z], rotation_xyzw: [x, y, z, w]}`, "
           "env-local metres) and `collision_mode` (`bbox` | `mesh`)." if shared else "."),
        "- **picture**: the collision mesh seen from above (X right, Y up; lower surfaces lighter) and from the side "
        "(X right, Z up, seen from -Y), stacked or side by side, on one scale; dashed: the bounding box.",
        "",
        "| picture | name | kind | size x × y × z (m) | collision | parameters | description |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        note = pictures.get(r.registry_name)
        if note is None:
            picture = "–"
        else:
            alt = r.registry_name + (f" ({note})" if note else "")
            picture = f"![{alt}]({IMAGE_DIR}/{r.registry_name}.png)"
        size = r.size_label.replace(" x ", " × ") if r.bounds is not None else f"*{r.size_label}*"
        collision = f"`{r.collision_mode}`" if r.collision_mode else "*default*"
        lines.append(f"| {picture} | `{r.registry_name}` | {r.kind_label} | {size} | {collision} | "
                     f"{_param_cell(r, shared)} | {_cell(r.summary) or '(no docstring)'} |")
    lines += [
        "",
        f"{len(records)} registered assets. Regenerate this page and its pictures after adding or changing an asset "
        "(`tests/test_asset_listing.py` fails while the page is out of date):",
        "",
        "```text",
        "scripts/arena_python.sh scripts/generate_assets_doc.py",
        "```",
        "",
    ]
    return "\n".join(lines)


def write_assets_doc(out_dir: str) -> tuple[str, list[str], list[str]]:
    """Writes ``out_dir``/ASSETS.md and its thumbnails; returns (page path, pictures written, pictures removed).

    Raises ``AssetCatalogError`` when an asset cannot be described."""
    from isaaclab_arena.adapters.asset_catalog import build_catalog
    from isaaclab_arena.adapters.asset_registry import get_registered_asset

    records = build_catalog(strict=True)
    image_dir = os.path.join(out_dir, IMAGE_DIR)
    pictures: dict[str, str | None] = {}
    written = []
    for r in records:
        if r.bounds is None:
            pictures[r.registry_name] = None
            continue
        path = os.path.join(image_dir, f"{r.registry_name}.png")
        with_mesh = write_thumbnail(get_registered_asset(r.registry_name)(r.registry_name), path)
        pictures[r.registry_name] = "" if with_mesh else "bounding box only: no collision mesh"
        written.append(path)
    removed = sorted(set(glob.glob(os.path.join(image_dir, "*.png"))) - set(written))
    for path in removed:
        os.remove(path)
    page = os.path.join(out_dir, "ASSETS.md")
    with open(page, "w") as f:
        f.write(markdown(records, pictures))
    return page, written, removed


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, REPO)
    from isaaclab_arena.adapters.asset_catalog import AssetCatalogError
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    p = ArenaArgumentParser(prog="generate_assets_doc.py", description=__doc__.splitlines()[0])
    p.add_argument("--out_dir", default=os.path.join(REPO, "docs"),
                   help="folder of ASSETS.md; thumbnails go to <out_dir>/images/assets (default: the checkout's docs/)")
    args = p.parse_args(argv)
    try:
        page, written, removed = write_assets_doc(args.out_dir)
    except AssetCatalogError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {page} and {len(written)} thumbnails under {os.path.join(args.out_dir, IMAGE_DIR)}")
    for path in removed:
        print(f"removed {path} (no such asset is registered)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
