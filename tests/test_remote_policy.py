"""Remote policies: the wire format (no pickle), and ``policy_server.py`` serving a plugin policy in a second
process (started through ``scripts/arena_python.sh`` from a folder outside the repository) to a ``RemotePolicy`` in
the test process: same actions as the policy computed locally, resets reaching the server, the token, a server
that is not there, a policy answering the wrong shape, an unknown ``--policy_type``, a clean stop."""

from __future__ import annotations

import importlib
import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from _outside import LAUNCHER, arena, refusal
from isaaclab_arena.evaluation.policy import EnvInfo, PolicyError
from isaaclab_arena.evaluation.remote_protocol import DTYPES, WireFormatError, decode_message, encode_message

SERVER = "isaaclab_arena/evaluation/policy_server.py"
TOKEN = "s3cret-token"
INFO = EnvInfo(num_envs=4, action_dim=7, observation_shapes={"policy": (4, 39)})

PLUGIN = '''
import torch


class MyPolicy:
    """obs @ W (+ scale), plus how many times each env was reset; W fixed: (39, 7)."""

    def __init__(self, env, scale=1.0):
        self.num_envs = env.num_envs
        self.device = env.device
        self.weight = (torch.arange(39 * 7, dtype=torch.float32).reshape(39, 7) % 5 - 2.0) * float(scale)
        self.resets = torch.zeros(env.num_envs, dtype=torch.float32)

    def reset(self, env_ids=None):
        if env_ids is None:
            self.resets += 1
        else:
            self.resets[env_ids.cpu()] += 1

    def get_action(self, env, observations):
        obs = observations["policy"].to(torch.float32).cpu()
        return (obs @ self.weight + self.resets[:, None]).to(self.device)
'''


# ---- wire format ------------------------------------------------------------------------------------------------
def _sample(dtype: torch.dtype, shape=(3, 2)) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.tensor([True, False, True, True, False, False]).reshape(shape)
    return (torch.arange(6) - 2).reshape(shape).to(dtype)


@pytest.mark.parametrize("name", list(DTYPES))
def test_wire_format_round_trips_every_allowed_dtype(name):
    dtype = DTYPES[name]
    obs = {"policy": _sample(dtype), "critic": {"joint": _sample(dtype, (6,)), "empty": torch.zeros(0, 5, dtype=dtype)},
           "scalar": _sample(dtype)[0, 0]}
    data = encode_message({"session": "abc", "n": [1, 2.5, None]}, {"observations": obs})
    assert isinstance(data, bytes)
    meta, tensors = decode_message(data)
    assert meta == {"session": "abc", "n": [1, 2.5, None]}
    back = tensors["observations"]
    for got, want in [(back["policy"], obs["policy"]), (back["critic"]["joint"], obs["critic"]["joint"]),
                      (back["critic"]["empty"], obs["critic"]["empty"]), (back["scalar"], obs["scalar"])]:
        assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)


def test_wire_format_sends_non_contiguous_tensors_and_refuses_what_it_cannot_send():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    _, back = decode_message(encode_message({}, {"x": t}))
    assert torch.equal(back["x"], t)
    with pytest.raises(WireFormatError, match="complex64"):
        encode_message({}, {"x": torch.zeros(2, dtype=torch.complex64)})
    with pytest.raises(WireFormatError, match="list"):
        encode_message({}, {"x": [1, 2]})
    with pytest.raises(WireFormatError, match="JSON"):
        encode_message({"x": object()}, {})


def _message(header: bytes, body: bytes = b"") -> bytes:
    return b"ARNA" + struct.pack("<I", len(header)) + header + body


def test_wire_format_refuses_malformed_messages():
    good = encode_message({"s": 1}, {"x": torch.ones(2, 3)})
    bad = {
        "truncated": good[:-1],
        "trailing bytes": good + b"\0",
        "prefix": good[:5],
        "not a remote-policy message": b"\x80\x04pickle" + good[8:],
        "bad header length": b"ARNA" + struct.pack("<I", 10 ** 6) + good[8:],
        "not UTF-8 JSON": _message(b"{not json"),
        "exactly v, meta and arrays": _message(b'{"v": 1, "meta": {}}'),
        "version": _message(b'{"v": 2, "meta": {}, "arrays": []}'),
        "dtype 'object'": _message(b'{"v": 1, "meta": {}, "arrays": [{"key": ["x"], "dtype": "object", '
                                   b'"shape": [1]}]}', b"\0" * 8),
        "shape must be": _message(b'{"v": 1, "meta": {}, "arrays": [{"key": ["x"], "dtype": "uint8", '
                                  b'"shape": [-1]}]}'),
        "key must be": _message(b'{"v": 1, "meta": {}, "arrays": [{"key": "x", "dtype": "uint8", "shape": [1]}]}',
                                b"\0"),
        "appears twice": _message(b'{"v": 1, "meta": {}, "arrays": [{"key": ["x"], "dtype": "uint8", "shape": [1]}, '
                                  b'{"key": ["x"], "dtype": "uint8", "shape": [1]}]}', b"\0\0"),
    }
    for what, data in bad.items():
        with pytest.raises(WireFormatError, match=what.replace("(", r"\(")) as err:
            decode_message(data)
        assert "\n" not in str(err.value)
    with pytest.raises(WireFormatError, match="bytes"):
        decode_message("a string")


# ---- server and client in two processes ------------------------------------------------------------------------
def _start_server(folder, *args, env=None) -> tuple[subprocess.Popen, str]:
    """``policy_server.py <args>`` from ``folder``; returns the process and its address once it prints its ready
    line (its output goes to files in ``folder``, so nothing blocks on a full pipe)."""
    out = open(os.path.join(folder, "server.out"), "w")
    err = open(os.path.join(folder, "server.err"), "w")
    full_env = dict(os.environ)
    full_env.pop("ARENA_POLICY_TOKEN", None)
    full_env.update(env or {})
    proc = subprocess.Popen([LAUNCHER, SERVER, *map(str, args)], cwd=folder, stdout=out, stderr=err, env=full_env,
                            start_new_session=True)  # its own process group: _stop ends the launcher's children too
    out.close()
    err.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = _read(folder, "server.out")
        for line in text.splitlines():
            if line.startswith("[policy_server] serving "):
                return proc, line.rsplit(" on ", 1)[1]
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    _stop(proc)
    raise AssertionError(f"no ready line; stdout: {_read(folder, 'server.out')[-2000:]} stderr: "
                         f"{_read(folder, 'server.err')[-3000:]}")


def _read(folder, name) -> str:
    with open(os.path.join(folder, name)) as f:
        return f.read()


def _stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> int:
    """Sends ``sig`` to the server and waits; then kills whatever is left of the group it started."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group of this test's server only (start_new_session=True)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    return proc.returncode


@pytest.fixture(scope="module")
def plugin_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("policy_user")
    (folder / "my_policy.py").write_text(textwrap.dedent(PLUGIN))
    return folder


@pytest.fixture(scope="module")
def server(plugin_folder):
    """The plugin served with a token (given through ARENA_POLICY_TOKEN) on a free port."""
    proc, address = _start_server(plugin_folder, "--policy_type", "my_policy.MyPolicy", "--policy_arg", "scale=0.5",
                                  "--port", "0", env={"ARENA_POLICY_TOKEN": TOKEN})
    try:
        yield proc, address
    finally:
        _stop(proc)


@pytest.fixture()
def local_policy_class(plugin_folder):
    sys.path.insert(0, str(plugin_folder))
    try:
        yield importlib.import_module("my_policy").MyPolicy
    finally:
        sys.path.remove(str(plugin_folder))
        sys.modules.pop("my_policy", None)


def _remote(address: str, info=INFO, **kw):
    from isaaclab_arena.evaluation.remote_policy import RemotePolicy

    host, port = address.rsplit(":", 1)
    return RemotePolicy(info, remote_host=host, remote_port=int(port), **kw)


@pytest.mark.slow
def test_remote_actions_equal_the_local_policy_and_resets_reach_the_server(server, local_policy_class, monkeypatch):
    from isaaclab_arena.evaluation.policy import make_policy

    monkeypatch.delenv("ARENA_POLICY_TOKEN", raising=False)
    proc, address = server
    remote = _remote(address, remote_token=TOKEN, remote_timeout_s=10)
    local = make_policy("my_policy.MyPolicy", INFO, {"scale": 0.5})
    gen = torch.Generator().manual_seed(0)
    try:
        for step in range(3):
            obs = {"policy": torch.randn(4, 39, generator=gen), "critic": torch.randn(4, 3, generator=gen)}
            got = remote.get_action(INFO, obs)
            assert got.dtype == torch.float32 and got.shape == (4, 7) and str(got.device) == "cpu"
            assert torch.allclose(got, local.get_action(INFO, obs), atol=1e-5), step
            env_ids = torch.tensor([1, 3]) if step == 0 else None
            remote.reset(env_ids)
            local.reset(env_ids)
        obs = {"policy": torch.zeros(4, 39)}
        assert remote.get_action(INFO, obs).tolist() == [[2.0] * 7, [3.0] * 7, [2.0] * 7, [3.0] * 7]
        # A second client gets its own session (its own policy: no resets yet).
        other = _remote(address, remote_token=TOKEN)
        assert other.get_action(INFO, obs).abs().sum().item() == 0.0
        other.close()
    finally:
        remote.close()
    assert proc.poll() is None


@pytest.mark.slow
def test_token_from_the_environment_and_a_wrong_or_missing_token_is_refused_fast(server, monkeypatch):
    _, address = server
    monkeypatch.setenv("ARENA_POLICY_TOKEN", TOKEN)
    ok = _remote(address)
    assert ok.get_action(INFO, {"policy": torch.zeros(4, 39)}).shape == (4, 7)
    ok.close()
    for token in ("wrong", None):
        if token is None:
            monkeypatch.delenv("ARENA_POLICY_TOKEN")
        start = time.monotonic()
        with pytest.raises(PolicyError) as err:
            _remote(address, remote_token=token, remote_timeout_s=10)
        assert time.monotonic() - start < 5
        msg = str(err.value)
        assert "refused the token" in msg and "\n" not in msg, msg


@pytest.mark.slow
def test_a_policy_answering_the_wrong_shape_is_refused_naming_both_shapes(server):
    _, address = server
    info = EnvInfo(num_envs=4, action_dim=5, observation_shapes={"policy": (4, 39)})
    remote = _remote(address, info=info, remote_token=TOKEN)
    try:
        with pytest.raises(PolicyError) as err:
            remote.get_action(info, {"policy": torch.ones(4, 39)})
    finally:
        remote.close()
    msg = str(err.value)
    assert "(4, 7)" in msg and "(4, 5)" in msg and "my_policy.MyPolicy" in msg and "\n" not in msg, msg


def test_no_server_is_not_answering_within_the_timeout(monkeypatch):
    monkeypatch.delenv("ARENA_POLICY_TOKEN", raising=False)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(PolicyError) as err:
        _remote(f"127.0.0.1:{port}", remote_timeout_s=2)
    elapsed = time.monotonic() - start
    msg = str(err.value)
    assert elapsed < 4, elapsed
    assert f"policy server 127.0.0.1:{port} is not answering" in msg and "policy_server.py" in msg, msg
    assert "\n" not in msg


@pytest.mark.slow
def test_a_server_that_stops_answering_is_reported_and_sigint_stops_it_cleanly(plugin_folder, monkeypatch):
    monkeypatch.delenv("ARENA_POLICY_TOKEN", raising=False)
    proc, address = _start_server(plugin_folder, "--policy_type", "my_policy.MyPolicy", "--port", "0")
    try:
        remote = _remote(address, remote_timeout_s=2)
        assert remote.get_action(INFO, {"policy": torch.zeros(4, 39)}).shape == (4, 7)
        assert _stop(proc, signal.SIGINT) == 0
        assert "Traceback" not in _read(plugin_folder, "server.err"), _read(plugin_folder, "server.err")
        assert "[policy_server] stopped" in _read(plugin_folder, "server.out")
        start = time.monotonic()
        with pytest.raises(PolicyError, match="is not answering"):
            remote.get_action(INFO, {"policy": torch.zeros(4, 39)})
        assert time.monotonic() - start < 4
        remote.close()
    finally:
        _stop(proc)


@pytest.mark.slow
def test_the_server_refuses_an_unknown_policy_type_before_listening(plugin_folder):
    out = arena(plugin_folder, SERVER, "--policy_type", "no_such_module.Policy", "--port", "0", timeout=120)
    line = refusal(out)
    assert "no_such_module" in line, line
    assert "serving" not in out.stdout


@pytest.mark.slow
def test_the_server_refuses_a_port_already_in_use(server, plugin_folder):
    _, address = server
    out = arena(plugin_folder, SERVER, "--policy_type", "my_policy.MyPolicy", "--port", address.rsplit(":", 1)[1],
                timeout=120)
    line = refusal(out)
    assert f"cannot listen on {address}" in line and "--port" in line, line
    assert "serving" not in out.stdout
