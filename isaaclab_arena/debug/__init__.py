"""Debugging aids outside the placement core: the Rerun view of candidate batches (``placement_view``), the
``rerun-sdk`` import (pinned in requirements.txt) and fallback installer (``rerun_import``), and reading a recording back
(``rrd_contents``). The core reaches ``placement_view`` only through ``ObjectPlacer``'s debug hook, by module
name, when ``ObjectPlacerParams.debug_visualize`` or ``debug_visualize_output_path`` is set."""
