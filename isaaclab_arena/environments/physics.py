"""Physics backend selection for kit-less Isaac Lab 3.0 envs.

``ovphysx`` (default): PhysX through OV PhysX, kit-less, CPU or CUDA; per-env heterogeneous colliders are
honoured (measured, see PLATFORM.md). ``newton_mjwarp``: Newton with the MuJoCo-Warp solver (kit-less; does
not honour per-env colliders of a multi-asset spawner). ``isaacsim_physx``: PhysX through Isaac Sim / Kit
(GPU hosts with Isaac Sim installed; see docker/).
"""

from __future__ import annotations

PHYSICS_CHOICES = ("ovphysx", "newton_mjwarp", "isaacsim_physx")


def _ovphysx_cpu_workaround() -> None:
    """OV PhysX allocates pinned host buffers, which need a CUDA driver: fall back to plain host memory."""
    import warp as wp

    wp.init()
    if not wp.is_cuda_available():
        cpu = wp.get_device("cpu")
        cpu.pinned_allocator = cpu.default_allocator


def make_physics_cfg(physics: str, device: str = "cpu"):
    """Returns the Isaac Lab physics config for ``physics`` (one of :data:`PHYSICS_CHOICES`)."""
    if physics not in PHYSICS_CHOICES:
        raise ValueError(f"physics={physics!r} is not accepted; use one of {', '.join(PHYSICS_CHOICES)}")
    if physics == "ovphysx":
        _ovphysx_cpu_workaround()
        from isaaclab_ov.physics import OvPhysxCfg

        return OvPhysxCfg()
    if physics == "newton_mjwarp":
        from isaaclab_newton.physics import MJWarpSolverCfg, NewtonCfg

        return NewtonCfg(solver_cfg=MJWarpSolverCfg(njmax=200, nconmax=100), use_cuda_graph=str(device).startswith("cuda"),
                         num_substeps=2)
    try:
        import isaacsim  # noqa: F401
    except ImportError:
        raise RuntimeError("physics='isaacsim_physx' needs Isaac Sim (Kit), which is not installed here; use "
                           "'ovphysx' (kit-less PhysX, the default) or 'newton_mjwarp', or the GPU image in docker/") from None
    from isaaclab_physx.physics import PhysxCfg

    return PhysxCfg()
