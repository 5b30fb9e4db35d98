"""Record NVML's answers here for replay without a GPU: ``python -m gpulab.probes.nvml OUT.json``.

See `gpulab.probes.nvml.main` and `gpulab.probes.nvml.Recorder`.
"""

import sys

from gpulab.probes.nvml import main

if __name__ == "__main__":
    sys.exit(main())
