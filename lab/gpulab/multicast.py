"""NVLink multicast stays off in every process gpulab starts.

NVLink SHARP (multicast objects made with cuMulticastCreate, used by NCCL's
NVLS algorithms, PyTorch's symmetric memory and NVSHMEM) can leave a
multi-GPU host's NVSwitch fabric in a state that takes its GPUs out of
service for everyone who shares them. gpulab never asks for it, and every
environment it builds for a child process (grading jobs, kernel workers,
JupyterLab) carries these variables so the libraries inside do not turn it
on by themselves.
"""

from __future__ import annotations

__all__ = ["NO_MULTICAST"]

NO_MULTICAST: dict[str, str] = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
