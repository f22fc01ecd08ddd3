"""Layouts after placement: the checks of the numbers in a recorded-layouts file (``layout_values``) and the
replay queue and replay settings (``placement_replay``). The file format itself is
``relations.placement_layouts`` (a path the user documents name); the recorder is ``offline_placement``."""
