"""Writes solved or recorded placement layouts, one env or a grid of envs, as one USD stage.

Stage layout (metres, Z up, ``metersPerUnit = 1``, ``kilogramsPerUnit = 1``, default prim ``/World``)::

    /World/ground                    the builder's ground plane (a reference to the shipped ground_plane.usda)
    /World/light                     a dome light
    /World/envs/env_<i>              Xform at env i's origin (Isaac Lab's grid for num_envs and env_spacing)
    /World/envs/env_<i>/<scene key>  one prim per spawned asset: an internal reference to its prototype, its
                                     env-local pose (xformOp:translate double3, xformOp:orient quatd)
    /Prototypes/<name>               class prims: every distinct asset authored once (``prototypes.py``,
                                     ``robot.py``); abstract, so neither simulated nor drawn themselves

Scene keys are the runtime keys of the Isaac Lab scene: the asset names, ``robot`` for the embodiment (its asset
name is accepted too, as ``ObjectPlacer`` results key it), the set's name for a ``RigidObjectSet`` (whose prim
references the member chosen for that env). Object references spawn
nothing (they are prims inside their parent's USD). Poses not given (backgrounds, anchors, fixed objects) are the
assets' own (``placed_pose``, else ``initial_pose``), as the env builder spawns them; the robot stands at its
layout pose, else at ``Embodiment.get_world_pose()``.

The layer's ``customLayerData`` records ``arena:env_name``, ``arena:num_envs``, ``arena:env_spacing``,
``arena:env_ids`` and, when given, ``arena:source``. The file is written to a temporary file beside the target and
renamed into place; an existing file is refused unless ``overwrite=True``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdLux, UsdPhysics, UsdUtils, Vt

from isaaclab_arena import ARENA_ROOT
from isaaclab_arena.assets.object_type import ObjectType
from isaaclab_arena.export.prototypes import (
    PROTOTYPES_ROOT,
    author_shape,
    author_usd_file,
    prototype_key,
    scale_of,
    shape_kind,
)
from isaaclab_arena.utils.atomic_files import commit, fsync_dir, temp_beside

#: File name endings the exporter writes (``.usd`` and ``.usdc``: binary crate, ``.usda``: text).
USD_SUFFIXES = (".usd", ".usda", ".usdc")
ENVS_ROOT = "/World/envs"
#: The ground plane the env builder spawns.
GROUND_USD = os.path.join(ARENA_ROOT, "isaaclab_arena_environments", "assets", "usd", "ground_plane.usda")
#: Accepted deviation of a quaternion's norm from 1 (as recorded layouts accept).
UNIT_QUATERNION_TOLERANCE = 1e-4


@dataclass(frozen=True)
class LayoutUsdExport:
    """What :func:`export_layout_usd` wrote.

    Attributes:
        path: Absolute path of the stage.
        num_envs: Envs of the layouts (the grid the origins are laid on).
        env_ids: The envs written, in order.
        env_spacing: Metres between env origins.
        env_origins: ``(len(env_ids), 3)`` float64 world origins of the written envs.
        prims: Scene key -> prim path in each written env.
        prototypes: Prototype prim path -> what it holds (``shape Cylinder``, ``usd <file>``, ``robot <file>``).
        robot_joints: Joints of the robot set to the home pose (empty without a robot).
        unwritten_settings: Spawner config fields the stage does not carry (e.g. a visual material of a USD file).
        size_bytes: Size of the file.
        placement_seed: The placement seed recorded in the stage (None: none was given).
        source: Where the layouts came from, as recorded in the stage (None: not given).
    """

    path: str
    num_envs: int
    env_ids: tuple[int, ...]
    env_spacing: float
    env_origins: np.ndarray
    prims: dict[str, tuple[str, ...]]
    prototypes: dict[str, str]
    robot_joints: tuple[str, ...]
    unwritten_settings: tuple[str, ...]
    size_bytes: int
    placement_seed: int | None = None
    source: str | None = None


def grid_env_origins(num_envs: int, env_spacing: float) -> np.ndarray:
    """``(num_envs, 3)`` float64 env origins (metres, world) of Isaac Lab's cloner grid: Isaac Lab's own
    ``grid_transforms`` (rows along -X, columns along +Y, centred on the world origin, float32 as the simulator
    computes them)."""
    from isaaclab.cloner.clone_plan import grid_transforms

    positions, _ = grid_transforms(int(num_envs), float(env_spacing))
    return positions.astype(np.float64) + 0.0  # no -0


def default_env_spacing_of(arena_env) -> float:
    """The spacing the env builder uses without ``--env_spacing``: the environment's, else derived from the scene."""
    if arena_env.env_spacing is not None:
        return float(arena_env.env_spacing)
    from isaaclab_arena.environments.env_spacing import default_env_spacing

    robot = [arena_env.embodiment] if arena_env.embodiment is not None else []
    return default_env_spacing([*arena_env.assets, *robot])


def check_output_path(path, overwrite: bool = False) -> str:
    """The absolute output path; ``ValueError`` for a name without a USD ending or a folder in the way,
    ``FileExistsError`` for an existing file (unless ``overwrite``)."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise ValueError(f"output must be a path ending in {', '.join(USD_SUFFIXES)}, got {path!r}")
    given = os.fspath(path)
    path = os.path.abspath(os.path.expanduser(given))
    if os.path.splitext(path)[1].lower() not in USD_SUFFIXES:
        raise ValueError(f"output {given}: the name must end in {', '.join(USD_SUFFIXES)} (.usda is text, .usd and "
                         ".usdc binary)")
    if os.path.isdir(path):
        raise ValueError(f"output {given} is a folder; give a file name ending in .usd or .usda")
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"output {given} already exists; exported stages are never overwritten (remove it or "
                              "give another name)")
    here = os.path.dirname(path)
    while not os.path.exists(here):
        here = os.path.dirname(here)
    if not os.path.isdir(here):
        raise ValueError(f"output {given}: {here} is a file, not a folder")
    return path


# ---- what is spawned, and where -----------------------------------------------------------------------------------
def _spawned(arena_env) -> list[tuple[str, object, str]]:
    """(scene key, asset, kind) of every asset the env builder spawns: ``object``, ``set`` or ``robot``."""
    from isaaclab_arena.assets.object_set import RigidObjectSet
    from isaaclab_arena.environments.scene_entities import spawned_members

    out = []
    for asset in arena_env.assets:
        members = spawned_members(asset)  # the env builder's own refusals
        if not members:
            continue
        for m in members:
            if m.object_type == ObjectType.ARTICULATION:
                raise ValueError(f"asset '{m.name}': articulated objects are not supported (as in ArenaEnvBuilder)")
        out.append((asset.name, asset, "set" if isinstance(asset, RigidObjectSet) else "object"))
    if arena_env.embodiment is not None:
        out.append((arena_env.embodiment.get_scene_root_keys()[0], arena_env.embodiment, "robot"))
    return out


def _rows(value, width: int, key: str, what: str) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu()
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None]
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(f"{what}['{key}'] must have shape ({width},) or (num_envs, {width}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{what}['{key}'] holds a value that is not finite")
    return arr


def _pose_table(entries, positions: Mapping, rotations: Mapping | None, num_envs: int | None) -> tuple[int, dict]:
    """``(num_envs, {key: (positions (N, 3), rotations xyzw (N, 4))})`` for every spawned asset, float64."""
    keys = {k for k, _, _ in entries}
    positions, rotations = dict(positions), dict(rotations or {})
    for key, asset, kind in entries:  # the robot's asset name (ObjectPlacer results) stands for its scene key
        if kind == "robot" and asset.name != key and asset.name in positions:
            if key in positions:
                raise ValueError(f"layouts give the robot twice, as '{asset.name}' and as '{key}'")
            positions[key] = positions.pop(asset.name)
            if asset.name in rotations:
                rotations[key] = rotations.pop(asset.name)
    unknown = sorted((set(positions) | set(rotations)) - keys)
    if unknown:
        raise ValueError(f"layout keys {unknown} are not spawned assets of this environment; scene keys: {sorted(keys)}")
    no_pos = sorted(set(rotations) - set(positions))
    if no_pos:
        raise ValueError(f"rotations given for {no_pos} without positions")
    given = {k: (_rows(positions[k], 3, k, "positions"),
                 _rows(rotations[k], 4, k, "rotations") if k in rotations else np.array([[0.0, 0.0, 0.0, 1.0]]))
             for k in positions}
    sizes = {len(p) for p, _ in given.values()} | {len(r) for _, r in given.values() if len(r) > 1}
    if len(sizes - {1}) > 1 or (num_envs is not None and not sizes <= {1, num_envs}):
        raise ValueError(f"layouts of different env counts: {sorted(sizes)} rows"
                         + (f" for num_envs={num_envs}" if num_envs is not None else ""))
    n = max(sizes | {1}) if num_envs is None else int(num_envs)
    table = {}
    for key, asset, kind in entries:
        if key in given:
            pos, rot = given[key]
        else:
            pose = asset.get_world_pose() if kind == "robot" else (asset.placed_pose or asset.initial_pose)
            if pose is None or (asset.has_placement_relations and getattr(asset, "placed_pose", None) is None):
                raise ValueError(f"asset '{key}' is placed by relations (or has no pose) and no layout gives its pose; "
                                 f"layouts hold {sorted(given)}")
            pos, rot = np.array([pose.position_xyz], np.float64), np.array([pose.rotation_xyzw], np.float64)
        norm = np.linalg.norm(rot, axis=1)
        if (np.abs(norm - 1.0) > UNIT_QUATERNION_TOLERANCE).any():
            raise ValueError(f"rotation of '{key}' is not a unit xyzw quaternion (norm {float(norm.max()):.6g})")
        table[key] = (np.broadcast_to(pos, (n, 3)), np.broadcast_to(rot / norm[:, None], (n, 4)))
    return n, table


def _members(entries, num_envs: int, member_indices: Mapping | None, placement_seed) -> dict[str, list[int]]:
    out = {}
    for key, asset, kind in entries:
        if kind != "set":
            continue
        if member_indices is not None and key in member_indices:
            ids = [int(i) for i in member_indices[key]]
        elif asset.random_choice and placement_seed is None:
            raise ValueError(f"RigidObjectSet '{key}' picks members at random: give member_indices (the env builder's "
                             "builder.member_indices) or a placement seed")
        else:
            ids = asset.member_indices_per_env(num_envs, placement_seed)
        if len(ids) != num_envs or any(not 0 <= i < len(asset.objects) for i in ids):
            raise ValueError(f"member_indices['{key}'] must give one member index (0..{len(asset.objects) - 1}) per "
                             f"env ({num_envs}), got {ids}")
        out[key] = ids
    return out


# ---- authoring ----------------------------------------------------------------------------------------------------
class _Prototypes:
    """Authors each distinct prototype once; ``path_of(spawn_cfg, static, name)`` -> its prim path."""

    def __init__(self, stage: Usd.Stage):
        self.stage = stage
        self.paths: dict[str, str] = {}
        self.described: dict[str, str] = {}
        self.unwritten: list[str] = []
        self.robot_joints: list[str] = []
        self.scales: dict[str, tuple[float, float, float] | None] = {}

    def _new_path(self, name: str) -> str:
        taken = set(self.described)
        path, k = f"{PROTOTYPES_ROOT}/{name}", 1
        while path in taken:
            k += 1
            path = f"{PROTOTYPES_ROOT}/{name}_{k}"
        return path

    def path_of(self, spawn_cfg, static: bool, name: str) -> str:
        key = prototype_key(spawn_cfg, static)
        if key in self.paths:
            return self.paths[key]
        path = self._new_path(name)
        usd_path = getattr(spawn_cfg, "usd_path", None)
        if shape_kind(spawn_cfg) is not None:
            self.unwritten += author_shape(self.stage, path, spawn_cfg, static)
            self.described[path] = f"shape {shape_kind(spawn_cfg)}"
            self.scales[path] = None
        elif isinstance(usd_path, str):
            if not os.path.isfile(usd_path):
                raise FileNotFoundError(f"asset '{name}': USD file not found: {usd_path}")
            self.unwritten += author_usd_file(self.stage, path, spawn_cfg, static, os.path.abspath(usd_path))
            scale = scale_of(spawn_cfg)
            if scale is not None:
                UsdGeom.Xformable(self.stage.GetPrimAtPath(path)).AddScaleOp().Set(Gf.Vec3f(*scale))
            self.described[path] = f"usd {os.path.abspath(usd_path)}"
            self.scales[path] = scale
        else:
            raise ValueError(f"asset '{name}': spawner {type(spawn_cfg).__name__} cannot be exported (procedural "
                             f"shapes and USD files can)")
        self.paths[key] = path
        return path

    def robot_path(self, embodiment, joint_positions) -> str:
        from isaaclab_arena.export.robot import author_robot

        if "robot" in self.paths:
            return self.paths["robot"]
        path = self._new_path("robot")
        usd_path = os.path.abspath(embodiment.description.usd_path)
        if not os.path.isfile(usd_path):
            raise FileNotFoundError(f"embodiment '{embodiment.name}': robot USD file not found: {usd_path}")
        done = author_robot(self.stage, path, embodiment, usd_path, joint_positions)
        self.robot_joints, self.unwritten = done["joints"], self.unwritten + done["skipped"]
        self.paths["robot"], self.described[path], self.scales[path] = path, f"robot {usd_path}", None
        return path


def _place(stage: Usd.Stage, path: str, prototype: str, position, rotation_xyzw, scale) -> None:
    """An env's prim at ``path`` referencing ``prototype`` at the env-local pose (float64)."""
    prim = stage.DefinePrim(path)
    prim.GetReferences().AddInternalReference(prototype)
    xf = UsdGeom.Xformable(prim)
    xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*map(float, position)))
    x, y, z, w = (float(v) for v in rotation_xyzw)
    xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(w, x, y, z))
    if scale is not None:  # the value lives in the prototype; the env's op order includes it
        xf.GetXformOpOrderAttr().Set(Vt.TokenArray(["xformOp:translate", "xformOp:orient", "xformOp:scale"]))


def _new_stage(suffix: str) -> Usd.Stage:
    stage = Usd.Stage.Open(Sdf.Layer.CreateAnonymous(f"arena_layout{suffix}"))
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    stage.CreateClassPrim(PROTOTYPES_ROOT)
    return stage


def _relative_asset_paths(layer: Sdf.Layer, folder: str) -> None:
    def rel(asset: str) -> str:
        if not os.path.isabs(asset):
            return asset
        r = os.path.relpath(asset, folder)
        return r if r.startswith("..") else f"./{r}"

    UsdUtils.ModifyAssetPaths(layer, rel)


def _write(layer: Sdf.Layer, path: str, overwrite: bool) -> int:
    """Exports ``layer`` to a temporary file beside ``path``, fsyncs it and renames it into place; its size."""
    fd, tmp = temp_beside(path, suffix=os.path.splitext(path)[1])
    os.close(fd)
    try:
        if not layer.Export(tmp):
            raise OSError(f"could not write the stage to {tmp}")
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        size = os.path.getsize(tmp)
        commit(tmp, path, overwrite, what="exported stages")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    fsync_dir(os.path.dirname(path))
    return size


def export_layout_usd(arena_env, positions: Mapping, rotations: Mapping | None, path, *,
                      num_envs: int | None = None, env_ids: Sequence[int] | None = None,
                      env_spacing: float | None = None,
                      member_indices: Mapping | None = None, joint_positions: Mapping | None = None,
                      placement_seed: int | None = None, source: str | None = None, ground: bool = True,
                      relative_asset_paths: bool = False, overwrite: bool = False) -> LayoutUsdExport:
    """Writes the layouts of ``arena_env`` (an ``IsaacLabArenaEnvironment``) as a USD stage at ``path``.

    Args:
        arena_env: The environment whose assets are spawned (``ArenaEnvGraphSpec.from_yaml(...).to_arena_env()``).
        positions: Scene key -> env-local root positions, metres: ``(num_envs, 3)`` (row i = env i) or ``(3,)``
            (every env). Keys are runtime scene keys (``robot`` for the embodiment), as in ``PlacementLayouts``.
        rotations: Scene key -> xyzw unit quaternions ``(num_envs, 4)`` or ``(4,)``; identity where not given.
        path: Output file (``.usda`` text, ``.usd`` / ``.usdc`` binary).
        num_envs: Envs of the layouts, the grid the origins are laid on (default: the rows of ``positions``; 1 when
            every pose is given once).
        env_ids: Envs to write (default every env); each keeps its origin in the grid of ``num_envs`` envs.
        env_spacing: Metres between env origins (default: as the env builder, ``default_env_spacing_of``).
        member_indices: ``RigidObjectSet`` name -> member index per env (default as the builder picks them).
        joint_positions: Robot joint -> position (rad or m); default its home pose.
        placement_seed: Seed of the set members when they are picked at random (and recorded in the stage).
        source: Free text recorded as ``arena:source`` (e.g. ``placement_seed 7`` or the layouts file).
        ground: Write the builder's ground plane at ``/World/ground``.
        relative_asset_paths: Write referenced files relative to the output's folder (default absolute paths).
        overwrite: Replace an existing file (default: refuse it).

    Returns:
        A :class:`LayoutUsdExport`. Raises ``ValueError`` / ``FileExistsError`` / ``FileNotFoundError`` for input it
        refuses, before anything is written.
    """
    path = check_output_path(path, overwrite)
    entries = _spawned(arena_env)
    if num_envs is not None and (isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs <= 0):
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
    num_envs, table = _pose_table(entries, positions or {}, rotations, num_envs)
    ids = list(range(num_envs)) if env_ids is None else [int(i) for i in env_ids]
    bad = [i for i in ids if not 0 <= i < num_envs]
    if not ids or bad or len(set(ids)) != len(ids):
        raise ValueError(f"env_ids {ids}: give distinct env indices in 0..{num_envs - 1} (the layouts hold {num_envs} "
                         "envs)")
    spacing = default_env_spacing_of(arena_env) if env_spacing is None else float(env_spacing)
    if not math.isfinite(spacing) or spacing < 0:
        raise ValueError(f"env_spacing must be a number of metres >= 0, got {env_spacing!r}")
    seed = placement_seed if placement_seed is not None else arena_env.placer_params.placement_seed
    members = _members(entries, num_envs, member_indices, seed)
    origins = grid_env_origins(num_envs, spacing)[ids]

    stage = _new_stage(os.path.splitext(path)[1])
    if ground:
        stage.DefinePrim("/World/ground").GetReferences().AddReference(GROUND_USD)
    UsdLux.DomeLight.Define(stage, "/World/light").CreateIntensityAttr(1000.0)
    protos = _Prototypes(stage)
    prims: dict[str, list[str]] = {k: [] for k, _, _ in entries}
    UsdGeom.Scope.Define(stage, ENVS_ROOT)
    for row, env in enumerate(ids):
        env_path = f"{ENVS_ROOT}/env_{env}"
        UsdGeom.Xformable(UsdGeom.Xform.Define(stage, env_path)).AddTranslateOp(
            UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*origins[row]))
        for key, asset, kind in entries:
            if kind == "robot":
                proto = protos.robot_path(asset, joint_positions)
            else:
                obj = asset.objects[members[key][env]] if kind == "set" else asset
                static = obj.object_type == ObjectType.BASE
                proto = protos.path_of(obj.spawn_cfg, static, obj.name if kind == "object" else f"{key}_{obj.name}")
            pos, rot = table[key]
            _place(stage, f"{env_path}/{key}", proto, pos[env], rot[env], protos.scales[proto])
            prims[key].append(f"{env_path}/{key}")
    data = {"arena:env_name": arena_env.name, "arena:num_envs": num_envs, "arena:env_spacing": spacing,
            "arena:env_ids": Vt.IntArray(ids)}
    if source:
        data["arena:source"] = str(source)
    if seed is not None:
        data["arena:placement_seed"] = int(seed)
    stage.GetRootLayer().customLayerData = data
    if relative_asset_paths:
        _relative_asset_paths(stage.GetRootLayer(), os.path.dirname(path))
    size = _write(stage.GetRootLayer(), path, overwrite)
    return LayoutUsdExport(path=path, num_envs=num_envs, env_ids=tuple(ids), env_spacing=spacing, env_origins=origins,
                           prims={k: tuple(v) for k, v in prims.items()}, prototypes=dict(protos.described),
                           robot_joints=tuple(protos.robot_joints), unwritten_settings=tuple(sorted(set(protos.unwritten))),
                           size_bytes=size, placement_seed=seed, source=source)
