"""Which given parameter makes a constructor fail, found by building again (never by searching the message).

A registry factory, a relation class or a params dataclass checks its own values and raises ``ValueError``
or ``TypeError`` with a message for people. To point at the YAML key, the loader builds the object again
with one given parameter left out at a time (so that parameter takes its default):

1. the parameters whose removal makes the build succeed are to blame; when several are (two values that
   conflict, e.g. ``radius_min`` above ``radius_max``), the one written last;
2. else, when exactly one removal changes the failure (a required parameter whose value is wrong: without it
   the build fails differently), that one;
3. else no single parameter is to blame and the error names the node only.

Failures are compared as a whole (exception type and arguments), never searched for names. This runs only
after a build failed, so it costs nothing on a spec that loads.
"""

from __future__ import annotations

from typing import Any, Callable


def _outcome(make: Callable[[dict], Any], params: dict) -> tuple[type, tuple] | None:
    try:
        make(params)
    except Exception as err:  # any failure counts: the question is only whether it is the same one
        return type(err), tuple(str(a) for a in err.args)
    return None


def blame_parameter(make: Callable[[dict], Any], params: dict, error: BaseException) -> str | None:
    """The name in ``params`` to blame for ``make(params)`` raising ``error`` (see the module docstring)."""
    failure = (type(error), tuple(str(a) for a in error.args))
    fixes, changes = [], []
    for name in params:
        outcome = _outcome(make, {k: v for k, v in params.items() if k != name})
        if outcome is None:
            fixes.append(name)
        elif outcome != failure:
            changes.append(name)
    if fixes:
        return fixes[-1]
    return changes[0] if len(changes) == 1 else None
