"""Export of placement layouts: one env or a grid of envs as a USD stage (``layout_usd.export_layout_usd``; from an
env spec as the runners solve or replay it: ``env_layouts.export_arena_env_usd``)."""
