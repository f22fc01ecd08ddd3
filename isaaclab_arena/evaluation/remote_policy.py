"""``--policy_type remote``: a policy served by ``policy_server.py`` in another process or on another machine.

    # terminal 1
    scripts/arena_python.sh isaaclab_arena/evaluation/policy_server.py --policy_type my_policy.MyPolicy --port 50051
    # terminal 2
    scripts/arena_python.sh isaaclab_arena/evaluation/policy_runner.py --policy_type remote \\
        --policy_arg remote_port=50051 ...

:class:`RemotePolicy` sends the env's description (:meth:`EnvInfo.of`) when it is built, and the observations at
every step; the server's policy answers with actions, which come back as float32 on the env's device. Every call
has a deadline (``remote_timeout_s``); a server that is not there, stops answering, refuses the token or whose
policy fails raises :class:`PolicyError` with one line saying so.
"""

from __future__ import annotations

import os

import torch

from isaaclab_arena.evaluation.policy import EnvInfo, PolicyError, check_action
from isaaclab_arena.evaluation.policy_server import (DEFAULT_PORT, GRPC_OPTIONS, SERVICE, TOKEN_ENV_VAR,
                                                     TOKEN_METADATA_KEY, hostport, one_line)
from isaaclab_arena.evaluation.remote_protocol import WireFormatError, decode_message, encode_message

_START_HINT = "scripts/arena_python.sh isaaclab_arena/evaluation/policy_server.py --policy_type <policy> --port {port}"


class RemotePolicy:
    """A policy whose ``reset`` and ``get_action`` run on a policy server (``policy_server.py``).

    Args:
        env: The env (or an :class:`EnvInfo`); its description is sent to the server, which builds its policy.
        remote_host: The server's address (default 127.0.0.1).
        remote_port: The server's port (default 50051).
        remote_token: The server's token (default: the env var ``ARENA_POLICY_TOKEN``, else none).
        remote_timeout_s: Deadline of every call, seconds (also how long construction waits for the server).
    """

    def __init__(self, env, remote_host: str = "127.0.0.1", remote_port: int = DEFAULT_PORT,
                 remote_token: str | None = None, remote_timeout_s: float = 30.0):
        import grpc

        self._channel = None
        self._session = None
        try:
            port = int(remote_port)
            timeout = float(remote_timeout_s)
        except (TypeError, ValueError):
            raise PolicyError(f"policy remote: remote_port must be an integer and remote_timeout_s a number of "
                              f"seconds, got {remote_port!r} and {remote_timeout_s!r}") from None
        if not 0 < port <= 65535 or not timeout > 0:
            raise PolicyError(f"policy remote: remote_port must be 1-65535 and remote_timeout_s > 0, got {port} and "
                              f"{timeout}")
        self.info = EnvInfo.of(env)
        self.address = hostport(str(remote_host), port)
        self.timeout_s = timeout
        token = remote_token if remote_token is not None else (os.environ.get(TOKEN_ENV_VAR) or None)
        self._metadata = ((TOKEN_METADATA_KEY, str(token)),) if token is not None else ()
        self._start_hint = _START_HINT.format(port=port)
        self._channel = grpc.insecure_channel(self.address, options=GRPC_OPTIONS)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            self._channel.close()
            self._channel = None
            raise PolicyError(f"policy server {self.address} is not answering (UNAVAILABLE: no connection within "
                              f"{timeout:g} s); start it with {self._start_hint}") from None
        self._calls = {name: self._channel.unary_unary(f"/{SERVICE}/{name}", request_serializer=None,
                                                       response_deserializer=None)
                       for name in ("Init", "Reset", "GetAction", "Close")}
        try:
            meta, _ = self._call("Init", {"env_info": {
                "num_envs": self.info.num_envs, "action_dim": self.info.action_dim, "device": self.info.device,
                "observation_shapes": {str(k): [int(d) for d in v] for k, v in self.info.observation_shapes.items()},
                "step_dt": float(self.info.step_dt)}})
        except PolicyError:
            self.close()
            raise
        self._session = meta.get("session")
        self.remote_policy_type = meta.get("policy", "?")
        if not isinstance(self._session, str):
            raise PolicyError(f"policy server {self.address} answered Init without a session id")

    def reset(self, env_ids: torch.Tensor | None = None) -> None:
        """The envs ``env_ids`` (None: all) start new episodes, on the server's policy."""
        tensors = {}
        if env_ids is not None:
            tensors["env_ids"] = torch.as_tensor(env_ids, dtype=torch.int64).reshape(-1).cpu()
        self._call("Reset", {"session": self._session}, tensors)

    def get_action(self, env, observations) -> torch.Tensor:
        """The server's actions for ``observations`` (a tensor, or ``{group: tensor}``, nested up to 3 levels), as a
        ``(num_envs, action_dim)`` float32 tensor on the env's device."""
        _, tensors = self._call("GetAction", {"session": self._session}, {"observations": observations})
        action = tensors.get("actions")
        if action is None:
            raise PolicyError(f"policy server {self.address} answered GetAction without actions")
        action = action.to(device=self.info.device, dtype=torch.float32)
        return check_action(action, self.info, f"remote ({self.remote_policy_type} at {self.address})")

    def close(self) -> None:
        """Ends the session on the server (best effort) and closes the connection."""
        channel, session = getattr(self, "_channel", None), getattr(self, "_session", None)
        self._channel = self._session = None
        if channel is None:
            return
        if session is not None:
            try:
                self._calls["Close"](encode_message({"session": session}), timeout=min(self.timeout_s, 2.0),
                                     metadata=self._metadata)
            except Exception:  # noqa: BLE001 - the server may be gone already
                pass
        channel.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # ---- one call ------------------------------------------------------------------------------------------
    def _call(self, name: str, meta: dict, tensors: dict | None = None) -> tuple[dict, dict]:
        import grpc

        if self._channel is None:
            raise PolicyError(f"policy remote: the connection to {getattr(self, 'address', '?')} is closed")
        try:
            request = encode_message(meta, tensors)
        except WireFormatError as err:
            raise PolicyError(f"policy remote: cannot send {name} to {self.address}: {err}") from None
        try:
            reply = self._calls[name](request, timeout=self.timeout_s, metadata=self._metadata)
        except grpc.RpcError as err:
            raise PolicyError(self._explain(err)) from None
        try:
            return decode_message(reply)
        except WireFormatError as err:
            raise PolicyError(f"policy server {self.address} sent a malformed {name} reply: {err}") from None

    def _explain(self, err) -> str:
        import grpc

        code = err.code() if callable(getattr(err, "code", None)) else None
        details = one_line(err.details() if callable(getattr(err, "details", None)) else str(err))
        cname = code.name if code is not None else "ERROR"
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return (f"policy server {self.address} is not answering ({cname}: {details}, deadline "
                    f"{self.timeout_s:g} s); start it with {self._start_hint}")
        if code == grpc.StatusCode.UNAUTHENTICATED:
            return (f"policy server {self.address} refused the token ({details}); give its token with "
                    f"--policy_arg remote_token=... or {TOKEN_ENV_VAR}")
        if code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INTERNAL):
            return f"policy server {self.address}: {details}"
        return f"policy server {self.address}: {cname}: {details}"


__all__ = ["RemotePolicy"]
