"""Record and replay: settle solved layouts with physics, check them after physics, record them to a layouts
file, read the file back and replay it.

The file and replay: ``placement_layouts`` (the recorded-layouts JSONL format, ``PlacementLayouts``; also
importable as ``isaaclab_arena.relations.placement_layouts``, the path the user documents name),
``layout_values`` (checks of the numbers in a file), ``placement_replay`` (the replay queue and settings).
Recording: ``settled_batch`` (measured state after settling), ``post_physics_validation`` (checks on it),
``recording_config`` (the recorder's Hydra configuration), ``rejection_summary`` (console summary),
``scene_capture`` (reads root / link state out of a running scene), ``recording_scene`` (the scene facts a
recording needs: pool, roots, clutter and supports), ``recording`` (the recorder's batches: reset, settle,
check; ``collect_settled_placements``), ``recording_output`` (writing them batch by batch to JSONL, kept on
Ctrl-C / SIGTERM; ``record_settled_placement_layouts`` / ``record_placements_to_jsonl``).
"""
