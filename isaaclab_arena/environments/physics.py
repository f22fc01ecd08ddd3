"""Physics backend selection for kit-less Isaac Lab 3.0 envs.

``ovphysx`` (default): PhysX through OV PhysX, kit-less, CPU or CUDA; per-env heterogeneous colliders are
honoured (each env's object rests at its own height). ``newton_mjwarp``: Newton with the MuJoCo-Warp solver
(kit-less), with the contact settings of :class:`NewtonContactSettings` (Newton's own collision pipeline, with
which per-env colliders are honoured too; MuJoCo's contacts do not honour them). ``isaacsim_physx``: PhysX
through Isaac Sim / Kit (GPU hosts with Isaac Sim installed; see docker/). What each backend gets right, with
measured figures: ``docs/PHYSICS.md``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from dataclasses import dataclass

PHYSICS_CHOICES = ("ovphysx", "newton_mjwarp", "isaacsim_physx")


@dataclass(frozen=True)
class NewtonContactSettings:
    """Contact settings of the ``newton_mjwarp`` backend (chosen by ``scripts/bench_resting.py``).

    Attributes:
        shape_margin_m: Per-shape collision margin, metres.
        shape_gap_m: Per-shape contact gap (contacts are detected this far before touching), metres.
        shape_ke: Normal contact stiffness, N/m (with ``shape_kd`` it sets MuJoCo's contact time constant).
        shape_kd: Normal contact damping, N*s/m.
        iterations: Constraint solver iterations per step.
        ls_iterations: Line-search iterations per solver iteration.
        tolerance: Solver convergence tolerance on the constraint residual.
        enable_multiccd: Several contact points per convex pair (a manifold) instead of one.
        ccd_iterations: Iterations of MuJoCo's convex collision detection (GJK/EPA).
        use_mujoco_contacts: True: MuJoCo-Warp detects contacts; False: Newton's own collision pipeline does.
        cone: Friction cone, ``pyramidal`` or ``elliptic``.
        impratio: Frictional-to-normal constraint impedance ratio.
        num_substeps: Solver substeps per physics step.
        njmax: Constraint rows per env.
        nconmax: Contact points per env.
    """

    shape_margin_m: float = 0.0
    shape_gap_m: float = 0.01
    shape_ke: float = 2.5e3
    shape_kd: float = 100.0
    iterations: int = 100
    ls_iterations: int = 50
    tolerance: float = 1e-6
    enable_multiccd: bool = False
    ccd_iterations: int = 35
    use_mujoco_contacts: bool = False
    cone: str = "elliptic"
    impratio: float = 10.0
    num_substeps: int = 2
    njmax: int = 200
    nconmax: int = 100

    def replace(self, **changes) -> "NewtonContactSettings":
        """A copy with ``changes`` (unknown names raise ``ValueError`` naming the accepted ones)."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise ValueError(f"NewtonContactSettings: unknown setting(s) {unknown}; accepted: {sorted(names)}")
        return dataclasses.replace(self, **changes)


#: The settings ``newton_mjwarp`` envs are built with: Newton's own collision pipeline (not MuJoCo's contacts)
#: and an elliptic friction cone with impedance ratio 10. With MuJoCo's contacts a 0.16 m cylinder sank 8 mm into
#: the table and crept at 0.03 m/s after 240 steps, clutter still moved at 0.04-0.05 m/s and an object set's
#: members shared one collider; with Newton's pipeline every shipped example rests within 0.25 mm, and the
#: elliptic cone brings the slowest clutter from 4.9 to 1.5 mm/s (``scripts/bench_resting.py``, docs/PHYSICS.md).
NEWTON_CONTACT_SETTINGS = NewtonContactSettings()


def mesh_collider_assets(assets) -> list[str]:
    """Names of the assets whose USD file holds a mesh collider (``PhysicsMeshCollisionAPI``: convex hulls,
    decompositions or triangle meshes), read with pxr."""
    import os

    from pxr import Usd, UsdPhysics

    names = []
    for a in assets:
        path = getattr(a, "usd_path", None)
        if not path or not os.path.isfile(path):
            continue
        stage = Usd.Stage.Open(path)
        if any(p.HasAPI(UsdPhysics.MeshCollisionAPI) for p in stage.Traverse()):
            names.append(a.name)
    return names


def newton_resting_caveats(assets, settings: NewtonContactSettings | None = None) -> list[str]:
    """What ``newton_mjwarp`` with ``settings`` is measured not to get right in a scene of ``assets`` (one line
    each; empty when the scene rests as solved)."""
    from isaaclab_arena.assets.object_set import RigidObjectSet

    s = settings or NEWTON_CONTACT_SETTINGS
    out = []
    meshed = mesh_collider_assets(assets)
    if meshed:
        out.append(f"objects with USD mesh colliders ({', '.join(meshed)}) were measured not to rest: in "
                   "mesh_tucked_objects the hollow bowl fell through the table and in kitchen_counter_mesh objects "
                   "fell through the counter (scripts/bench_resting.py); use physics='ovphysx'")
    if s.use_mujoco_contacts:
        if any(isinstance(a, RigidObjectSet) for a in assets):
            out.append("with MuJoCo's contacts the members of a RigidObjectSet share one collider, so rest heights "
                       "will not match the solved geometry; use use_mujoco_contacts=False or physics='ovphysx'")
        out.append("with MuJoCo's contacts objects were measured to sink up to 8 mm into their supports and creep; "
                   "use use_mujoco_contacts=False or physics='ovphysx'")
    return out


def check_backend_available(physics: str, device: str = "cpu") -> None:
    """Refuses, before any expensive work, a backend or device this install cannot run.

    Raises:
        ValueError: an unknown backend or device string.
        RuntimeError: ``isaacsim_physx`` without Isaac Sim, or a CUDA device without a usable GPU; the message
            names the alternatives.
    """
    if physics not in PHYSICS_CHOICES:
        raise ValueError(f"physics={physics!r} is not accepted; use one of {', '.join(PHYSICS_CHOICES)}")
    dev = str(device)
    if dev != "cpu" and not (dev == "cuda" or (dev.startswith("cuda:") and dev[5:].isdigit())):
        raise ValueError(f"device={dev!r} is not accepted; use cpu or cuda:<index> (e.g. cuda:0)")
    if physics == "isaacsim_physx" and importlib.util.find_spec("isaacsim") is None:
        raise RuntimeError("physics 'isaacsim_physx' needs Isaac Sim (Kit), which is not installed here; use "
                           "'ovphysx' (kit-less PhysX, the default) or 'newton_mjwarp', or the GPU image in docker/")
    if dev.startswith("cuda"):
        import torch

        index = int(dev[5:]) if dev.startswith("cuda:") else 0
        if not torch.cuda.is_available():
            raise RuntimeError(f"device {dev!r}: no CUDA GPU is usable here (torch.cuda.is_available() is False); "
                               "use --device cpu")
        if index >= torch.cuda.device_count():
            raise RuntimeError(f"device {dev!r}: this machine has {torch.cuda.device_count()} CUDA device(s) "
                               f"(cuda:0 .. cuda:{torch.cuda.device_count() - 1}); use one of them or cpu")


def _ovphysx_cpu_workaround() -> None:
    """OV PhysX allocates pinned host buffers, which need a CUDA driver: fall back to plain host memory."""
    import warp as wp

    wp.init()
    if not wp.is_cuda_available():
        cpu = wp.get_device("cpu")
        cpu.pinned_allocator = cpu.default_allocator


#: Carbonite settings every OV PhysX runtime of the process starts with (``_ovphysx_runtime_settings``).
#: ``/UJITSO/datastore/allowLocalDataStore`` False: OV PhysX's UJITSO agent gets no local datastore (the on-disk
#: cache of cooked colliders), so the agent's thread that polls it with a 1 us sleep never starts. That thread ran
#: from the env's creation to the process's exit, about a quarter of a core on the 2-core CPU machine, idle or not
#: (a per-thread CPU probe; docs/PHYSICS.md, "OV PhysX's UJITSO thread"). Colliders are cooked in process as before,
#: only not kept on disk across runs: the kitchen mesh scene starts as fast either way (4.5-5.0 s, alternated three
#: times). ``/UJITSO/enabled`` False stops the thread too, but then OV PhysX prints "[Error] [] resources.
#: dataStoreConfigurator is false." at every env's creation.
OVPHYSX_RUNTIME_SETTINGS: dict[str, bool] = {"/UJITSO/datastore/allowLocalDataStore": False}


def ovphysx_worker_threads() -> int | None:
    """PhysX worker threads of the OV PhysX runtime: 0 (PhysX steps in the calling thread) where this process may
    run on at most 2 cores, else None (Isaac Lab's 8). On the 2-core CPU machine Isaac Lab's 8 workers only hand
    the work around: a Franka evaluation (2 envs, 4 episodes of 300 steps) 6.4-7.7 -> 5.9 s and 7.0-8.3 -> 6.0
    CPU-s, the README's scene at 64 envs 80-110 k -> 239-253 k env-steps/s, a 64-env evaluation the same wall time
    with 0.6 CPU-s less; the same records byte for byte (docs/PHYSICS.md, "OV PhysX's worker threads")."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return 0 if cores <= 2 else None


def _ovphysx_runtime_settings() -> None:
    """Makes every ``ovphysx.PhysXConfig`` of the process carry :data:`OVPHYSX_RUNTIME_SETTINGS` (a key the
    config's own ``carbonite_overrides`` sets wins) and :func:`ovphysx_worker_threads` (where that gives a number).
    Isaac Lab builds the runtime's config itself (``OvPhysxBackend``) with no way to add Carbonite settings or
    choose the thread count, so the class ``ovphysx.PhysXConfig`` is replaced by a subclass that adds them;
    installed once per process, before the first runtime starts (the settings apply when the runtime first starts
    in a process)."""
    import ovphysx

    base = ovphysx.PhysXConfig
    if getattr(base, "arena_runtime_settings", False):
        return

    class ArenaPhysXConfig(base):
        arena_runtime_settings = True

        def __post_init__(self):
            self.carbonite_overrides = {**OVPHYSX_RUNTIME_SETTINGS, **(self.carbonite_overrides or {})}
            workers = ovphysx_worker_threads()
            if workers is not None:
                self.num_threads = workers
            super().__post_init__()

    ArenaPhysXConfig.__name__ = ArenaPhysXConfig.__qualname__ = "PhysXConfig"
    ovphysx.PhysXConfig = ArenaPhysXConfig


def make_newton_cfg(device: str = "cpu", settings: NewtonContactSettings | None = None):
    """The ``NewtonCfg`` (MuJoCo-Warp solver) for ``settings`` (default :data:`NEWTON_CONTACT_SETTINGS`)."""
    from isaaclab_newton.physics import MJWarpSolverCfg, NewtonCfg
    from isaaclab_newton.physics.newton_manager_cfg import NewtonShapeCfg

    s = settings or NEWTON_CONTACT_SETTINGS
    solver = MJWarpSolverCfg(njmax=s.njmax, nconmax=s.nconmax, iterations=s.iterations, ls_iterations=s.ls_iterations,
                             tolerance=s.tolerance, enable_multiccd=s.enable_multiccd, cone=s.cone, impratio=s.impratio,
                             ccd_iterations=s.ccd_iterations, use_mujoco_contacts=s.use_mujoco_contacts)
    shape = NewtonShapeCfg(margin=s.shape_margin_m, gap=s.shape_gap_m, ke=s.shape_ke, kd=s.shape_kd)
    collision = None
    if not s.use_mujoco_contacts:
        from isaaclab_newton.physics import NewtonCollisionPipelineCfg

        collision = NewtonCollisionPipelineCfg()
    return NewtonCfg(solver_cfg=solver, use_cuda_graph=str(device).startswith("cuda"), num_substeps=s.num_substeps,
                     default_shape_cfg=shape, collision_cfg=collision)


def make_physics_cfg(physics: str, device: str = "cpu", newton: NewtonContactSettings | None = None,
                     enhanced_determinism: bool = False):
    """Returns the Isaac Lab physics config for ``physics`` (one of :data:`PHYSICS_CHOICES`).

    ``enhanced_determinism``: PhysX's enhanced determinism (``enable_enhanced_determinism``): an env's bodies
    simulate the same whatever else is in the scene and however the work is split over PhysX's threads, at some
    cost in speed (the evaluation runner's exact mode; no effect on Newton, which has no such setting).
    """
    check_backend_available(physics, device)
    if physics == "ovphysx":
        _ovphysx_cpu_workaround()
        _ovphysx_runtime_settings()
        from isaaclab_ov.physics import OvPhysxCfg

        return OvPhysxCfg(enable_enhanced_determinism=enhanced_determinism)
    if physics == "newton_mjwarp":
        return make_newton_cfg(device, newton)
    from isaaclab_physx.physics import PhysxCfg

    return PhysxCfg(enable_enhanced_determinism=enhanced_determinism)
