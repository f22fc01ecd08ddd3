"""Offline placement: settle solved layouts with physics, check them after physics, record them.

Modules: ``settled_batch`` (measured state after settling), ``post_physics_validation`` (checks on it),
``recording_config`` (the recorder's Hydra configuration), ``rejection_summary`` (console summary),
``scene_capture`` (reads root / link state out of a running scene), ``recording_scene`` (the scene facts a
recording needs: pool, roots, clutter and supports), ``recording`` (the recorder: reset, settle, check,
write; ``record_settled_placement_layouts`` / ``record_placements_to_jsonl`` / ``collect_settled_placements``).
"""
