"""The bytes a remote policy client and ``policy_server.py`` exchange (no pickle: JSON and raw array buffers).

A message is::

    b"ARNA"                       4 bytes, magic
    header length                 4 bytes, unsigned little-endian
    header                        UTF-8 JSON: {"v": 1, "meta": {...}, "arrays": [{"key": [...], "dtype": ..., "shape": [...]}]}
    array buffers                 the arrays' raw little-endian bytes, in header order, back to back

``meta`` is any JSON object (session id, env description, ...). Each array has a ``key`` path (a list of 1 to
:data:`MAX_DEPTH` strings; ``["observations", "policy"]`` is ``tensors["observations"]["policy"]``), a dtype
from :data:`DTYPES` and a shape. :func:`decode_message` checks the magic, the header, every dtype, shape and
size, and that the buffers fill the message exactly; anything else is refused with :class:`WireFormatError`
(one line). Tensors travel through the CPU and come back as CPU torch tensors.
"""

from __future__ import annotations

import json
import math
import struct
import sys
from collections.abc import Mapping

import torch

MAGIC = b"ARNA"
VERSION = 1
#: Dtypes that may travel (wire name -> torch dtype); anything else is refused on both sides.
DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
_NAMES = {dt: name for name, dt in DTYPES.items()}
MAX_DEPTH = 4
MAX_DIMS = 16
MAX_HEADER_BYTES = 16 * 1024 * 1024
_PREFIX = struct.Struct("<4sI")


class WireFormatError(ValueError):
    """A message that is not a well-formed remote-policy message, or a value that cannot be sent (one line)."""


def encode_message(meta: Mapping | None = None, tensors: Mapping | None = None) -> bytes:
    """``meta`` (a JSON-able mapping) and ``tensors`` (``{name: Tensor | {name: Tensor | ...}}``) as bytes.

    Raises :class:`WireFormatError` for a value that is not a tensor or nested mapping of tensors, a dtype outside
    :data:`DTYPES`, or meta that is not JSON.
    """
    if sys.byteorder != "little":  # the wire is little-endian; raw buffers are copied as they are in memory
        raise WireFormatError("remote policies need a little-endian host")
    entries, buffers = [], []
    for key, tensor in _flatten(tensors or {}, ()):
        name = _NAMES.get(tensor.dtype)
        if name is None:
            raise WireFormatError(f"tensor {'/'.join(key)}: dtype {str(tensor.dtype).replace('torch.', '')} cannot be "
                                  f"sent; allowed: {', '.join(DTYPES)}")
        flat = tensor.detach().to("cpu").contiguous().reshape(-1)
        buffers.append(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
        entries.append({"key": list(key), "dtype": name, "shape": list(tensor.shape)})
    try:
        header = json.dumps({"v": VERSION, "meta": dict(meta or {}), "arrays": entries}, allow_nan=False,
                            separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as err:
        raise WireFormatError(f"message meta is not JSON: {err}") from None
    return b"".join([_PREFIX.pack(MAGIC, len(header)), header, *buffers])


def decode_message(data) -> tuple[dict, dict]:
    """``(meta, tensors)`` of a message made by :func:`encode_message`; :class:`WireFormatError` (one line) when
    the bytes are not one."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise WireFormatError(f"a message is bytes, got {type(data).__name__}")
    data = memoryview(data).cast("B")
    if len(data) < _PREFIX.size:
        raise WireFormatError(f"message of {len(data)} bytes is shorter than its {_PREFIX.size}-byte prefix")
    magic, header_len = _PREFIX.unpack_from(data, 0)
    if magic != MAGIC:
        raise WireFormatError(f"not a remote-policy message (starts with {bytes(magic)!r}, expected {MAGIC!r})")
    if header_len > MAX_HEADER_BYTES or _PREFIX.size + header_len > len(data):
        raise WireFormatError(f"bad header length {header_len} in a message of {len(data)} bytes")
    try:
        header = json.loads(bytes(data[_PREFIX.size:_PREFIX.size + header_len]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise WireFormatError(f"message header is not UTF-8 JSON: {str(err).splitlines()[0]}") from None
    if not isinstance(header, dict) or set(header) != {"v", "meta", "arrays"}:
        raise WireFormatError("message header must be a JSON object with exactly v, meta and arrays")
    if header["v"] != VERSION:
        raise WireFormatError(f"message format version {header['v']!r}, this side speaks {VERSION}")
    meta, arrays = header["meta"], header["arrays"]
    if not isinstance(meta, dict) or not isinstance(arrays, list):
        raise WireFormatError("message header: meta must be an object and arrays a list")
    specs = [_check_entry(i, entry) for i, entry in enumerate(arrays)]
    body = data[_PREFIX.size + header_len:]
    need = sum(nbytes for _, _, _, nbytes in specs)
    if need != len(body):
        what = "truncated" if need > len(body) else "has trailing bytes"
        raise WireFormatError(f"message {what}: its header describes {need} bytes of arrays, the message carries "
                              f"{len(body)}")
    tensors: dict = {}
    offset = 0
    for key, dtype, shape, nbytes in specs:
        if nbytes:
            tensor = torch.frombuffer(bytearray(body[offset:offset + nbytes]), dtype=dtype).reshape(shape)
        else:
            tensor = torch.empty(shape, dtype=dtype)
        offset += nbytes
        _insert(tensors, key, tensor)
    return meta, tensors


def _flatten(value, prefix: tuple):
    if isinstance(value, torch.Tensor):
        if not prefix:
            raise WireFormatError("tensors must be named: give a mapping {name: tensor}")
        yield prefix, value
        return
    if not isinstance(value, Mapping):
        where = "/".join(prefix) or "tensors"
        raise WireFormatError(f"{where}: expected a torch.Tensor or a mapping of them, got {type(value).__name__}")
    if len(prefix) >= MAX_DEPTH:
        raise WireFormatError(f"{'/'.join(prefix)}: mappings of tensors nest at most {MAX_DEPTH} levels")
    for name, item in value.items():
        if not isinstance(name, str) or not name:
            raise WireFormatError(f"{'/'.join(prefix) or 'tensors'}: keys must be non-empty strings, got {name!r}")
        yield from _flatten(item, (*prefix, name))


def _check_entry(i: int, entry) -> tuple[tuple, torch.dtype, tuple, int]:
    if not isinstance(entry, dict) or set(entry) != {"key", "dtype", "shape"}:
        raise WireFormatError(f"message header: array {i} must be an object with exactly key, dtype and shape")
    key, dtype, shape = entry["key"], entry["dtype"], entry["shape"]
    if not isinstance(key, list) or not 1 <= len(key) <= MAX_DEPTH \
            or not all(isinstance(k, str) and k for k in key):
        raise WireFormatError(f"message header: array {i} key must be a list of 1 to {MAX_DEPTH} non-empty strings, "
                              f"got {key!r}")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise WireFormatError(f"message header: array {'/'.join(key)} has dtype {dtype!r}; allowed: "
                              f"{', '.join(DTYPES)}")
    if not isinstance(shape, list) or len(shape) > MAX_DIMS \
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise WireFormatError(f"message header: array {'/'.join(key)} shape must be a list of at most {MAX_DIMS} "
                              f"integers >= 0, got {shape!r}")
    torch_dtype = DTYPES[dtype]
    nbytes = math.prod(shape) * torch.empty((), dtype=torch_dtype).element_size()
    return tuple(key), torch_dtype, tuple(shape), nbytes


def _insert(tree: dict, key: tuple, tensor: torch.Tensor) -> None:
    node = tree
    for part in key[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise WireFormatError(f"message header: {'/'.join(key)} is both a tensor and a mapping")
    if key[-1] in node:
        raise WireFormatError(f"message header: {'/'.join(key)} appears twice or is both a tensor and a mapping")
    node[key[-1]] = tensor


__all__ = ["DTYPES", "WireFormatError", "decode_message", "encode_message"]
