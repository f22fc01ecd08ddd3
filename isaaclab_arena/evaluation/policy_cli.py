"""Policy flags shared by ``policy_runner.py`` and ``policy_server.py`` (imports only argparse and yaml).

``--policy_type`` (a built-in or ``package.module.Class``), ``--policy_arg key=value`` (repeatable; the value is
read as a YAML scalar: ``2.0`` a float, ``true`` a bool, ``[1, 2]`` a list), ``--checkpoint_path`` (given to the
policy as ``checkpoint_path``, from the working directory), and the remote client's ``--remote_host``,
``--remote_port``, ``--remote_token`` (or env ``ARENA_POLICY_TOKEN``), ``--remote_timeout_s``.
"""

from __future__ import annotations

import argparse
import os

BUILTIN_NAMES = ("zero_action", "scripted_pick_and_place", "rsl_rl", "remote")


def add_policy_args(parser: argparse.ArgumentParser, remote: bool = True) -> None:
    parser.add_argument("--policy_type", default="zero_action", metavar="TYPE",
                        help=f"a built-in policy ({', '.join(BUILTIN_NAMES)}) or a dotted class path "
                             "package.module.Class (from the working directory or the environment; docs/EVALUATION.md)")
    parser.add_argument("--policy_arg", action="append", default=[], metavar="KEY=VALUE",
                        help="a keyword setting of the policy's constructor (repeatable; values read as YAML scalars)")
    parser.add_argument("--checkpoint_path", default=None,
                        help="checkpoint the policy loads (rsl_rl: a model_<it>.pt saved by OnPolicyRunner)")
    if remote:
        parser.add_argument("--remote_host", default=None, help="policy server host for --policy_type remote "
                                                                "(default 127.0.0.1)")
        parser.add_argument("--remote_port", type=int, default=None, help="policy server port for --policy_type remote "
                                                                          "(default 50051)")
        parser.add_argument("--remote_token", default=None,
                            help="token the policy server requires (default: env ARENA_POLICY_TOKEN)")
        parser.add_argument("--remote_timeout_s", type=float, default=None,
                            help="deadline of each call to the policy server, seconds (default 30)")


def parse_policy_args(items: list[str], where: str = "--policy_arg") -> dict:
    """``["gain=2.0", "name=x"]`` -> ``{"gain": 2.0, "name": "x"}``; a malformed item raises ``ValueError``."""
    import yaml

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ValueError(f"{where} {item!r}: give KEY=VALUE with KEY a Python identifier (e.g. gain=2.0)")
        try:
            out[key] = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError:
            out[key] = value
    return out


def policy_settings_from_args(args: argparse.Namespace) -> dict:
    """The policy's keyword settings from the parsed flags; remote flags given to another policy are refused."""
    settings = parse_policy_args(args.policy_arg)
    if args.checkpoint_path is not None:
        path = os.path.abspath(os.path.expanduser(args.checkpoint_path))
        if not os.path.isfile(path):
            raise ValueError(f"--checkpoint_path {args.checkpoint_path}: no such file (paths are taken from the working "
                             f"directory {os.getcwd()})")
        settings["checkpoint_path"] = path
    remote = {k: getattr(args, k, None) for k in ("remote_host", "remote_port", "remote_token", "remote_timeout_s")}
    given = {k: v for k, v in remote.items() if v is not None}
    if given and args.policy_type != "remote":
        raise ValueError(f"--{sorted(given)[0]} is a setting of --policy_type remote (got --policy_type "
                         f"{args.policy_type})")
    if args.policy_type == "remote":
        if given.get("remote_port") is not None and not 0 < given["remote_port"] < 65536:
            raise ValueError(f"--remote_port must be in 1..65535, got {given['remote_port']}")
        if given.get("remote_timeout_s") is not None and not given["remote_timeout_s"] > 0:
            raise ValueError(f"--remote_timeout_s must be > 0 seconds, got {given['remote_timeout_s']}")
        settings.update(given)
    return settings
