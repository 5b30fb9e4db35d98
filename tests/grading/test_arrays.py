"""NumPy arrays across the worker's pipe (gpulab.grading.checks.arrays): exact both ways, plain JSON
on the wire, and nothing built from data `pack` cannot have made."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from gpulab.grading.checks.arrays import DTYPES, pack, unpack


def over_the_wire(value: Any) -> Any:
    """What the other side unpacks: the packed value through strict JSON, as the worker
    sends it (no NaN, no infinity)."""
    return unpack(json.loads(json.dumps(pack(value), allow_nan=False)))


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_every_dtype_comes_back_exactly(dtype: str) -> None:
    values = np.arange(-3, 9).reshape(3, 2, 2) % 7
    array = values.astype(dtype)
    if array.dtype.kind == "f":
        array.flat[:3] = [np.nan, np.inf, -np.inf]
    got = over_the_wire(array)
    assert got.dtype == array.dtype and got.shape == array.shape
    assert np.array_equal(got, array, equal_nan=array.dtype.kind == "f")
    got[0] = 0  # a writable array of its own
    scalar = over_the_wire(array.flat[1])
    assert isinstance(scalar, np.generic) and scalar.dtype == array.dtype


def test_containers_numbers_and_views() -> None:
    strided = np.arange(24.0).reshape(4, 6)[::2, ::-3]  # neither C- nor F-contiguous
    big_endian = np.arange(5, dtype=">f4")
    value = {
        "pair": (np.float64(-np.inf), 0.0),
        "list": [1, 2.5, float("nan"), None, True, "text"],
        "views": [strided, big_endian, np.zeros((0, 3))],
    }
    got = over_the_wire(value)
    assert isinstance(got, dict) and isinstance(got["pair"], tuple)
    assert np.isneginf(got["pair"][0]) and got["pair"][1] == 0.0
    assert got["list"][:2] == [1, 2.5] and np.isnan(got["list"][2])
    assert got["list"][3:] == [None, True, "text"]
    assert np.array_equal(got["views"][0], strided)
    assert np.array_equal(got["views"][1], big_endian) and got["views"][1].dtype == np.float32
    assert got["views"][2].shape == (0, 3)


@pytest.mark.parametrize(
    "value",
    [np.array([object()]), np.array(["a"]), {1: 2}, {1, 2}, np.arange(3) + 1j, object()],
)
def test_what_no_check_can_read_is_refused_when_packed(value: Any) -> None:
    with pytest.raises(TypeError):
        pack(value)


@pytest.mark.parametrize(
    "data",
    [
        {"ndarray": {"dtype": "object", "shape": [1], "data": ""}},
        {"ndarray": {"dtype": "float64", "shape": [2], "data": "AAAAAAAAAAA="}},  # 8 bytes
        {"ndarray": {"dtype": "float64", "shape": [10**12, 10**12], "data": ""}},
        {"ndarray": {"dtype": "float64", "shape": [-1], "data": ""}},
        {"ndarray": {"dtype": "float64", "shape": [1] * 9, "data": "AAAAAAAAAAA="}},
        {"ndarray": {"dtype": "float64", "shape": [1], "data": "not base64!"}},
        {"ndarray": [1, 2]},
        {"float": "1e999"},
        {"something": 1},
        {"tuple": [1], "dict": {}},
        {"scalar": {"dtype": "float32", "data": "AAAAAAAAAAA="}},
    ],
)
def test_data_pack_cannot_have_made_is_refused(data: Any) -> None:
    with pytest.raises(ValueError):
        unpack(data)


def test_nesting_is_bounded() -> None:
    deep: Any = 1.0
    for _ in range(40):
        deep = [deep]
    with pytest.raises(TypeError):
        pack(deep)
    with pytest.raises(ValueError):
        unpack(deep)
