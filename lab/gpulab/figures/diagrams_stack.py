"""Diagrams of the software between a program and the GPU: the container stack and the
CUDA stack.

Both are the structure their lessons teach (containers.md: what the NVIDIA
Container Toolkit injects and its three ways in since version 1.18; cuda-stack.md:
framework, libraries, runtime, driver API, kernel-mode driver, GPU). Where
gpulab's H200 recording holds a fact about one of the layers (the driver
version, its open kernel modules, the device nodes, whether a toolkit was
installed), the box says it; without a recording the structure is drawn alone.
"""

from __future__ import annotations

from collections.abc import Callable

from gpulab.figures.diagram_data import Diagram, Facts
from gpulab.figures.diagram_model import Box, Drawing, Link
from gpulab.figures.model import Missing

__all__ = ["STACK_DIAGRAMS"]


def _maybe(read: Callable[[], str]) -> str:
    """What `read` returns, or "" where the recording lacks it."""
    try:
        return read()
    except Missing:
        return ""


def _driver(f: Facts) -> tuple[str, str, str]:
    """The recorded driver: version, newest CUDA it supports, and its kernel module's flavour
    ("open" or "proprietary"), each "" where the recording lacks it."""
    version = _maybe(lambda: f.text("nvml_inventory", "driver_version")) or _maybe(
        lambda: f.text("system", "nvidia_driver")
    )
    cuda = _maybe(lambda: f.text("nvml_inventory", "cuda_driver_version"))
    module = f.detail("system", "nvidia_driver")
    flavour = (
        "open"
        if "Open Kernel Module" in module
        else "proprietary"
        if "Kernel Module" in module
        else ""
    )
    return version, cuda, flavour


def _container(f: Facts) -> Drawing:
    version, _cuda, flavour = _driver(f)
    gpu = _maybe(lambda: f.text("nvml_inventory", "name")) or "GPU"
    nodes = _maybe(lambda: f.text("system", "nvidia_device_nodes"))
    module = ["one per host, shared by every container"]
    if version:
        module.append(f"gpulab's H200: {version}" + (f", {flavour} modules" if flavour else ""))
    container = Box(
        "Container",
        key="container",
        role="software",
        children=(
            Box("Your program and framework", ("PyTorch, JAX, CuPy",), role="software"),
            Box(
                "CUDA runtime and libraries",
                ("libcudart, cuBLAS, cuDNN, NCCL: in the image",),
                role="software",
            ),
            Box(
                "Injected from the host at start-up",
                (
                    "libcuda.so, libnvidia-ml.so, nvidia-smi: the driver's user-space half",
                    "/dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm",
                ),
                role="kernel",
                key="injected",
            ),
        ),
    )
    paths = Box(
        "NVIDIA Container Toolkit 1.18: three ways in",
        layout="row",
        children=(
            Box(
                "Native CDI",
                (
                    "the engine applies the spec: Docker, Podman, containerd, CRI-O",
                    "--device nvidia.com/gpu=all",
                ),
                role="software",
                key="native",
            ),
            Box(
                "nvidia-container-runtime",
                (
                    "just-in-time CDI, the default: a spec for the "
                    "requested GPUs, made in memory, then runc",
                ),
                role="software",
                key="jit",
            ),
            Box(
                "Legacy hook, deprecated",
                ("nvidia-container-runtime-hook calls nvidia-container-cli",),
                role="legacy",
                key="hook",
            ),
        ),
    )
    cdi = Box(
        "CDI spec",
        (
            "/var/run/cdi/nvidia.yaml, written by nvidia-cdi-refresh at boot "
            "and when the driver changes",
        ),
        role="software",
        key="cdi",
    )
    kernel = Box(
        "Host kernel",
        layout="row",
        role="plain",
        children=(
            Box("nvidia.ko, nvidia-uvm.ko", tuple(module), role="kernel", span=1.2),
            Box(
                "Device cgroup", ("decides which containers may open /dev/nvidia*",), role="kernel"
            ),
        ),
    )
    device = Box(gpu, ("not namespaced: whoever may open it gets all of it",), role="device")
    notes = []
    ctk = f.detail("system", "nvidia_ctk")
    specs = f.detail("system", "nvidia_cdi_specs")
    if ctk and specs:
        notes.append(
            f"On gpulab's H200 no toolkit was installed (nvidia-ctk: {ctk}; CDI "
            f"specs: {specs}), so the toolkit's part is the lesson's, not a "
            "recording"
        )
    if nodes:
        notes.append(f"its device nodes: {nodes}")
    return Drawing(
        Box("", children=(container, paths, cdi, kernel, device)),
        (
            Link("native", "injected", "device nodes and driver files"),
            Link("jit", "injected"),
            Link("hook", "injected"),
            Link("cdi", "native", "read by the engine"),
        ),
        notes=tuple(notes),
        sources=("the containers lesson",),
    )


def _cuda(f: Facts) -> Drawing:
    version, cuda, flavour = _driver(f)
    gpu = _maybe(lambda: f.text("nvml_inventory", "name"))
    cc = _maybe(lambda: f.text("nvml_inventory", "compute_capability"))
    driver = [
        "cuInit, cuModuleLoad, cuLaunchKernel; the PTX JIT compiler",
        "ships with the driver, the kernel module's exact version",
    ]
    if version:
        driver.append(
            f"gpulab's H200: {version}" + (f", supports CUDA up to {cuda}" if cuda else "")
        )
    module = ["nvidia.ko, nvidia-uvm.ko: memory, channels, interrupts, power"]
    if flavour:
        module.append(f"gpulab's H200: the {flavour} kernel modules")
    user = Box(
        "User space",
        key="user",
        children=(
            Box(
                "Framework",
                ("PyTorch, JAX, CuPy; a pip wheel brings its own CUDA libraries",),
                role="software",
                key="framework",
            ),
            Box(
                "CUDA libraries",
                ("cuBLAS, cuDNN, NCCL, cuFFT: tuned kernels per architecture",),
                role="software",
                key="libraries",
            ),
            Box(
                "CUDA runtime: libcudart",
                (
                    "cudaMalloc, cudaMemcpy, streams, <<<grid, block>>>",
                    "from the toolkit; nvcc links it statically",
                ),
                role="software",
                key="runtime",
            ),
            Box("Driver API: libcuda.so", tuple(driver), role="kernel", key="driver"),
        ),
    )
    kernel = Box(
        "Kernel",
        key="kernel",
        children=(Box("Kernel-mode driver", tuple(module), role="kernel", key="module"),),
    )
    hardware = Box(
        gpu or "GPU",
        ("runs SASS, its own machine code, from command queues",)
        + ((f"compute capability {cc}",) if cc else ()),
        role="device",
        key="gpu",
    )
    return Drawing(
        Box("", children=(user, kernel, hardware)),
        (
            Link("framework", "libraries", "GEMM, attention, all-reduce"),
            Link("libraries", "runtime", "kernel launches, copies"),
            Link("runtime", "driver", "each call becomes cu* calls"),
            Link("user", "kernel", "ioctl on /dev/nvidia*"),
            Link("module", "gpu", "commands into queues the GPU reads"),
        ),
        sources=("the CUDA stack lesson",),
    )


STACK_DIAGRAMS = (
    Diagram(
        "container-stack",
        "A container, the NVIDIA Container Toolkit and the GPU",
        "The image brings the program, the framework and the CUDA runtime; the host brings "
        "the driver. At start-up the toolkit's CDI spec puts the host's driver libraries "
        "and the GPU's device nodes into the container: applied by the engine itself, made "
        "just in time by nvidia-container-runtime (the default since toolkit 1.18), or, "
        "deprecated, by the old hook. The kernel module is the host's, one for all "
        "containers.",
        _container,
    ),
    Diagram(
        "cuda-layers",
        "The CUDA stack, from framework to GPU",
        "Each layer calls the one below: a framework calls NVIDIA's libraries, which launch "
        "kernels through the CUDA runtime; the runtime turns each call into driver API "
        "calls; libcuda talks to the kernel-mode driver through the device files; the GPU "
        "reads the commands and runs the kernels' machine code. The driver's two halves "
        "ship together and must match.",
        _cuda,
    ),
)
