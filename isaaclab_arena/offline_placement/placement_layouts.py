"""Recorded placement layouts: N complete layouts of one fixed object set, read from and written to JSONL.

File format (one episode per nonblank line, UTF-8 JSON)::

    {"source": "settled",
     "variations": {"scene.relation_placement": {"poses": {
         "mug":  {"position_xyz": [0.12, -0.05, 0.81], "rotation_xyzw": [0.0, 0.0, 0.38, 0.92]},
         "bowl": {"position_xyz": [...], "rotation_xyzw": [...]}}}},
     "validation": {"pre_physics": {...}, "post_physics": {...}, "sampling": {...}}}

- Pose keys are runtime scene keys (``asset.get_scene_root_keys()``): instance names for ordinary objects,
  ``"robot"`` for a single-root embodiment, every owned root of a compound asset.
- ``position_xyz`` is the env-local root position in metres (env origin not included); ``rotation_xyzw``
  the root rotation as an (x, y, z, w) unit quaternion (norm within 1e-4 of 1). Values are kept as read.
  On read, positions must lie within ``REPLAY_POSITION_BOUND_M`` (|x|, |y| <= 100 m, -10 m <= z <= 100 m;
  ``layout_values.py``) unless ``from_episode_jsonl(path, position_bound_m=None)`` (any finite value) or another
  bound is given; a value outside is refused with ``path:line``, the object and the number as written.
- Every nonblank line holds the placement block with the same object set as the first line (the key
  order of the first line is the object order). ``source`` (a label such as ``"solver"`` or ``"settled"``)
  and ``validation`` are optional on read; any other episode field is ignored.
- ``variations["scene.physical_properties"]`` (optional): ``{asset name: {field: value}}`` of the physical
  properties drawn for that layout's env (``static_friction``, ``dynamic_friction``, ``restitution``,
  ``mass_kg`` or ``mass_scale``; ``docs/RANDOMISATION.md``); a replay applies them to the env that takes the layout.
- ``validation`` (see ``validation_block``): ``pre_physics`` {"passed", "checks": {check: bool},
  "required_checks"}, ``post_physics`` {"passed": true/false, or null plus "reason", "checks": {check:
  {"passed", "reason", "settings"}}}, ``sampling`` {"num_steps", "decimation", "physics_dt_s",
  "settle_time_s", "seed", "batch", "env_id", ...}.

A key repeated inside one JSON object is refused (``path:line`` and the key), not resolved to its last value.

Writing is atomic: a temporary file in the target directory is written, flushed, fsynced and renamed
onto the path, so a crash or a full disk leaves either the old file or the complete new one. Files get
the user's umask (as ``open(path, "w")`` would), not ``mkstemp``'s 0600.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import torch

from isaaclab_arena.offline_placement.layout_values import REPLAY_MIN_Z_M, REPLAY_POSITION_BOUND_M  # noqa: F401 (API)
from isaaclab_arena.offline_placement.layout_values import (  # noqa: F401 (validation_block: public API here)
    PROPERTIES_VARIATION_KEY,
    PROPERTY_FIELDS,
    WrittenFloat,
    check_float32,
    check_position,
    extra_variations,
    plain_floats,
    property_record,
    validation_block,
)
from isaaclab_arena.utils.atomic_files import commit, fsync_dir, temp_beside

#: Episode variation that holds the placement block.
PLACEMENT_VARIATION_KEY = "scene.relation_placement"
#: Accepted deviation of a quaternion's norm from 1.
UNIT_QUATERNION_TOLERANCE = 1e-4


class PlacementLayoutsError(ValueError):
    """A layout file or layout tensors cannot be used; the message names the file line or the object."""


def _where(path: str | None, line: int | None) -> str:
    if path is None:
        return "PlacementLayouts"
    return f"{path}:{line}" if line is not None else f"{path}"


@dataclass
class PlacementLayouts:
    """N layouts of a fixed set of scene roots, env-local.

    Attributes:
        object_names: Runtime scene keys, in the order of the pose tensors' second axis.
        positions: (N, K, 3) root positions in metres, env-local world frame.
        rotations: (N, K, 4) root rotations, xyzw unit quaternions, env-local world frame.
        sources: One label per layout (``"solver"``, ``"settled"``, ...), None when the line had none.
        validation: One ``validation`` block per layout (``pre_physics`` / ``post_physics`` / ``sampling``);
            an empty dict when there is none.
        origin: Where the layouts came from (file path), for error messages.
        line_numbers: The 1-based file line of each layout (None for layouts built in memory).
        physical_properties: One ``{asset name: {field: value}}`` per layout, the physical properties drawn for
            the env it was recorded in (an empty dict when none were drawn).
    """

    object_names: tuple[str, ...]
    positions: torch.Tensor
    rotations: torch.Tensor
    sources: list[str | None] = field(default_factory=list)
    validation: list[dict[str, Any]] = field(default_factory=list)
    origin: str | None = None
    line_numbers: list[int] | None = None
    physical_properties: list[dict[str, dict[str, float]]] = field(default_factory=list)

    def __post_init__(self):
        names = tuple(self.object_names)
        if not names:
            raise PlacementLayoutsError(f"{_where(self.origin, None)}: a layout needs at least one object")
        for name in names:
            if not isinstance(name, str) or not name:
                raise PlacementLayoutsError(f"{_where(self.origin, None)}: object names must be non-empty strings "
                                            f"(runtime scene keys), got {name!r}")
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise PlacementLayoutsError(f"{_where(self.origin, None)}: duplicate object names {dup}")
        self.object_names = names
        pos = torch.as_tensor(self.positions)
        rot = torch.as_tensor(self.rotations)
        if not pos.is_floating_point():
            pos = pos.to(torch.float32)
        if not rot.is_floating_point():
            rot = rot.to(torch.float32)
        k = len(names)
        if pos.dim() != 3 or pos.shape[1:] != (k, 3):
            raise PlacementLayoutsError(f"{_where(self.origin, None)}: positions must have shape (N, {k}, 3) for "
                                        f"objects {list(names)}, got {tuple(pos.shape)}")
        if rot.dim() != 3 or rot.shape[1:] != (k, 4):
            raise PlacementLayoutsError(f"{_where(self.origin, None)}: rotations must have shape (N, {k}, 4) (xyzw) "
                                        f"for objects {list(names)}, got {tuple(rot.shape)}")
        if pos.shape[0] != rot.shape[0]:
            raise PlacementLayoutsError(f"{_where(self.origin, None)}: {pos.shape[0]} position layouts but "
                                        f"{rot.shape[0]} rotation layouts")
        if pos.shape[0] == 0:
            raise PlacementLayoutsError(f"{_where(self.origin, None)}: no layouts (N = 0)")
        if rot.device != pos.device:
            rot = rot.to(pos.device)
        self.positions, self.rotations = pos, rot
        n = pos.shape[0]
        if not self.sources:
            self.sources = [None] * n
        if not self.validation:
            self.validation = [{} for _ in range(n)]
        self.sources = list(self.sources)
        self.validation = [dict(v) if v else {} for v in self.validation]
        if len(self.sources) != n or len(self.validation) != n:
            raise PlacementLayoutsError(f"{_where(self.origin, None)}: {n} layouts but {len(self.sources)} sources and "
                                        f"{len(self.validation)} validation blocks")
        self.physical_properties = ([property_record(r, _where(self.origin, None), PlacementLayoutsError) for r in self.physical_properties]
                                    if self.physical_properties else [{} for _ in range(n)])
        if len(self.physical_properties) != n:
            raise PlacementLayoutsError(f"{_where(self.origin, None)}: {n} layouts but "
                                        f"{len(self.physical_properties)} physical-property records")
        if self.line_numbers is not None and len(self.line_numbers) != n:
            raise PlacementLayoutsError(f"{_where(self.origin, None)}: {n} layouts but {len(self.line_numbers)} line numbers")
        self.check_values()

    # -- validation --------------------------------------------------------------------------------
    def check_values(self) -> None:
        """Raises ``PlacementLayoutsError`` for the first non-finite pose or non-unit quaternion (batched)."""
        bad_pos = ~torch.isfinite(self.positions).all(dim=-1)  # (N, K)
        bad_rot = ~torch.isfinite(self.rotations).all(dim=-1)
        norm = torch.linalg.vector_norm(self.rotations.to(torch.float64), dim=-1)
        bad_norm = ~bad_rot & ((norm - 1.0).abs() > UNIT_QUATERNION_TOLERANCE)
        for mask, what in ((bad_pos, "position_xyz is not finite"), (bad_rot, "rotation_xyzw is not finite"),
                           (bad_norm, "rotation_xyzw is not a unit quaternion")):
            if bool(mask.any()):
                i, j = (int(v) for v in torch.nonzero(mask)[0])
                line = self.line_numbers[i] if self.line_numbers is not None else None
                where = _where(self.origin, line) if self.origin else f"layout {i}"
                values = (self.positions if "position" in what else self.rotations)[i, j].tolist()
                extra = f" (norm {float(norm[i, j]):.6f}, accepted 1 +/- {UNIT_QUATERNION_TOLERANCE:g})" if mask is bad_norm else ""
                raise PlacementLayoutsError(f"{where}: object '{self.object_names[j]}': {what}: {values}{extra}")

    # -- access ------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.positions.shape[0])

    @property
    def num_layouts(self) -> int:
        return len(self)

    @property
    def device(self) -> torch.device:
        return self.positions.device

    def index_of(self, name: str) -> int:
        try:
            return self.object_names.index(name)
        except ValueError:
            raise KeyError(f"{_where(self.origin, None)}: no object '{name}'; recorded objects: "
                           f"{list(self.object_names)}") from None

    def position(self, name: str) -> torch.Tensor:
        """(N, 3) env-local positions of one object, metres."""
        return self.positions[:, self.index_of(name)]

    def rotation(self, name: str) -> torch.Tensor:
        """(N, 4) xyzw rotations of one object."""
        return self.rotations[:, self.index_of(name)]

    def root_poses(self, layout_ids: torch.Tensor | Sequence[int] | None = None) -> torch.Tensor:
        """(B, K, 7) env-local root poses (xyz metres + xyzw) of the selected layouts (all when None)."""
        poses = torch.cat([self.positions, self.rotations], dim=-1)
        if layout_ids is None:
            return poses
        ids = torch.as_tensor(layout_ids, dtype=torch.long, device=poses.device)
        return poses.index_select(0, ids)

    def to(self, device: torch.device | str) -> "PlacementLayouts":
        return PlacementLayouts(self.object_names, self.positions.to(device), self.rotations.to(device),
                                list(self.sources), [dict(v) for v in self.validation], self.origin,
                                None if self.line_numbers is None else list(self.line_numbers),
                                list(self.physical_properties))

    def select(self, layout_ids: Sequence[int] | torch.Tensor) -> "PlacementLayouts":
        """A new ``PlacementLayouts`` of the given layouts, in that order."""
        ids = torch.as_tensor(layout_ids, dtype=torch.long, device=self.device)
        lst = ids.tolist()
        return PlacementLayouts(self.object_names, self.positions.index_select(0, ids),
                                self.rotations.index_select(0, ids), [self.sources[i] for i in lst],
                                [dict(self.validation[i]) for i in lst], self.origin,
                                None if self.line_numbers is None else [self.line_numbers[i] for i in lst],
                                [self.physical_properties[i] for i in lst])

    @staticmethod
    def concatenate(parts: Sequence["PlacementLayouts"]) -> "PlacementLayouts":
        """Layouts of several batches (same object set, any order of keys) one after another."""
        if not parts:
            raise PlacementLayoutsError("PlacementLayouts.concatenate: nothing to concatenate")
        names = parts[0].object_names
        pos, rot, src, val, props = [], [], [], [], []
        for part in parts:
            if set(part.object_names) != set(names):
                raise PlacementLayoutsError(f"PlacementLayouts.concatenate: object sets differ: {list(names)} vs "
                                            f"{list(part.object_names)}")
            order = torch.tensor([part.index_of(n) for n in names], dtype=torch.long, device=part.device)
            pos.append(part.positions.index_select(1, order).to(parts[0].device))
            rot.append(part.rotations.index_select(1, order).to(parts[0].device))
            src += part.sources
            val += part.validation
            props += part.physical_properties
        return PlacementLayouts(names, torch.cat(pos), torch.cat(rot), src, val, physical_properties=props)

    # -- JSONL -------------------------------------------------------------------------------------
    @classmethod
    def from_episode_jsonl(cls, path: str | os.PathLike, device: torch.device | str = "cpu", *,
                           position_bound_m: float | None = REPLAY_POSITION_BOUND_M) -> "PlacementLayouts":
        """Reads every nonblank line of an episode JSONL file (format in the module docstring).

        ``position_bound_m`` (metres): |x|, |y| and z of every position at most this, z at least
        ``REPLAY_MIN_Z_M``; None accepts any position a 32-bit float holds.

        Raises:
            FileNotFoundError: the file does not exist.
            PlacementLayoutsError: malformed JSON, a key repeated in one object, a line without the placement
                block, a missing or extra object versus the first line, a wrong-length or non-numeric pose, a
                non-finite pose, a position outside ``position_bound_m``, a non-unit quaternion, or no layouts at
                all; the message names ``path:line`` (and the number as written).
        """
        if position_bound_m is not None:
            position_bound_m = float(position_bound_m)
            if not position_bound_m > 0 or not math.isfinite(position_bound_m):
                raise ValueError(f"from_episode_jsonl: position_bound_m must be a number of metres > 0 or None, got "
                                 f"{position_bound_m!r}")
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"placement layouts file '{path}' does not exist (paths are relative to the "
                                    f"working directory {os.getcwd()})")
        names: list[str] | None = None
        first_line = 0
        positions: list[list[list[float]]] = []
        rotations: list[list[list[float]]] = []
        sources: list[str | None] = []
        validation: list[dict] = []
        properties: list[dict] = []
        lines: list[int] = []
        with open(path, "r", encoding="utf-8") as fh:
            for lineno, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                episode = _parse_line(text, path, lineno)
                poses = _placement_block(episode, path, lineno)
                if names is None:
                    names, first_line = list(poses), lineno
                else:
                    missing = [n for n in names if n not in poses]
                    extra = [n for n in poses if n not in names]
                    if missing or extra:
                        parts = []
                        if missing:
                            parts.append(f"missing objects {missing}")
                        if extra:
                            parts.append(f"extra objects {extra}")
                        raise PlacementLayoutsError(
                            f"{path}:{lineno}: {' and '.join(parts)} versus line {first_line}, which records "
                            f"{names}; every line must record the same object set")
                p_row, r_row = [], []
                for name in names:
                    p, r = _parse_pose(poses[name], name, path, lineno, position_bound_m)
                    p_row.append(p)
                    r_row.append(r)
                positions.append(p_row)
                rotations.append(r_row)
                source = episode.get("source")
                if source is not None and not isinstance(source, str):
                    raise PlacementLayoutsError(f"{path}:{lineno}: 'source' must be a string label such as "
                                                f"\"settled\" or \"solver\", got {source!r}")
                sources.append(source)
                val = episode.get("validation", {})
                if val is None:
                    val = {}
                if not isinstance(val, dict):
                    raise PlacementLayoutsError(f"{path}:{lineno}: 'validation' must be an object with pre_physics / "
                                                f"post_physics / sampling entries, got {type(val).__name__}")
                validation.append(plain_floats(val))
                variations = episode.get("variations")
                properties.append(property_record(variations.get(PROPERTIES_VARIATION_KEY) or {}, _where(path, lineno),
                                                  PlacementLayoutsError))
                lines.append(lineno)
        if names is None:
            raise PlacementLayoutsError(f"{path}: no layouts: the file has no nonblank lines; each line must hold "
                                        f"variations['{PLACEMENT_VARIATION_KEY}']['poses']")
        pos = torch.tensor(positions, dtype=torch.float32, device=device)
        rot = torch.tensor(rotations, dtype=torch.float32, device=device)
        return cls(tuple(names), pos, rot, sources, validation, origin=path, line_numbers=lines,
                   physical_properties=properties)

    def episode_records(self, source: str | Sequence[str | None] | None = None) -> Iterator[dict[str, Any]]:
        """One episode dict per layout (the JSONL line before encoding)."""
        sources = self._sources_for(source)
        pos = self.positions.detach().to("cpu", torch.float64).tolist()
        rot = self.rotations.detach().to("cpu", torch.float64).tolist()
        for i in range(len(self)):
            poses = {name: {"position_xyz": pos[i][j], "rotation_xyzw": rot[i][j]}
                     for j, name in enumerate(self.object_names)}
            record: dict[str, Any] = {"source": sources[i],
                                      "variations": {PLACEMENT_VARIATION_KEY: {"poses": poses}}}
            record["variations"].update(extra_variations(self.physical_properties[i], self.object_names, pos[i]))
            if self.validation[i]:
                record["validation"] = self.validation[i]
            yield record

    def jsonl_lines(self, source: str | Sequence[str | None] | None = None) -> list[str]:
        """The encoded JSONL lines of :meth:`episode_records` (each ends with a newline)."""
        return [_encode_line(record) for record in self.episode_records(source)]

    def _sources_for(self, source) -> list[str | None]:
        n = len(self)
        if source is None:
            sources = list(self.sources)
        elif isinstance(source, str):
            sources = [source] * n
        else:
            sources = list(source)
            if len(sources) != n:
                raise PlacementLayoutsError(f"write_episode_jsonl: {len(sources)} source labels for {n} layouts")
        for s in sources:
            if not isinstance(s, str) or not s:
                raise PlacementLayoutsError(f"write_episode_jsonl: source must be a non-empty label such as "
                                            f"\"settled\" or \"solver\", got {s!r}")
        return sources

    def write_episode_jsonl(self, path: str | os.PathLike, source: str | Sequence[str] | None = None,
                            overwrite: bool = False) -> str:
        """Writes one episode line per layout, atomically.

        Args:
            path: Target file; parent folders are created.
            source: Label written as each line's ``source`` (``"solver"``, ``"settled"``, ...), or one label
                per layout; None keeps ``self.sources`` (each must then be set).
            overwrite: Replace an existing file. By default an existing path is refused and left untouched.

        Returns:
            The path written.

        A temporary file in the same folder receives every line, is flushed and fsynced, then renamed onto
        ``path`` (``os.replace``; without ``overwrite`` a hard link, which fails if ``path`` appeared
        meanwhile). On any error the temporary file is removed and an existing ``path`` is left as it was.
        """
        path = os.fspath(path)
        self.check_values()
        records = list(self.episode_records(source))
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"'{path}' already exists; recorded layouts are never overwritten (choose a new "
                                  "output path, or pass overwrite=True)")
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = temp_beside(path)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                for record in records:
                    fh.write(_encode_line(record))
                fh.flush()
                os.fsync(fh.fileno())
            commit(tmp, path, overwrite)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        fsync_dir(folder)
        return path


# -- helpers -----------------------------------------------------------------------------------------

def _encode_line(record: dict) -> str:
    return json.dumps(record, allow_nan=False, separators=(", ", ": ")) + "\n"


class _DuplicateKey(Exception):
    pass


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    """``json.loads`` hook: plain JSON keeps the last of repeated keys silently; a layout file must not."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _parse_line(text: str, path: str, lineno: int) -> dict:
    try:
        episode = json.loads(text, object_pairs_hook=_refuse_duplicate_keys, parse_float=WrittenFloat)
    except json.JSONDecodeError as err:
        raise PlacementLayoutsError(f"{path}:{lineno}: malformed JSON ({err.msg} at column {err.colno}); each "
                                    "nonblank line must be one JSON object") from None
    except _DuplicateKey as dup:
        raise PlacementLayoutsError(f"{path}:{lineno}: duplicate key '{dup.args[0]}' in one JSON object; each key "
                                    "may appear once per object (JSON readers would silently keep only the last "
                                    "value)") from None
    if not isinstance(episode, dict):
        raise PlacementLayoutsError(f"{path}:{lineno}: expected a JSON object (an episode), got "
                                    f"{type(episode).__name__}")
    return episode


def _placement_block(episode: dict, path: str, lineno: int) -> dict:
    variations = episode.get("variations")
    block = variations.get(PLACEMENT_VARIATION_KEY) if isinstance(variations, dict) else None
    poses = block.get("poses") if isinstance(block, dict) else None
    if poses is None:
        missing = ("'variations'" if not isinstance(variations, dict) else
                   f"'variations[\"{PLACEMENT_VARIATION_KEY}\"]'" if not isinstance(block, dict) else
                   f"'variations[\"{PLACEMENT_VARIATION_KEY}\"][\"poses\"]'")
        raise PlacementLayoutsError(f"{path}:{lineno}: no placement block ({missing} is missing); every nonblank "
                                    f"line needs variations[\"{PLACEMENT_VARIATION_KEY}\"][\"poses\"], and episodes "
                                    "without placement records cannot be loaded")
    if not isinstance(poses, dict) or not poses:
        raise PlacementLayoutsError(f"{path}:{lineno}: variations[\"{PLACEMENT_VARIATION_KEY}\"][\"poses\"] must be a "
                                    "non-empty object mapping runtime scene keys to "
                                    "{\"position_xyz\": [x, y, z], \"rotation_xyzw\": [x, y, z, w]}")
    return poses


def _parse_vector(value, size: int, what: str, name: str, path: str, lineno: int) -> list[float]:
    if not isinstance(value, list) or len(value) != size:
        got = f"{len(value)} values" if isinstance(value, list) else type(value).__name__
        raise PlacementLayoutsError(f"{path}:{lineno}: object '{name}': {what} must be a list of {size} numbers, "
                                    f"got {got}: {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise PlacementLayoutsError(f"{path}:{lineno}: object '{name}': {what} must hold numbers, got {value!r}")
        out.append(float(v))
    if not all(math.isfinite(v) for v in out):
        raise PlacementLayoutsError(f"{path}:{lineno}: object '{name}': {what} is not finite: {value!r}")
    check_float32(value, f"{path}:{lineno}: object '{name}': {what}", PlacementLayoutsError)
    return out


def _parse_pose(pose, name: str, path: str, lineno: int,
                bound: float | None = REPLAY_POSITION_BOUND_M) -> tuple[list[float], list[float]]:
    if not isinstance(pose, dict) or "position_xyz" not in pose or "rotation_xyzw" not in pose:
        raise PlacementLayoutsError(f"{path}:{lineno}: object '{name}': a pose must be "
                                    "{\"position_xyz\": [x, y, z], \"rotation_xyzw\": [x, y, z, w]} "
                                    f"(env-local metres, xyzw quaternion), got {pose!r}")
    p = _parse_vector(pose["position_xyz"], 3, "position_xyz", name, path, lineno)
    check_position(pose["position_xyz"], f"{path}:{lineno}: object '{name}'", bound, PlacementLayoutsError)
    r = _parse_vector(pose["rotation_xyzw"], 4, "rotation_xyzw", name, path, lineno)
    norm = math.sqrt(sum(v * v for v in r))
    if abs(norm - 1.0) > UNIT_QUATERNION_TOLERANCE:
        raise PlacementLayoutsError(f"{path}:{lineno}: object '{name}': rotation_xyzw {r} is not a unit quaternion "
                                    f"(norm {norm:.6f}, accepted 1 +/- {UNIT_QUATERNION_TOLERANCE:g})")
    return p, r


def layouts_from_root_poses(root_poses: Mapping[str, torch.Tensor], sources: Sequence[str | None] | None = None,
                            validation: Sequence[dict] | None = None) -> PlacementLayouts:
    """Builds layouts from per-key (N, 7) env-local root poses (xyz metres + xyzw), e.g. settled poses."""
    if not root_poses:
        raise PlacementLayoutsError("layouts_from_root_poses: no root poses given")
    names = tuple(root_poses)
    stacked = torch.stack([torch.as_tensor(root_poses[n]) for n in names], dim=1)
    if stacked.dim() != 3 or stacked.shape[-1] != 7:
        raise PlacementLayoutsError(f"layouts_from_root_poses: each root pose tensor must be (N, 7), got "
                                    f"{tuple(stacked.shape)} stacked")
    return PlacementLayouts(names, stacked[..., :3].clone(), stacked[..., 3:].clone(),
                            list(sources) if sources is not None else [],
                            [dict(v) for v in validation] if validation is not None else [])
