"""The debug-view extension: the Rerun placement view (``placement_view.py``) as a ``PlacementExtension``. A
placer built with it opens the view when ``ObjectPlacerParams.debug_visualize`` or
``debug_visualize_output_path`` is set; rerun is imported only then. It is in the default set
(``isaaclab_arena.placement_extensions.default_extensions``)."""

from __future__ import annotations

from isaaclab_arena.relations.extensions import PlacementExtension


def open_debug_view(params):
    """The Rerun view for ``ObjectPlacerParams`` ``params`` (``DebugViewerUnavailableError`` without rerun)."""
    from isaaclab_arena.debug.placement_view import open_view

    return open_view(params)


DEBUG_VIEW = PlacementExtension("debug_view", open_view=open_debug_view)
