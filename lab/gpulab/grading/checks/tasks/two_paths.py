"""Task `two_paths`: the warp-divergence kernel, ``two_paths(float* out, const unsigned char*
take_b, unsigned int n, float a, float b, unsigned int uniform_iters, unsigned int iters)``.

Thread i < n starts at x = (i % 1024) / 1024, takes ``uniform_iters`` steps of
path A (x = fmaf(x, a, b)), then ``iters`` steps of path B (x = fmaf(x, b, a))
where ``take_b[i]`` is set, of path A where it is not, and writes x to
``out[i]``. The trusted kernel (`gpulab.grading.checks.reference.warp_divergence`)
is the reference: every launch is compared with its runs with every lane on
one path, lane by lane (rtol 1e-5), so each lane is right only if it ran its
own path.

params: ``seed``; ``cases``, a list of ``{"label", "n", "mask", "a", "b",
"uniform_iters", "iters"}`` where ``mask`` is a pattern's name, ``{"random":
p}`` (each thread on path B with probability p), ``{"warps": p}`` (each warp
wholly on path B with probability p) or a list of 0/1 repeated to n threads;
blocks of THREADS, just enough of them; ``out`` starts as NaN between guard
zones. Returns per case the mismatch, ``overrun``, the wrong lanes among those
on path A and on path B, and the lanes that ended where the *other* path ends
(``b_like_a``: on path B but ending as path A does; ``a_like_b``).

Optional ``timed``: ``{"masks": {name: mask}, "prefix": p}``: the learner's
kernel and the trusted one on the full grid (one wave), ITERS steps per path
after p x ITERS together, launch by launch in turn (`judge.time_each`), every
one of the learner's launches checked. Returns ``ms`` per kernel per mask and
the first wrong launch's findings (or the last).
"""

from __future__ import annotations

from typing import Any

from gpulab.grading.checks.reference import warp_divergence as ref
from gpulab.grading.checks.tasks import judge
from gpulab.grading.checks.tasks.common import (
    TaskError,
    compile_kernel,
    cupy,
    numpy,
    plain,
    synchronize,
)
from gpulab.grading.checks.tasks.rules import Rules, check_rules

__all__ = ["KERNEL", "RULES", "run"]

KERNEL = "two_paths"
RULES = Rules("warp-divergence")
RTOL, ATOL = 1e-5, 1e-6


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    check_rules(source, RULES)  # before anything compiles it
    kernel = compile_kernel(source, KERNEL)
    np = numpy()
    rng = np.random.default_rng(int(params["seed"]))
    out: dict[str, Any] = {"cases": []}
    for case in params["cases"]:
        n = int(case["n"])
        what = f"{case.get('label', 'a case')} (n = {n:,})"
        take_b = _mask(rng, case["mask"], n)
        steps = ref.Steps(
            float(case["a"]), float(case["b"]), int(case["uniform_iters"]), int(case["iters"])
        )
        on_a, on_b = ref.path_outputs(n, steps)
        buffer, view = judge.guarded(n)
        _launch(kernel, view, take_b, steps, what)
        synchronize(what)
        found = {**_check(view, take_b, on_a, on_b), **judge.overrun(buffer, view)}
        found["ok"] = found["ok"] and not found["overrun"]
        out["cases"].append(
            {
                "label": case.get("label", ""),
                "n": n,
                "uniform_iters": steps.uniform_iters,
                "iters": steps.iters,
                "on_b": int(cupy().count_nonzero(take_b)),
                **found,
            }
        )
    timed = params.get("timed")
    if timed:
        out["timed"] = _timed(kernel, rng, timed)
    return out


def _mask(rng: Any, spec: Any, n: int) -> Any:
    cp, np = cupy(), numpy()
    if isinstance(spec, dict) and "random" in spec:
        return cp.asarray((rng.random(n) < float(spec["random"])).astype(np.uint8))
    if isinstance(spec, dict) and "warps" in spec:
        warps = rng.random((n + ref.WARP - 1) // ref.WARP) < float(spec["warps"])
        return cp.asarray(np.repeat(warps, ref.WARP)[:n].astype(np.uint8))
    if isinstance(spec, str | list):
        return ref.device_mask(spec, n)
    raise TaskError("crashed", f"the task got a mask it does not know: {spec!r:.80}")


def _launch(kernel: Any, view: Any, take_b: Any, steps: ref.Steps, what: str) -> None:
    cp = cupy()
    try:
        ref.launch(kernel, view, take_b, steps)
    except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as exc:
        raise TaskError(
            "launch",
            f"{what}: CUDA refused the launch of two_paths ({exc}): is its signature "
            "(float* out, const unsigned char* take_b, unsigned int n, float a, float b, "
            "unsigned int uniform_iters, unsigned int iters)?",
        ) from None


def _check(got: Any, take_b: Any, on_a: Any, on_b: Any) -> dict[str, Any]:
    """Lane by lane: each thread must end where the run with every lane on its path ends."""
    cp = cupy()
    on_path_b = take_b.astype(bool)
    want = cp.where(on_path_b, on_b, on_a)

    def near(x: Any, y: Any) -> Any:
        return cp.abs(x.astype(cp.float64) - y.astype(cp.float64)) <= ATOL + RTOL * cp.abs(
            y.astype(cp.float64)
        )

    bad = ~near(got, want)  # NaN (never written) is never near
    paths_differ = ~near(on_a, on_b)
    wrong = int(cp.count_nonzero(bad))
    first = None
    if wrong:
        index = int(cp.argmax(bad))
        first = {
            "index": index,
            "lane": index % ref.WARP,
            "warp": index // ref.WARP,
            "path": "B" if bool(on_path_b[index]) else "A",
            "got": plain(float(got[index])),
            "want": float(want[index]),
        }
    return {
        "size": int(got.size),
        "wrong": wrong,
        "untouched": int(cp.count_nonzero(cp.isnan(got))),
        "wrong_on_a": int(cp.count_nonzero(bad & ~on_path_b)),
        "wrong_on_b": int(cp.count_nonzero(bad & on_path_b)),
        "b_like_a": int(cp.count_nonzero(on_path_b & paths_differ & near(got, on_a))),
        "a_like_b": int(cp.count_nonzero(~on_path_b & paths_differ & near(got, on_b))),
        "first_wrong": first,
        "ok": wrong == 0,
    }


def _timed(kernel: Any, rng: Any, timed: dict[str, Any]) -> dict[str, Any]:
    cp = cupy()
    blocks, n = ref.full_grid()
    prefix = int(timed.get("prefix", 0))
    steps = ref.Steps(ref.A, ref.B, prefix * ref.ITERS, ref.ITERS)
    on_a, on_b = ref.path_outputs(n, steps)
    trusted = ref.trusted_kernel()
    contenders: dict[str, judge.Contender] = {}
    for name, spec in timed["masks"].items():
        take_b = _mask(rng, spec, n)
        what = f"the timed run, mask {name!r}"

        def prepare() -> Any:
            return cp.full(n, cp.nan, dtype=cp.float32)

        def yours(view: Any, take_b: Any = take_b, what: str = what) -> None:
            _launch(kernel, view, take_b, steps, what)

        def theirs(view: Any, take_b: Any = take_b) -> None:
            ref.launch(trusted, view, take_b, steps)

        def check(view: Any, take_b: Any = take_b) -> dict[str, Any]:
            return _check(view, take_b, on_a, on_b)

        contenders[f"yours:{name}"] = judge.Contender(prepare, yours, check)
        contenders[f"trusted:{name}"] = judge.Contender(prepare, theirs)
    timing = judge.time_each(contenders, "the timed run")
    ms = timing["ms"]
    launches = [
        found
        for name, checked in timing["checks"].items()
        if name.startswith("yours:")
        for found in checked
    ]
    return {
        "n": n,
        "blocks": blocks,
        "prefix": prefix,
        "iters": ref.ITERS,
        "ms": {
            who: {name: ms[f"{who}:{name}"] for name in timed["masks"]}
            for who in ("yours", "trusted")
        },
        **judge.summary(launches),
    }
