"""The argument parser of every Arena command line: flags are never matched by prefix, and a refusal is one line.

``ArenaArgumentParser(...)`` is ``argparse.ArgumentParser`` with ``allow_abbrev=False`` (``--num_env 4`` is refused,
not read as ``--num_envs``) whose ``error`` prints ``error: <message> (see <prog> --help)`` on stderr and exits
with status 2, without argparse's usage block.
"""

from __future__ import annotations

import argparse


class ArenaArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` without prefix matching and with one-line refusals (exit status 2)."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")
