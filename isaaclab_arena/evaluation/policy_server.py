"""Serves a policy over gRPC so that runners in other processes (or on other machines) use it as ``--policy_type
remote``.

    scripts/arena_python.sh isaaclab_arena/evaluation/policy_server.py --policy_type my_policy.MyPolicy \\
        --policy_arg gain=0.5 --checkpoint_path model.pt --port 50051

The server listens on 127.0.0.1 unless ``--host`` says otherwise and prints
``[policy_server] serving <policy> on <host>:<port>`` when it is ready (``--port 0`` picks a free port and prints
it). With ``--token`` (or the env var ``ARENA_POLICY_TOKEN``) every call must carry the same token. Each client
(``isaaclab_arena.evaluation.remote_policy.RemotePolicy``) gets its own policy, built with
``make_policy(policy_type, EnvInfo(...), settings)`` from the client's env description; actions are checked with
``check_action`` before they are sent. Ctrl-C or SIGTERM stops it.

Messages are the bytes of ``remote_protocol.py`` (JSON header + raw arrays; nothing is unpickled). Service
``isaaclab_arena.PolicyServer``, unary methods ``Init``, ``Reset``, ``GetAction``, ``Close``.
"""

from __future__ import annotations

if __name__ == "__main__":  # Ctrl-C during start-up (imports take seconds): one line, no traceback
    import _signal  # loaded with the interpreter (importing ``signal`` runs Python code a Ctrl-C can land in)

    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})  # held until quiet_interrupts() has its handler
    from isaaclab_arena.utils.interrupts import quiet_interrupts
    from isaaclab_arena.utils.runner_gc import collect_rarely, skip_collection_at_exit

    quiet_interrupts()
    collect_rarely()  # full garbage collections 100x rarer: 0.5-1.5 s less per run (utils/runner_gc.py)
    skip_collection_at_exit()  # and none at exit: about 1 s less

import hmac
import os
import signal
import sys
import threading
import traceback
import uuid

if __package__ in (None, ""):  # run as a script: the checkout root is on PYTHONPATH (arena_python.sh) or next to us
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

SERVICE = "isaaclab_arena.PolicyServer"
TOKEN_METADATA_KEY = "arena-policy-token"
TOKEN_ENV_VAR = "ARENA_POLICY_TOKEN"
DEFAULT_PORT = 50051
#: gRPC channel options of both sides: observations of many envs exceed gRPC's 4 MiB default.
GRPC_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
_MAX_DETAILS = 4000


def one_line(text: str) -> str:
    """``text`` on one line, shortened to what a gRPC status carries comfortably."""
    line = " ".join(str(text).split())
    return line if len(line) <= _MAX_DETAILS else line[:_MAX_DETAILS - 3] + "..."


class _Abort(Exception):
    """Ends a call with a gRPC status code and one line of details."""

    def __init__(self, code, details: str):
        super().__init__(details)
        self.code, self.details = code, one_line(details)


class _Session:
    def __init__(self, policy, info):
        self.policy, self.info = policy, info
        self.lock = threading.Lock()


class PolicyService:
    """The four methods of the server: one policy per session, built from the client's env description."""

    def __init__(self, policy_type: str, settings: dict, device: str = "cpu", token: str | None = None,
                 log=print):
        self.policy_type, self.settings, self.device, self.token = policy_type, dict(settings), device, token
        self.sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
        self._log = log

    # ---- gRPC plumbing --------------------------------------------------------------------------------------
    def generic_handler(self):
        import grpc

        from isaaclab_arena.evaluation.remote_protocol import encode_message

        def handler(method):
            def behavior(request, context):
                try:
                    self._check_token(context)
                    if isinstance(request, Exception):  # the request bytes did not decode (see _decode_request)
                        raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad request: {request}")
                    return method(*request)
                except _Abort as err:
                    context.abort(err.code, err.details)
            return grpc.unary_unary_rpc_method_handler(
                behavior, request_deserializer=_decode_request,
                response_serializer=lambda reply: encode_message(*reply))

        methods = {"Init": self.init, "Reset": self.reset, "GetAction": self.get_action, "Close": self.close}
        return grpc.method_handlers_generic_handler(SERVICE, {name: handler(m) for name, m in methods.items()})

    def _check_token(self, context) -> None:
        if self.token is None:
            return
        import grpc

        given = dict(context.invocation_metadata()).get(TOKEN_METADATA_KEY)
        if given is None or not hmac.compare_digest(str(given).encode(), self.token.encode()):
            what = "no token" if given is None else "a wrong token"
            raise _Abort(grpc.StatusCode.UNAUTHENTICATED,
                         f"the call carried {what} in its {TOKEN_METADATA_KEY} metadata")

    def _session(self, meta) -> _Session:
        import grpc

        sid = meta.get("session")
        with self._lock:
            session = self.sessions.get(sid) if isinstance(sid, str) else None
        if session is None:
            raise _Abort(grpc.StatusCode.NOT_FOUND, f"unknown session {sid!r} (the server restarted or the session "
                                                    "was closed); create the RemotePolicy again")
        return session

    def _policy_call(self, what: str, fn, *args):
        """``fn(*args)``; a refusal of the policy comes back as one line, a crash also leaves its traceback here."""
        import grpc

        from isaaclab_arena.evaluation.policy import PolicyError

        try:
            return fn(*args)
        except _Abort:
            raise
        except (PolicyError, ValueError, FileNotFoundError) as err:
            raise _Abort(grpc.StatusCode.FAILED_PRECONDITION, str(err) or type(err).__name__) from None
        except Exception as err:  # noqa: BLE001 - a bug in the policy: keep the traceback on the server's stderr
            traceback.print_exc(file=sys.stderr)
            raise _Abort(grpc.StatusCode.INTERNAL,
                         f"policy {self.policy_type}: {what} raised {type(err).__name__}: {err} (traceback in the "
                         "policy server's output)") from None

    # ---- methods: (meta, tensors) -> (meta, tensors) --------------------------------------------------------
    def init(self, meta, tensors):
        from isaaclab_arena.evaluation.policy import make_policy

        info = self._env_info(meta.get("env_info"))
        policy = self._policy_call("__init__", make_policy, self.policy_type, info, self.settings)
        sid = uuid.uuid4().hex
        with self._lock:
            self.sessions[sid] = _Session(policy, info)
        self._log(f"[policy_server] session {sid[:8]}: {info.num_envs} envs, action_dim {info.action_dim}, "
                  f"observations {dict(info.observation_shapes)}", flush=True)
        return {"session": sid, "policy": self.policy_type}, {}

    def reset(self, meta, tensors):
        import grpc
        import torch

        session = self._session(meta)
        env_ids = tensors.get("env_ids")
        if env_ids is not None:
            if not isinstance(env_ids, torch.Tensor) or env_ids.dim() != 1 or env_ids.dtype != torch.int64:
                raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "reset: env_ids must be a 1-D int64 tensor")
            env_ids = env_ids.to(self.device)
        with session.lock:
            self._policy_call("reset", session.policy.reset, env_ids)
        return {}, {}

    def get_action(self, meta, tensors):
        import grpc
        import torch

        from isaaclab_arena.evaluation.policy import check_action

        session = self._session(meta)
        if "observations" not in tensors:
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, "get_action: the request carries no observations")
        observations = _to_device(tensors["observations"], self.device)
        with session.lock:
            action = self._policy_call("get_action", session.policy.get_action, session.info, observations)
            action = self._policy_call("get_action", check_action, action, session.info, self.policy_type)
        return {}, {"actions": action.detach().to(torch.float32)}

    def close(self, meta, tensors):
        sid = meta.get("session")
        with self._lock:
            session = self.sessions.pop(sid, None) if isinstance(sid, str) else None
        if session is not None:
            closer = getattr(session.policy, "close", None)
            if callable(closer):
                try:
                    closer()
                except Exception:  # noqa: BLE001 - best effort
                    traceback.print_exc(file=sys.stderr)
            self._log(f"[policy_server] session {sid[:8]} closed", flush=True)
        return {"closed": session is not None}, {}

    def close_all(self) -> None:
        for sid in list(self.sessions):
            self.close({"session": sid}, {})

    def _env_info(self, raw):
        import grpc

        from isaaclab_arena.evaluation.policy import EnvInfo

        bad = _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"init: env_info must be an object with num_envs > 0, "
                                                        f"action_dim >= 0, observation_shapes {{group: [dims]}}, "
                                                        f"step_dt; got {raw!r}"[:500])
        if not isinstance(raw, dict):
            raise bad
        num_envs, action_dim = raw.get("num_envs"), raw.get("action_dim")
        shapes, step_dt = raw.get("observation_shapes", {}), raw.get("step_dt", 0.0)
        if not _is_int(num_envs) or num_envs <= 0 or not _is_int(action_dim) or action_dim < 0 \
                or not isinstance(shapes, dict) or not isinstance(step_dt, (int, float)) or isinstance(step_dt, bool) \
                or not all(isinstance(s, list) and all(_is_int(d) for d in s) for s in shapes.values()):
            raise bad
        # The policy runs on this server's device; the client moves the actions to its env's device.
        return EnvInfo(num_envs=num_envs, action_dim=action_dim, device=self.device,
                       observation_shapes={str(k): tuple(v) for k, v in shapes.items()}, step_dt=float(step_dt))


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _decode_request(data: bytes):
    """The request's ``(meta, tensors)``, or the :class:`WireFormatError` (returned, not raised, so that the call
    ends with INVALID_ARGUMENT and its message instead of gRPC's generic deserialisation failure)."""
    from isaaclab_arena.evaluation.remote_protocol import WireFormatError, decode_message

    try:
        return decode_message(data)
    except WireFormatError as err:
        return err


def _to_device(value, device: str):
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value.to(device)


def hostport(host: str, port: int) -> str:
    """``host:port`` (``[host]:port`` for an IPv6 address)."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


# ---- command line -----------------------------------------------------------------------------------------------
def make_parser():
    from isaaclab_arena.utils.arena_argparse import ArenaArgumentParser

    p = ArenaArgumentParser(prog="policy_server.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--policy_type", required=True,
                   help="built-in policy name or a dotted class path package.module.Class (imported from the working "
                        "directory or the environment)")
    p.add_argument("--policy_arg", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the policy (repeatable; values read as JSON when they are JSON)")
    p.add_argument("--checkpoint_path", default=None, help="passed to the policy as checkpoint_path (absolute)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface - use "
                        "--token then)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: a free one)")
    p.add_argument("--token", default=None,
                   help=f"every call must carry this token (default: the env var {TOKEN_ENV_VAR}, else none)")
    p.add_argument("--device", default="cpu", help="torch device the policy runs on (default cpu)")
    p.add_argument("--max_workers", type=int, default=8, help="concurrent calls (default 8)")
    return p


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = make_parser()
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0-65535, got {args.port}")
    if args.max_workers < 1:
        parser.error(f"--max_workers must be >= 1, got {args.max_workers}")
    from isaaclab_arena.evaluation.policy_cli import parse_policy_args

    try:
        settings = parse_policy_args(args.policy_arg)  # the runner's reading: values as YAML scalars
    except ValueError as err:
        parser.error(str(err))
    if args.checkpoint_path is not None:
        path = os.path.abspath(os.path.expanduser(args.checkpoint_path))
        if not os.path.isfile(path):
            parser.error(f"--checkpoint_path {args.checkpoint_path}: no such file (paths are taken from the working "
                         f"directory {os.getcwd()})")
        settings["checkpoint_path"] = path
    token = args.token if args.token is not None else (os.environ.get(TOKEN_ENV_VAR) or None)

    from concurrent import futures

    # gRPC's own log lines (e.g. a failed bind) would duplicate the one-line refusals below; GRPC_VERBOSITY=debug
    # in the environment brings them back.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    import grpc
    import torch

    from isaaclab_arena.evaluation.policy import load_policy_class

    load_policy_class(args.policy_type)  # an unknown policy is refused (PolicyError -> exit 2) before listening
    try:
        torch.empty(0, device=args.device)
    except (RuntimeError, AssertionError) as err:
        parser.error(f"--device {args.device}: {one_line(err)}")

    service = PolicyService(args.policy_type, settings, device=args.device, token=token)
    # so_reuseport 0: a second server on a port already in use is refused instead of silently sharing it.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=args.max_workers),
                         options=[*GRPC_OPTIONS, ("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((service.generic_handler(),))
    try:
        port = server.add_insecure_port(hostport(args.host, args.port))
    except RuntimeError:
        port = 0
    if not port:
        raise ValueError(f"cannot listen on {hostport(args.host, args.port)}: the port is in use or the host is not an "
                         "address of this machine; pick another --port (0: a free one) or --host")

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    print(f"[policy_server] serving {args.policy_type} on {hostport(args.host, port)}", flush=True)
    if token is not None:
        print(f"[policy_server] every call must carry the token (--token / {TOKEN_ENV_VAR})", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop(grace=1.0).wait()
        service.close_all()
        print("[policy_server] stopped", flush=True)


if __name__ == "__main__":
    from isaaclab_arena.environments.cli import run_main_reporting_user_errors

    run_main_reporting_user_errors(main, sys.argv[1:])
