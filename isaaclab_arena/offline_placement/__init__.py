"""Offline placement: settle solved layouts with physics, check them after physics, record them.

Modules: ``settled_batch`` (measured state after settling), ``post_physics_validation`` (checks on it),
``recording_config`` (the recorder's Hydra configuration), ``rejection_summary`` (console summary),
``scene_capture`` (reads root / link state out of a running scene), ``recording_scene`` (the scene facts a
recording needs: pool, roots, clutter and supports), ``recording`` (the recorder's batches: reset, settle,
check; ``collect_settled_placements``), ``recording_output`` (writing them batch by batch to JSONL, kept on
Ctrl-C / SIGTERM; ``record_settled_placement_layouts`` / ``record_placements_to_jsonl``).
"""
