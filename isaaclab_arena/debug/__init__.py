"""Debugging aids outside the placement core: the Rerun view of candidate batches (``placement_view``), the
``rerun-sdk`` import (pinned in requirements.txt) and fallback installer (``rerun_import``), and reading a recording back
(``rrd_contents``), and the ``PlacementExtension`` that hands the view to a placer (``extension.DEBUG_VIEW``, in the
default set). ``placement_view`` and rerun are imported only when a placer with that extension opens the view
(``ObjectPlacerParams.debug_visualize`` or ``debug_visualize_output_path`` set)."""
