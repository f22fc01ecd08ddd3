"""The problem a spec section reports; ``ArenaEnvGraphSpec`` adds the file name and raises ``EnvSpecError``."""

from __future__ import annotations


class SpecIssue(ValueError):
    """One problem in a spec: ``message`` plus where it is (``where``: the node, ``key``, ``line``)."""

    def __init__(self, message: str, *, where: str | None = None, key: str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.key = key
        self.line = line

    def located(self, *, where: str | None = None, key: str | None = None, line: int | None = None) -> "SpecIssue":
        """Fills in location fields that are still unknown (inner details win)."""
        self.where = self.where or where
        self.key = self.key or key
        self.line = self.line or line
        return self
