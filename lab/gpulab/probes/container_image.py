"""Does a learner's container image fit this machine: its CUDA, toolkit and framework agree
with the driver, and the GPU is visible inside?

`image_check(image)` runs a short shell script (`INSIDE`) in the image with the
machine's GPUs passed in (``docker run --gpus all``, or CDI's ``--device
nvidia.com/gpu=all`` with podman) and judges what it prints (`judge`):

- the GPU is visible inside (``nvidia-smi -L`` lists it, or PyTorch sees it);
- the driver supports the image's CUDA (``CUDA_VERSION``, which NVIDIA's CUDA
  images set, against the "CUDA Version" nvidia-smi prints: the newest CUDA
  the driver runs);
- the image's toolkit is its CUDA (``nvcc``, in a devel image; a runtime or
  base image has none, which is no fault);
- the framework's CUDA runs on the driver: PyTorch's wheels bring their own
  CUDA runtime, which needs a driver of the same CUDA major version or newer
  (minor version compatibility within a major version).

Nothing is pulled: the image must be on this machine (``docker build -t NAME .``
makes it). Where no container runtime answers, or the image is not there, the
result says so and why. `gpulab image check IMAGE` runs it; the registry's
``container_image`` probe reads the image's name from ``GPULAB_IMAGE``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence

from gpulab.environment import IMAGE
from gpulab.probes.model import ProbeResult, Reading
from gpulab.probes.registry import title_of

__all__ = ["INSIDE", "Runtime", "find_runtime", "image_check", "judge", "parse", "probe"]

PROBE = "container_image"
RUN_TIMEOUT_S = 120.0

# What runs in the image. POSIX sh only (a base image has no bash and no Python); every
# line it prints is key=value, and anything else is ignored.
INSIDE = r"""
echo "cuda_version=${CUDA_VERSION:-}"
V='s/.*\(CUDA Version:\|release\) *\([0-9][0-9.]*\).*/\2/p'
if command -v nvidia-smi >/dev/null 2>&1; then
  echo "smi_gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"
  echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
  echo "driver_cuda=$(nvidia-smi 2>/dev/null | sed -n "$V" | head -n 1)"
else
  echo "smi_gpus=none"
fi
if command -v nvcc >/dev/null 2>&1; then
  echo "nvcc=$(nvcc --version 2>/dev/null | sed -n "$V" | head -n 1)"
fi
PY=$(command -v python3 || command -v python || true)
if [ -n "$PY" ]; then
  "$PY" - <<'EOF' 2>/dev/null
import platform
print(f"python={platform.python_version()}")
try:
    import torch
except Exception:
    print("torch=")
else:
    print(f"torch={torch.__version__}")
    print(f"torch_cuda={torch.version.cuda or ''}")
    print(f"torch_gpus={torch.cuda.device_count() if torch.cuda.is_available() else 0}")
EOF
fi
"""

_VERSION = re.compile(r"^(\d+)\.(\d+)")


class Runtime:
    """A container runtime that answers: its program and how it passes GPUs in."""

    def __init__(self, program: str, name: str) -> None:
        self.program, self.name = program, name

    def gpu_args(self) -> list[str]:
        return ["--device", "nvidia.com/gpu=all"] if self.name == "podman" else ["--gpus", "all"]


def find_runtime(names: Sequence[str] = ("docker", "podman")) -> tuple[Runtime | None, str]:
    """The first runtime in `names` that is installed and answers, or None and why not."""
    said = []
    for name in names:
        program = shutil.which(name)
        if program is None:
            said.append(f"{name} is not installed")
            continue
        try:
            done = subprocess.run(
                [program, "info", "--format", "{{json .}}"],
                capture_output=True,
                text=True,
                timeout=20,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            said.append(f"{name} did not answer ({exc})")
            continue
        if done.returncode == 0:
            return Runtime(program, name), ""
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
        said.append(f"{name} is installed but its engine does not answer ({last[0]})")
    return None, "; ".join(said)


def parse(text: str) -> dict[str, str]:
    """The key=value lines `INSIDE` printed."""
    found = {}
    for line in text.splitlines():
        key, equals, value = line.partition("=")
        if equals and re.fullmatch(r"[a-z_]+", key):
            found[key] = value.strip()
    return found


def _major_minor(version: str) -> tuple[int, int] | None:
    match = _VERSION.match(version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _shown(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def judge(found: Mapping[str, str]) -> list[Reading]:
    """Readings from what `INSIDE` printed: versions, and whether they agree."""

    def read(key: str, label: str, value: str, missing: str) -> Reading:
        return Reading(key, label, value) if value else Reading.not_supported(key, label, missing)

    readings = [
        read(
            "image_cuda",
            "CUDA of the image (CUDA_VERSION)",
            found.get("cuda_version", ""),
            "CUDA_VERSION is not set: not one of NVIDIA's CUDA images, or one that unsets it",
        ),
        read(
            "driver_version",
            "NVIDIA driver, seen inside",
            found.get("driver", ""),
            "no nvidia-smi inside: the runtime did not pass the driver in",
        ),
        read(
            "toolkit",
            "CUDA toolkit in the image (nvcc)",
            found.get("nvcc", ""),
            "no nvcc: a runtime or base image (compile in a devel image)",
        ),
        read(
            "framework", "PyTorch in the image", found.get("torch", ""), "no PyTorch in the image"
        ),
    ]
    gpus = found.get("smi_gpus", "none")
    torch_gpus = found.get("torch_gpus", "")
    if (gpus.isdigit() and int(gpus) > 0) or (torch_gpus.isdigit() and int(torch_gpus) > 0):
        readings.append(
            Reading(
                "gpu_visible",
                "GPU visible inside",
                True,
                detail=f"nvidia-smi lists {gpus}"
                if gpus.isdigit()
                else f"PyTorch sees {torch_gpus}",
            )
        )
    else:
        why = (
            "nvidia-smi is not in the image and PyTorch sees none"
            if gpus == "none"
            else "nvidia-smi lists no GPU"
        )
        readings.append(Reading("gpu_visible", "GPU visible inside", False, detail=why))
    driver_cuda = _major_minor(found.get("driver_cuda", ""))
    image_cuda = _major_minor(found.get("cuda_version", ""))
    key, label = "driver_runs_image_cuda", "The driver runs the image's CUDA"
    if driver_cuda is None or image_cuda is None:
        readings.append(
            Reading.unknown(
                key,
                label,
                "needs the image's CUDA_VERSION and the driver's CUDA version, seen inside",
            )
        )
    else:
        fits = driver_cuda >= image_cuda
        readings.append(
            Reading(
                key,
                label,
                fits,
                detail=(
                    f"the driver runs CUDA up to {_shown(driver_cuda)}; the image is "
                    f"{_shown(image_cuda)}"
                    + (
                        ""
                        if fits
                        else ": install a newer driver, or base the image on an older CUDA"
                    )
                ),
            )
        )
    nvcc = _major_minor(found.get("nvcc", ""))
    key, label = "toolkit_is_image_cuda", "The image's nvcc is its CUDA"
    if nvcc is None or image_cuda is None:
        readings.append(
            Reading.not_supported(
                key, label, "no nvcc in the image (or no CUDA_VERSION) to compare"
            )
        )
    else:
        readings.append(
            Reading(
                key,
                label,
                nvcc == image_cuda,
                detail=f"nvcc {_shown(nvcc)}, CUDA_VERSION {_shown(image_cuda)}",
            )
        )
    torch_cuda = _major_minor(found.get("torch_cuda", ""))
    key, label = "driver_runs_framework_cuda", "The driver runs PyTorch's CUDA"
    if torch_cuda is None or driver_cuda is None:
        readings.append(
            Reading.not_supported(
                key, label, "no CUDA build of PyTorch in the image, or no driver seen inside"
            )
        )
    else:
        fits = torch_cuda[0] <= driver_cuda[0]
        readings.append(
            Reading(
                key,
                label,
                fits,
                detail=(
                    f"PyTorch was built for CUDA {_shown(torch_cuda)}; the driver runs up to "
                    f"{_shown(driver_cuda)}"
                    + (
                        f" (minor version compatibility within CUDA {torch_cuda[0]})"
                        if fits and torch_cuda > driver_cuda
                        else ""
                        if fits
                        else ": this PyTorch needs a newer driver"
                    )
                ),
            )
        )
    return readings


def _result(status: str, message: str, readings: Sequence[Reading] = ()) -> ProbeResult:
    return ProbeResult(PROBE, title_of(PROBE), status, message, tuple(readings))  # type: ignore[arg-type]


def image_check(image: str, runtime: Runtime | None = None) -> ProbeResult:
    """Run `INSIDE` in `image` with the GPUs passed in, and judge it (module docstring)."""
    if not image.strip() or image.startswith("-"):
        return _result("error", f"not an image name: {image!r}")
    why = ""
    if runtime is None:
        runtime, why = find_runtime()
    if runtime is None:
        return _result("unavailable", f"no container runtime answers here: {why}")
    have = subprocess.run(
        [runtime.program, "image", "inspect", image], capture_output=True, text=True, timeout=30
    )
    if have.returncode != 0:
        return _result(
            "unavailable",
            f"{runtime.name} has no image {image!r} here (nothing is "
            f"pulled): build it first, {runtime.name} build -t "
            f"{image} .",
        )
    argv = [
        runtime.program,
        "run",
        "--rm",
        *runtime.gpu_args(),
        "--entrypoint",
        "sh",
        image,
        "-c",
        INSIDE,
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return _result("error", f"the image did not answer within {RUN_TIMEOUT_S:g} s")
    if done.returncode != 0 and "cuda_version=" not in done.stdout:
        last = done.stderr.strip().splitlines()[-1:] or ["no message"]
        return _result(
            "error", f"{runtime.name} could not run {image!r} with the GPUs passed in: {last[0]}"
        )
    readings = judge(parse(done.stdout))
    wrong = [r for r in readings if r.value is False]
    message = f"{image}: " + (
        "; ".join(f"{r.label.lower()}: no ({r.detail})" for r in wrong)
        if wrong
        else "versions agree and the GPU is visible"
    )
    return _result("partial" if wrong else "ok", message, readings)


def probe() -> ProbeResult:
    """The registry's probe: the image named by ``GPULAB_IMAGE``."""
    image = IMAGE.get() or ""
    if not image:
        return _result(
            "unavailable",
            "no image named: GPULAB_IMAGE=NAME gpulab probe run "
            "container_image, or gpulab image check NAME",
        )
    return image_check(image)
