"""Offline placement: settle solved layouts with physics, check them after physics, record them.

Modules: ``settled_batch`` (measured state after settling), ``post_physics_validation`` (checks on it),
``recording_config`` (the recorder's Hydra configuration), ``rejection_summary`` (console summary).
"""
