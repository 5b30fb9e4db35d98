"""Record NVML's answers here for replay without a GPU: ``python -m gpulab.probes.nvml OUT.json``.

See `gpulab.probes.machine_record` and `gpulab.probes.nvml.Recorder`.
"""

import sys

from gpulab.probes.machine_record import main

if __name__ == "__main__":
    sys.exit(main())
