"""The toolchain checks' own compiles: NVRTC's PTX and the driver's register counts.

`own_ptx` compiles CUDA C to PTX with NVRTC (through CuPy's binding, the same
library the learner's `compile_ptx` reaches) for a virtual architecture such
as ``compute_90``; `own_registers` compiles a kernel for this GPU the way
CuPy's RawModule does and reads what the driver says it uses: registers per
thread (``num_regs``) and local memory per thread (``local_size_bytes``,
where spilled registers go). `heavy_source` is the checks' own copy of the
kernel whose register count the learner predicts and measures, uncapped,
under ``--maxrregcount`` and under ``__launch_bounds__``. `source_problem`
holds a learner's kernel to the rules of kernel answers before anything
compiles it. Only the checks call these; CuPy is imported when one runs.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from typing import Any

__all__ = [
    "HEAVY_VALUES",
    "device_capability",
    "heavy_source",
    "nvrtc_version",
    "own_ptx",
    "own_registers",
    "source_problem",
    "virtual_arch",
]

HEAVY_VALUES = 96  # live floats per thread in the notebook's heavy kernel

_HEAVY = r"""
extern "C" __global__ void BOUNDS heavy(const float* __restrict__ in,
                                        float* __restrict__ out, int n, int rounds)
{
    // VALUES floats live in every thread for the whole loop: the compiler wants
    // about that many registers, or spills some to local memory when capped.
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[VALUES];
#pragma unroll
    for (int j = 0; j < VALUES; ++j) v[j] = in[(i + j) % n];
    for (int r = 0; r < rounds; ++r) {
#pragma unroll
        for (int j = 0; j < VALUES; ++j) v[j] = fmaf(v[j], v[(j + 1) % VALUES], 0.5f);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < VALUES; ++j) s += v[j];
    out[i] = s;
}
"""


def _cupy() -> Any:
    return importlib.import_module("cupy")


def heavy_source(values: int = HEAVY_VALUES, bounds: str = "") -> str:
    """The heavy kernel with `values` live floats per thread; `bounds` is placed before its
    name (``"__launch_bounds__(1024)"``, or nothing)."""
    return _HEAVY.replace("VALUES", str(int(values))).replace("BOUNDS", bounds)


def device_capability() -> tuple[int, int]:
    """The compute capability of the GPU the checks run on, as (major, minor)."""
    digits = str(_cupy().cuda.Device().compute_capability)  # "90" for 9.0, "103" for 10.3
    return int(digits[:-1]), int(digits[-1])


def virtual_arch() -> str:
    """This GPU's virtual architecture, as NVRTC's --gpu-architecture takes it: compute_90."""
    major, minor = device_capability()
    return f"compute_{major}{minor}"


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    """The NVRTC CuPy compiles with, as (major, minor)."""
    major, minor = _cupy().cuda.nvrtc.getVersion()
    return int(major), int(minor)


def own_ptx(source: str, arch: str, options: Sequence[str] = ()) -> str:
    """PTX for `arch` (``compute_90``) from NVRTC, with `options` passed through; a failed
    compile raises ValueError with NVRTC's log."""
    nvrtc = _cupy().cuda.nvrtc
    program = nvrtc.createProgram(source, "kernel.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(program, (f"--gpu-architecture={arch}", *options))
        except nvrtc.NVRTCError:
            log = nvrtc.getProgramLog(program).strip()
            raise ValueError(f"NVRTC could not compile it for {arch}:\n{log[:1500]}") from None
        ptx = nvrtc.getPTX(program)
    finally:
        nvrtc.destroyProgram(program)
    text = ptx.decode() if isinstance(ptx, bytes | bytearray) else str(ptx)
    return text.rstrip("\x00")


def own_registers(source: str, name: str, options: Sequence[str] = ()) -> dict[str, int]:
    """What the driver says kernel `name` uses once compiled for this GPU with `options`:
    ``{"registers": per thread, "local_bytes": local memory per thread}``."""
    cp = _cupy()
    kernel = cp.RawModule(code=source, options=tuple(options)).get_function(name)
    return {"registers": int(kernel.num_regs), "local_bytes": int(kernel.local_size_bytes)}


def source_problem(source: Any) -> str | None:
    """Why a learner's kernel source must not be compiled by the checks (not text, too long,
    or a broken rule of kernel answers), or None."""
    from gpulab.grading.checks.gpu import MAX_SOURCE_BYTES
    from gpulab.grading.checks.tasks.rules import Rules, violations

    if not isinstance(source, str):
        return f"a kernel's source should be a string of CUDA C, not {type(source).__name__}"
    if len(source.encode()) > MAX_SOURCE_BYTES:
        return f"a kernel's source is over {MAX_SOURCE_BYTES // 1024} KiB"
    broken = violations(source, Rules("toolchain"))
    if broken:
        return "it breaks a rule of kernel answers: " + "; ".join(v.message() for v in broken[:3])
    return None
