"""The argument parser of every Arena command line: flags are never matched by prefix, and a refusal is one line.

``ArenaArgumentParser(...)`` is ``argparse.ArgumentParser`` with ``allow_abbrev=False`` (``--num_env 4`` is refused,
not read as ``--num_envs``) whose ``error`` prints ``error: <message> (see <prog> --help)`` on stderr and exits
with status 2, without argparse's usage block. An unknown flag close to a known one gets a suggestion
(``--num_env`` -> ``did you mean --num_envs?``, by ``difflib``).
"""

from __future__ import annotations

import argparse
import difflib

_UNRECOGNIZED = "unrecognized arguments: "


class ArenaArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` without prefix matching and with one-line refusals (exit status 2)."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def flag_suggestion(self, token: str) -> str | None:
        """The known flag closest to the unknown ``token`` (``--num_env`` -> ``--num_envs``), else None."""
        name = token.split("=", 1)[0]
        if not name.startswith("-"):
            return None
        close = difflib.get_close_matches(name, list(self._option_string_actions), n=1, cutoff=0.75)
        return close[0] if close else None

    def error(self, message: str):
        if message.startswith(_UNRECOGNIZED):
            hints = [f"{tok.split('=', 1)[0]}: did you mean {hint}?" for tok in message[len(_UNRECOGNIZED):].split()
                     if (hint := self.flag_suggestion(tok)) is not None]
            if hints:
                message += f" ({'; '.join(hints)})"
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")
