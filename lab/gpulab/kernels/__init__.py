"""CUDA C kernels for the probes, shipped as package data and compiled on first use.

Each topic is one `.cu` file beside this module (`copy.cu`, `stride.cu`,
`chase.cu`, `smem.cu`, `divergence.cu`, `fma.cu`, `spin.cu`), so the CUDA C reads as
CUDA C, not as a Python string. `source(topic)` gives its text; `module(topic)`
compiles it with `cupy.RawModule` (NVRTC) once per process; `function(topic,
name)` gives one `extern "C" __global__` function, ready to launch with an
explicit grid, block and arguments.

CuPy is imported only when a module is compiled, so `import gpulab.kernels`
works on a machine without a GPU. The thin launchers that the probes use live
in `gpulab.kernels.launch`.
"""

from __future__ import annotations

import functools
import importlib
import re
from importlib.resources import files
from typing import Any

from gpulab.errors import GpulabError

__all__ = ["TOPICS", "KernelError", "function", "kernel_names", "module", "source"]

TOPICS: tuple[str, ...] = ("copy", "stride", "chase", "smem", "divergence", "fma", "spin")

_ENTRY = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')


class KernelError(GpulabError):
    """A kernel topic or function that does not exist."""


def source(topic: str) -> str:
    """The CUDA C text of one topic, read from the package's `.cu` file."""
    if topic not in TOPICS:
        raise KernelError(
            f"no kernel topic named {topic!r}\n    hint: the topics are {', '.join(TOPICS)}"
        )
    return files(__name__).joinpath(f"{topic}.cu").read_text(encoding="utf-8")


def kernel_names(topic: str) -> tuple[str, ...]:
    """The `extern "C" __global__` functions a topic defines, in file order."""
    return tuple(_ENTRY.findall(source(topic)))


@functools.cache
def module(topic: str) -> Any:
    """The topic compiled by NVRTC into a `cupy.RawModule`, once per process.

    CuPy also keeps the compiled code in its on-disk kernel cache, so a later
    process skips NVRTC as well.
    """
    cupy = importlib.import_module("cupy")

    return cupy.RawModule(code=source(topic), options=("--std=c++17",))


@functools.cache
def function(topic: str, name: str) -> Any:
    """One kernel of a topic, a `cupy.RawKernel` to call with (grid, block, args).

    Cached, so launching in a timing loop costs no look-up.
    """
    if name not in kernel_names(topic):
        raise KernelError(
            f"{topic}.cu has no kernel named {name!r}\n"
            f"    hint: it defines {', '.join(kernel_names(topic))}"
        )
    return module(topic).get_function(name)
