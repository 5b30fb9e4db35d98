"""NumPy arrays across the worker's pipe: plain JSON data in, the same arrays out.

A check talks to the learner's worker in plain JSON (`gpulab.grading.checks.worker`):
no NaN, no infinity, nothing pickled. An exercise in NumPy needs more: arrays
of a given dtype and shape, with the infinities a mask writes and the NaNs a
wrong answer gives, back exactly as they were. `pack` turns a value into plain
data, `unpack` turns it back:

    float that JSON cannot hold   {"float": "nan" | "inf" | "-inf"}
    NumPy array                   {"ndarray": {"dtype": "float32", "shape": [2, 3],
                                               "data": base64 of the C-order bytes}}
    NumPy scalar (np.float32(1))  {"scalar": {"dtype": "float32", "data": base64}}
    tuple                         {"tuple": [...]}
    dict                          {"dict": {"key": ...}}

Lists, strings, numbers, booleans and None stay as they are (their items
packed). An exercise's setup cell imports both functions, so the worker packs
what the learner's function returns and the check unpacks it; the check packs
its inputs the same way. `unpack` reads data the learner's code produced: it
builds only arrays of the `DTYPES` below (never objects), checks every length,
and refuses anything else with `ValueError`.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

__all__ = ["DTYPES", "MAX_DEPTH", "pack", "unpack"]

DTYPES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    }
)
"""The dtypes an array may have on either side: plain numbers, never Python objects."""
MAX_DEPTH = 32
"""How deeply containers may nest (a learner's result is data, not a structure)."""
_MAX_DIMS = 8
_TAGS = ("float", "ndarray", "scalar", "tuple", "dict")


def pack(value: Any, _depth: int = 0) -> Any:
    """`value` as plain JSON data that `unpack` turns back into it.

    Raises TypeError for what no check can read (an object array, a set, a class
    instance), saying what it was.
    """
    if _depth > MAX_DEPTH:
        raise TypeError(f"the value nests more than {MAX_DEPTH} levels deep")
    if isinstance(value, np.generic):  # before float: np.float64 is a float too
        packed = _packed_array(np.asarray(value))
        return {"scalar": {"dtype": packed["dtype"], "data": packed["data"]}}
    if isinstance(value, np.ndarray):
        return {"ndarray": _packed_array(value)}
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(float(value))}
    if isinstance(value, tuple):
        return {"tuple": [pack(item, _depth + 1) for item in value]}
    if isinstance(value, list):
        return [pack(item, _depth + 1) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("a dict's keys must be strings")
        return {"dict": {key: pack(item, _depth + 1) for key, item in value.items()}}
    raise TypeError(
        f"a {type(value).__name__} is no value a check can read: return NumPy arrays, "
        "numbers, or tuples and lists of them"
    )


def _packed_array(array: np.ndarray[Any, Any]) -> dict[str, Any]:
    dtype = array.dtype
    if dtype.name not in DTYPES:
        raise TypeError(
            f"an array of dtype {dtype.name} is no value a check can read: use one of "
            f"{', '.join(sorted(DTYPES))}"
        )
    little = np.ascontiguousarray(array, dtype=dtype.newbyteorder("<"))
    return {
        "dtype": dtype.name,
        "shape": list(array.shape),
        "data": base64.b64encode(little.tobytes()).decode("ascii"),
    }


def unpack(data: Any, _depth: int = 0) -> Any:
    """What `pack` made `data` from. Raises ValueError for data `pack` cannot have made."""
    if _depth > MAX_DEPTH:
        raise ValueError(f"the data nests more than {MAX_DEPTH} levels deep")
    if data is None or isinstance(data, bool | int | str):
        return data
    if isinstance(data, float):
        return data
    if isinstance(data, list):
        return [unpack(item, _depth + 1) for item in data]
    if not isinstance(data, dict) or len(data) != 1 or next(iter(data)) not in _TAGS:
        raise ValueError("not packed data: a dict must be one of " + ", ".join(_TAGS))
    tag, body = next(iter(data.items()))
    if tag == "float":
        if body not in ("nan", "inf", "-inf"):
            raise ValueError(f"not a float that JSON cannot hold: {body!r:.40}")
        return float(body)
    if tag == "tuple":
        if not isinstance(body, list):
            raise ValueError("a tuple is packed as a list")
        return tuple(unpack(item, _depth + 1) for item in body)
    if tag == "dict":
        if not isinstance(body, dict):
            raise ValueError("a dict is packed as a dict")
        return {str(key): unpack(item, _depth + 1) for key, item in body.items()}
    if not isinstance(body, dict):
        raise ValueError(f"an {tag} is packed as a dict")
    if tag == "scalar":
        return _array(body.get("dtype"), [], body.get("data"))[()]
    return _array(body.get("dtype"), body.get("shape"), body.get("data"))


def _array(dtype: Any, shape: Any, data: Any) -> np.ndarray[Any, Any]:
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"not a dtype an array may have here: {dtype!r:.40}")
    if (
        not isinstance(shape, list)
        or len(shape) > _MAX_DIMS
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
    ):
        raise ValueError(f"not the shape of an array: {shape!r:.80}")
    if not isinstance(data, str):
        raise ValueError("an array's bytes are packed as base64 text")
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ValueError("an array's bytes are not valid base64") from None
    kind = np.dtype(dtype).newbyteorder("<")
    if len(raw) != math.prod(shape) * kind.itemsize:
        raise ValueError(
            f"{len(raw)} bytes cannot be an array of shape {tuple(shape)} and dtype {dtype}"
        )
    return np.frombuffer(raw, dtype=kind).astype(np.dtype(dtype)).reshape(shape)
