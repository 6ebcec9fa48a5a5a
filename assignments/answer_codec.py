"""Answers as data: encode Python values to bytes and back, without pickle.

The grader and the sandbox exchange check inputs and answers through this module only. A
value becomes a JSON tree plus a list of NumPy arrays, packed into one ``.npz`` archive that
:func:`unpack` reads with ``allow_pickle=False``: decoding never runs code from the archive.

What can be encoded: ``None``, ``bool``, ``int``, ``float`` (NaN and infinities included),
``complex``, ``str``, ``bytes``, ``Ellipsis``; NumPy scalars and arrays of numbers, booleans
or strings (their dtype is kept, so ``np.float64(1)`` stays a NumPy scalar); PyTorch tensors
of numbers or booleans, detached and moved to the CPU (their dtype is kept; a dtype NumPy
has no equivalent of, such as bfloat16, is not encoded); lists, tuples, sets and
dictionaries of these (any encodable, hashable keys); and functions of ``posenc`` or
``numpy`` by name (``posenc.sinusoidal``), which the other side looks up in its own copy
of the package. Anything else becomes an :class:`Unsupported` stand-in that names the type,
so a check that receives it fails with a clear message instead of the grader crashing.

This file is copied into the sandbox and must import nothing but the standard library and
NumPy at the top: PyTorch is imported only to decode a tensor (a value that holds one was
made where PyTorch is installed), and a tensor is recognised on encoding only if the
encoding process has imported PyTorch already.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import math
import sys
from typing import Any

import numpy as np

#: Nesting deeper than this is not encoded (a self-referencing list would never end).
MAX_DEPTH = 20
#: Longest string kept, in characters; longer ones are cut.
MAX_STRING = 100_000
#: Modules whose functions can be passed by name.
FUNCTION_MODULES = ("posenc", "numpy")


class Unsupported:
    """Stand-in for a value that cannot leave the sandbox as data."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name} object, which the grader cannot read>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unsupported) and other.type_name == self.type_name

    def __hash__(self) -> int:
        return hash(("Unsupported", self.type_name))


class CodecError(ValueError):
    """Raised when bytes do not decode to a value."""


def _function_name(value: Any) -> str | None:
    module = getattr(value, "__module__", None) or ""
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not name or "<" in name or module.split(".")[0] not in FUNCTION_MODULES:
        return None
    return f"{module}:{name}"


def _is_tensor(value: Any) -> bool:
    """True for a PyTorch tensor (a ``Parameter`` included), without importing PyTorch."""
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None)
    return isinstance(tensor, type) and isinstance(value, tensor)


def _tensor_array(value: Any) -> np.ndarray | None:
    """The values of a tensor as a NumPy array of the same dtype, or None if it has none."""
    try:
        array = value.detach().cpu().resolve_conj().resolve_neg().numpy()
    except Exception:  # bfloat16, quantised or meta tensors have no NumPy equivalent
        return None
    return np.array(array, copy=True) if array.dtype.kind in "biufc" else None


def encode(value: Any, arrays: list[np.ndarray], depth: int = 0) -> Any:
    """The JSON tree of ``value``; arrays are appended to ``arrays`` and referenced by index."""
    if depth > MAX_DEPTH:
        return {"t": "unsupported", "v": "deeply nested value"}
    if value is None or (isinstance(value, (bool, str)) and not isinstance(value, np.generic)):
        if isinstance(value, str) and len(value) > MAX_STRING:
            value = value[:MAX_STRING]
        return {"t": "json", "v": value}
    if value is Ellipsis:
        return {"t": "ellipsis"}
    if type(value) is int:
        return {"t": "int", "v": str(value)}
    if type(value) is float:
        return {"t": "float", "v": repr(value)}
    if type(value) is complex:
        return {"t": "complex", "v": [repr(value.real), repr(value.imag)]}
    if isinstance(value, bytes):
        arrays.append(np.frombuffer(value, dtype=np.uint8).copy())
        return {"t": "bytes", "i": len(arrays) - 1}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.kind not in "biufcUS":
            return {"t": "unsupported", "v": f"NumPy array of dtype {array.dtype}"}
        arrays.append(array if isinstance(value, np.ndarray) else array.reshape(()))
        return {"t": "array" if isinstance(value, np.ndarray) else "scalar", "i": len(arrays) - 1}
    if _is_tensor(value):
        array = _tensor_array(value)
        if array is None:
            return {"t": "unsupported", "v": f"PyTorch tensor of dtype {value.dtype}"}
        arrays.append(array)
        return {"t": "tensor", "i": len(arrays) - 1}
    if type(value) in (list, tuple, set, frozenset):
        items = [encode(item, arrays, depth + 1) for item in value]
        return {"t": type(value).__name__, "v": items}
    if type(value) is dict:
        items = [[encode(k, arrays, depth + 1), encode(v, arrays, depth + 1)]
                 for k, v in value.items()]
        return {"t": "dict", "v": items}
    if callable(value):
        name = _function_name(value)
        if name is not None:
            return {"t": "function", "v": name}
    return {"t": "unsupported", "v": type(value).__name__}


def decode(tree: Any, arrays: list[np.ndarray]) -> Any:
    """The value that :func:`encode` turned into ``tree``; raises :class:`CodecError`."""
    try:
        kind = tree["t"]
        if kind == "json":
            if tree["v"] is not None and not isinstance(tree["v"], (bool, str)):
                raise CodecError("a json leaf must be None, a bool or a string")
            return tree["v"]
        if kind == "ellipsis":
            return ...
        if kind == "int":
            if len(tree["v"]) > 5000:
                raise CodecError("integer too long")
            return int(tree["v"])
        if kind == "float":
            return float(tree["v"])
        if kind == "complex":
            return complex(float(tree["v"][0]), float(tree["v"][1]))
        if kind == "bytes":
            return arrays[tree["i"]].tobytes()
        if kind == "array":
            return arrays[tree["i"]].copy()
        if kind == "scalar":
            return arrays[tree["i"]][()]
        if kind == "tensor":
            array = arrays[tree["i"]]
            if array.dtype.kind not in "biufc":
                raise CodecError(f"a tensor of dtype {array.dtype}")
            import torch

            return torch.from_numpy(array.copy())
        if kind in ("list", "tuple", "set", "frozenset"):
            items = [decode(item, arrays) for item in tree["v"]]
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[kind](items)
        if kind == "dict":
            return {decode(k, arrays): decode(v, arrays) for k, v in tree["v"]}
        if kind == "function":
            module, _, name = str(tree["v"]).partition(":")
            if module.split(".")[0] not in FUNCTION_MODULES:
                raise CodecError(f"functions of {module} are not passed by name")
            found: Any = importlib.import_module(module)
            for part in name.split("."):
                found = getattr(found, part)
            return found
        if kind == "unsupported":
            return Unsupported(str(tree["v"]))
    except CodecError:
        raise
    except Exception as error:  # malformed trees come from the sandbox: report, never crash
        raise CodecError(f"malformed value: {type(error).__name__}: {error}") from None
    raise CodecError(f"unknown kind {kind!r}")


def pack(value: Any) -> bytes:
    """``value`` as the bytes of an ``.npz`` archive (a JSON tree and its arrays)."""
    arrays: list[np.ndarray] = []
    tree = encode(value, arrays)
    text = json.dumps(tree, allow_nan=False).encode("utf-8")
    buffer = io.BytesIO()
    named = {f"a{i}": array for i, array in enumerate(arrays)}
    np.savez(buffer, tree=np.frombuffer(text, dtype=np.uint8), **named)
    return buffer.getvalue()


def unpack(data: bytes) -> Any:
    """The value that :func:`pack` wrote; raises :class:`CodecError` on anything else."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            tree = json.loads(archive["tree"].tobytes().decode("utf-8"))
            count = sum(1 for key in archive.files if key.startswith("a"))
            arrays = [archive[f"a{i}"] for i in range(count)]
    except CodecError:
        raise
    except Exception as error:  # not an archive this module wrote
        raise CodecError(f"unreadable data: {type(error).__name__}: {error}") from None
    return decode(tree, arrays)


def key(value: Any) -> str:
    """A digest that is equal for values that encode identically (the arguments of a call)."""
    arrays: list[np.ndarray] = []
    tree = encode(value, arrays)
    digest = hashlib.sha256(json.dumps(tree, sort_keys=True).encode("utf-8"))
    for array in arrays:
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def close(a: Any, b: Any, depth: int = 0) -> bool:
    """True if two decoded values have the same structure and numbers equal to rounding.

    Used to match a call whose arguments differ from a recorded one only in the last bits
    (a sum taken in another order); integers, strings and shapes must be equal.
    """
    if depth > MAX_DEPTH or type(a) is not type(b):
        return False
    if _is_tensor(a):
        a, b = _tensor_array(a), _tensor_array(b)
        if a is None or b is None:
            return False
    if isinstance(a, np.ndarray) or isinstance(a, np.generic):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            return bool(np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, depth + 1) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(close(a[k], b[k], depth + 1) for k in a)
    try:
        return bool(a == b)
    except Exception:  # an object whose comparison fails is not equal
        return False
