"""Example Arena environments and the assets they use (shipped in the repo or built by the project)."""
