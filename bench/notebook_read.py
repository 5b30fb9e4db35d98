"""What reading one hostile notebook costs the grader: the red team's case 33, before and after.

The notebook is the roofline stub with --outputs one-character stream outputs
on its first code cell (400 000 make 19.9 MiB, just under the 20 MiB limit).
"after" is `read_notebook` as it is; "before" is what it did until outputs
were dropped: json.loads, then nbformat.reads and nbformat.validate on the
whole notebook.
Each is timed in a fresh process, after nbformat is imported and its schema
compiled, and printed as CPU seconds and the process's peak RSS.

    python bench/notebook_read.py [--outputs 400000] [--skip-before]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "exercises" / "memory-hierarchy" / "roofline.ipynb"

MEASURE = """
import json, resource, sys, time
from pathlib import Path
import nbformat
from gpulab.grading.checks.notebook import read_notebook
read_notebook(Path(sys.argv[2]))          # nbformat imported, its schema compiled
path = Path(sys.argv[3])
started = time.process_time()
if sys.argv[1] == "after":
    read_notebook(path)
else:                                     # read_notebook before outputs were dropped
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)               # kept while nbformat reads it again, as it was
    nbformat.validate(nbformat.reads(text, as_version=4))
spent = time.process_time() - started
print(f"{spent:.2f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
"""


def build(outputs: int, folder: Path) -> Path:
    notebook = json.loads(STUB.read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": "x"}] * outputs
    path = folder / "tiny-outputs.ipynb"
    path.write_text(json.dumps(notebook, separators=(",", ":")), encoding="utf-8")
    return path


def measure(way: str, path: Path) -> tuple[float, float]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, way, str(STUB), str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    cpu, rss = done.stdout.split()
    return float(cpu), float(rss)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs", type=int, default=400_000)
    parser.add_argument("--skip-before", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = build(args.outputs, Path(folder))
        print(f"{path.stat().st_size / 2**20:.1f} MiB, {args.outputs} outputs")
        for way in ("after",) if args.skip_before else ("before", "after"):
            cpu, rss = measure(way, path)
            print(f"{way:>6}: {cpu:6.2f} s CPU, peak RSS {rss:5.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
