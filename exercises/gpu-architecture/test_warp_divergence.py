"""Checks of the warp-divergence exercise (lesson: GPU architecture).

`pattern`, `paths_per_warp` and `predicted_slowdown` are compared with the
checks' own model (`gpulab.grading.checks.reference.warp_divergence`) on the named
patterns, partial warps and random masks; no GPU needed.

On a GPU, your kernel is CUDA C text: the checks hand it to gpulab's kernel
worker, a separate process that runs none of your Python. It refuses a source
that breaks the rules of kernel answers, compiles it, and runs it on masks,
sizes and constants it draws itself, comparing every lane with the trusted
kernel's runs with every lane on one path: a lane is right only if it ran its
own path. Then it times your kernel launch by launch (CUDA events), in turn
with the trusted kernel, with every lane on path A, every lane on path B and
odd lanes on path B: your kernel must pay for the split as the trusted one
does. Your `time_pattern` is compared with the checks' own timing of the
trusted kernel in the same run, pattern by pattern, as ratios to the uniform
launch; each ratio is recorded beside your prediction. Finally your model,
given the path costs measured here, must predict what the GPU measured.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from gpulab.grading.checks.gpu import new_seed, run_kernel
from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.reference import warp_divergence as ref

WARP = ref.WARP
TOLERANCE = 0.2  # your ratios against the trusted kernel's, measured in the same run
MODEL_TOLERANCE = 0.2  # your model's predictions against the trusted kernel's ratios
DIVERGES = 0.25  # your kernel's split ratio against the trusted kernel's, timed by the checks
HOST_TIMER = 0.3  # a uniform launch under this share of the trusted one's time was not timed
SLOW = 2.5  # nor one over this many times the trusted one's (launches not divided out)
SIZES = (1, 31, 32, 33, 64, 100, 256)

RULE = {
    "uniform": "no thread takes path B",
    "all_b": "every thread takes path B",
    "lane_parity": "the odd lanes take path B (lane = i % 32)",
    "one_lane": "lane 0 of every warp takes path B, and only it (lane = i % 32)",
    "by_warp": "every lane of the odd warps takes path B (warp = i // 32)",
}

# The times `time_pattern` is asked for: name -> (pattern, prefix); each ratio in
# ref.MEASURED is a pattern's time over the uniform one's at the same prefix.
TIMED = {
    "uniform": ("uniform", 0),
    "lane_parity": ("lane_parity", 0),
    "one_lane": ("one_lane", 0),
    "by_warp": ("by_warp", 0),
    "uniform_tenth": ("uniform", ref.TENTH_PREFIX),
    "tenth": ("lane_parity", ref.TENTH_PREFIX),
}
TRUSTED_MASKS = {"all_b": ("all_b", 0), **TIMED}


def baseline(key: str) -> str:
    """The uniform timing a measured key is divided by."""
    return "uniform_tenth" if ref.MEASURED[key][2] else "uniform"


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# -- part 1: the patterns ------------------------------------------------------------------
def mask_problem(got: Any, call: str, n: int) -> str | None:
    if not isinstance(got, list) or len(got) != n or not all(v in (0, 1) for v in got):
        return (f"{call} returned {got!r:.100}: expected a list of {n} numbers, 0 (path A) or "
                "1 (path B), one per thread")
    return None


def check_pattern(learner: Any, name: str, n: int) -> None:
    call = f"pattern({name!r}, {n})"
    got = learner.call("pattern", name, n)
    problem = mask_problem(got, call, n)
    assert problem is None, problem
    want = ref.pattern_mask(name, n)
    if got != want:
        i = next(i for i in range(n) if got[i] != want[i])
        raise AssertionError(
            f"{call}: thread {i} (lane {i % WARP} of warp {i // WARP}) gets {got[i]}, but under "
            f"{name!r} {RULE[name]}")


def raised_value_error(learner: Any, function: str, *args: Any) -> tuple[bool, str]:
    """Did the call raise ValueError (judged by the exception's type)? And what it did."""
    try:
        got = learner.call(function, *args)
    except LearnerError as exc:
        if exc.raised_as(NotImplementedError):
            raise
        if exc.raised_as(ValueError):
            return True, "raised ValueError"
        return False, f"raised {str(exc).splitlines()[0].split(': ', 1)[-1]}"
    return False, f"returned {got!r:.60}"


@pytest.mark.points(1)
def test_patterns(learner: Any) -> None:
    """pattern: the named patterns, on whole and partial warps"""
    for name in ref.PATTERNS:
        for n in SIZES:
            check_pattern(learner, name, n)
    for name in ("lane-parity", "odd_lanes", ""):
        refused, did = raised_value_error(learner, "pattern", name, 32)
        assert refused, (f"pattern({name!r}, 32) {did}: a name that is none of "
                         f"{', '.join(ref.PATTERNS)} should raise ValueError naming it, so that "
                         "a typo does not time the wrong pattern")


# -- part 2: the model -----------------------------------------------------------------------
def random_mask(draw: random.Random, n: int, paths: int = 2) -> list[int]:
    """A mask of n threads: each warp all on one path, split at random, or nearly uniform."""
    mask: list[int] = []
    while len(mask) < n:
        kind = draw.choice(("one path", "random", "one lane out"))
        if kind == "one path":
            mask += [draw.randrange(paths)] * WARP
        elif kind == "random":
            mask += [draw.randrange(paths) for _ in range(WARP)]
        else:
            lanes = [0] * WARP
            lanes[draw.randrange(WARP)] = 1
            mask += lanes
    return mask[:n]


def model_cases(draw: random.Random) -> list[tuple[list[int], str]]:
    cases = [(ref.pattern_mask(name, n), f"pattern {name!r}, {n} threads")
             for name in ref.PATTERNS for n in (256, 100)]
    cases += [
        ([1], "one thread on path B"),
        ([0] * 32 + [1], "33 threads, the last alone in its warp"),
        ([0] * 31 + [1] + [1] * 32, "lane 31 of warp 0 on B, then a warp all on B"),
        ([lane % 4 for lane in range(64)], "a four-way switch (paths 0 to 3) in two warps"),
    ]
    cases += [(random_mask(draw, draw.randrange(1, 300)), "a random mask") for _ in range(4)]
    return cases


def describe_mask(mask: list[int], what: str) -> str:
    return f"{what} ({len(mask)} threads: {mask[:40]}{' ...' if len(mask) > 40 else ''})"


@pytest.mark.points(2)
def test_paths_per_warp(learner: Any) -> None:
    """paths_per_warp: distinct paths per warp of 32, the last one partial"""
    for mask, what in model_cases(random.SystemRandom()):
        got = learner.call("paths_per_warp", mask)
        want = ref.paths_per_warp(mask)
        call = f"paths_per_warp for {describe_mask(mask, what)}"
        assert isinstance(got, list) and len(got) == len(want), (
            f"{call} returned {got!r:.100}: expected one number per warp, {len(want)} of them "
            f"(threads 0-31 are warp 0, 32-63 warp 1, ...; the last warp may have fewer than "
            "32 threads)")
        if got != want:
            w = next(w for w in range(len(want)) if got[w] != want[w])
            lanes = mask[w * WARP:(w + 1) * WARP]
            raise AssertionError(
                f"{call}: warp {w} gets {got[w]!r}, but its lanes take the paths "
                f"{sorted(set(lanes))}: count the distinct paths its lanes take, once each, "
                "however many lanes take each one")


def slowdown_cases(draw: random.Random) -> list[tuple[list[int], float, float, float, str]]:
    cases = []
    for name in ("lane_parity", "one_lane", "by_warp", "uniform", "all_b"):
        for cost_a, cost_b, uniform in ((1.0, 1.0, 0.0), (1.0, 1.0, 9.0), (1.0, 2.0, 0.0),
                                        (2.0, 1.0, 3.0)):
            cases.append((ref.pattern_mask(name, 256), cost_a, cost_b, uniform,
                          f"pattern {name!r}"))
    cases.append(([0] * 32 + [1], 1.0, 1.0, 0.0, "33 threads, the last alone in its warp"))
    for _ in range(4):
        cases.append((random_mask(draw, draw.randrange(1, 400)), draw.uniform(0.5, 3),
                      draw.uniform(0.5, 3), draw.choice((0.0, draw.uniform(0, 20))),
                      "a random mask"))
    return cases


def slowdown_hint(mask: list[int], uniform: float, got: float, want: float) -> str:
    """What a wrong prediction looks like it counted."""
    warps = [set(mask[s:s + WARP]) for s in range(0, len(mask), WARP)]
    split = any(len(paths) > 1 for paths in warps)
    if split and got < want:
        return ("you charge a split warp less than both of its paths, as if each lane paid for "
                "its own path. A warp issues every path one of its lanes needs, in full, for "
                "one lane as for sixteen: the cost is per warp, not per thread")
    agree = any(len(paths) == 1 for paths in warps)
    if agree and len(set().union(*warps)) > 1 and got > want:
        return ("a warp whose lanes agree runs its one path only: it pays nothing for a path "
                "that other warps take. Divergence is a property of one warp, not of the "
                "block or the kernel")
    if uniform:
        return ("every warp pays the work done together (uniform) once, plus each path any of "
                "its lanes takes; the baseline is every warp on path A: uniform + cost_a each")
    return ("a warp costs the sum of the paths its lanes take, each once; add that up over the "
            "warps (a partial last warp costs as much as a full one) and divide by the same "
            "sum with every lane on path A")


@pytest.mark.points(2)
def test_predicted_slowdown(learner: Any) -> None:
    """predicted_slowdown: the per-warp model, with unequal paths and work done together"""
    for mask, cost_a, cost_b, uniform, what in slowdown_cases(random.SystemRandom()):
        got = learner.call("predicted_slowdown", mask, cost_a, cost_b, uniform)
        want = ref.predicted_slowdown(mask, cost_a, cost_b, uniform)
        call = (f"predicted_slowdown for {describe_mask(mask, what)}, cost_a = {cost_a:.3g}, "
                f"cost_b = {cost_b:.3g}, uniform = {uniform:.3g}")
        assert is_number(got), f"{call} returned {got!r:.80}: expected a number"
        assert math.isclose(got, want, rel_tol=1e-6), (
            f"{call} returned {got:.4g}, {'less' if got < want else 'more'} than the per-warp "
            "model gives: " + slowdown_hint(mask, uniform, got, want))


# -- the kernel, in the kernel worker ----------------------------------------------------------
def constants(draw: random.Random) -> dict[str, float]:
    """Path constants whose paths end far apart: A settles near b / (1 - a) < 0.5, B near
    a / (1 - b) > 0.5."""
    return {"a": round(draw.uniform(0.55, 0.8), 4), "b": round(draw.uniform(0.01, 0.08), 4)}


def visible_cases(draw: random.Random) -> list[dict[str, Any]]:
    def case(label: str, n: int, mask: Any, uniform_iters: int, iters: int) -> dict[str, Any]:
        return {"label": label, "n": n, "mask": mask, "uniform_iters": uniform_iters,
                "iters": iters, **constants(draw)}

    return [
        case("every lane on path A", 64, "uniform", 0, 5),
        case("every lane on path B", 64, "all_b", 0, 5),
        case("one thread, on path B", 1, "all_b", 0, 3),
        case("odd lanes on path B", 1000, "lane_parity", 0, 17),
        case("lane 0 on path B", 1000, "one_lane", 0, 11),
        case("odd warps on path B, after 20 steps together", 4133, "by_warp", 20, 9),
        case("random lanes on path B", 33, {"random": 0.5}, 0, 40),
        case("random lanes on path B, after 7 steps together", 5000, {"random": 0.3}, 7, 13),
    ]


def describe_case(case: dict[str, Any]) -> str:
    """A teaching message for a case the kernel got wrong."""
    where = (f"{case['label']} (n = {case['n']}, uniform_iters = {case['uniform_iters']}, "
             f"iters = {case['iters']})")
    if case["overrun"]:
        return (f"{where}: your kernel wrote {case['overrun']} floats past an end of `out`: a "
                "thread with i >= n must not write")
    if case["untouched"]:
        return (f"{where}: {case['untouched']} of {case['size']} elements of `out` were never "
                "written: every thread i < n writes its x to out[i], whichever path it took")
    on_b = case["on_b"]
    if on_b and case["b_like_a"] == on_b:
        return (f"{where}: every lane with take_b[i] set ended where path A ends. Does your "
                "kernel read take_b[i], and do its two branches really compute different "
                "things (path B's step is x = fmaf(x, b, a))? Two branches that compute the "
                "same are merged by the compiler, and then there is nothing to diverge")
    if case["a_like_b"] and case["a_like_b"] == case["size"] - on_b:
        return (f"{where}: every lane with take_b[i] clear ended where path B ends: the "
                "branch goes the wrong way round (take_b[i] = 1 means path B)")
    first = case["first_wrong"]
    text = (f"{where}: {case['wrong']} of {case['size']} lanes are wrong ({case['wrong_on_a']} "
            f"on path A, {case['wrong_on_b']} on path B); thread {first['index']} (lane "
            f"{first['lane']} of warp {first['warp']}, path {first['path']}) ended at "
            f"{first['got']} where its path ends at {first['want']:.7g}")
    if case["uniform_iters"]:
        text += (". Every lane starts at x = (i % 1024) / 1024, takes uniform_iters steps of "
                 "path A, and only then iters steps of its own path")
    else:
        text += (". Every lane starts at x = (i % 1024) / 1024 and takes iters steps of its "
                 "path, one fmaf each: path A x = fmaf(x, a, b), path B x = fmaf(x, b, a)")
    return text


@pytest.fixture(scope="module")
def run(learner: Any) -> dict[str, Any]:
    """Your kernel in the kernel worker: the visible cases, and the timed run."""
    params = {
        "seed": new_seed(),
        "cases": visible_cases(random.SystemRandom()),
        "timed": {"masks": {name: name for name in ("uniform", "all_b", "lane_parity")}},
    }
    return run_kernel("two_paths", learner.call("kernel_source"), params)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_kernel_is_right(run: dict[str, Any]) -> None:
    """two_paths: every lane ends where its own path ends"""
    bad = [case for case in run["cases"] if not case["ok"]]
    assert not bad, describe_case(bad[0]) + (
        f" ({len(bad)} of {len(run['cases'])} cases wrong)" if len(bad) > 1 else "")


def divergence_problem(timed: dict[str, Any]) -> str | None:
    """Whether your kernel pays for a split warp as the trusted kernel does, or why not."""
    if timed["failed_launches"]:
        return (f"{timed['failed_launches']} of your {timed['launches']} timed launches went "
                "wrong (on the full grid), so their times do not count: see the check of "
                "your kernel's lanes")
    ms = timed["ms"]
    yours = ms["yours"]["lane_parity"] / ms["yours"]["uniform"]
    theirs = ms["trusted"]["lane_parity"] / ms["trusted"]["uniform"]
    path_b = ms["yours"]["all_b"] / ms["yours"]["uniform"]
    said = (f"timed by the checks (CUDA events, launch by launch, {timed['n']:,} threads), your "
            f"kernel with odd lanes on path B took {yours:.2f} times its uniform time, the "
            f"trusted kernel {theirs:.2f} times, in the same run")
    if yours < 1 + 0.5 * (theirs - 1):
        return (f"{said}. Your split costs (almost) nothing: no lane waits for the other path, "
                "so your two paths have become one instruction stream. The compiler does "
                "that with two short paths that differ only in operands: it computes both "
                "or selects the operands (predication, a select), and the warp never "
                "diverges. Make the paths two instruction sequences it cannot merge "
                "(the lesson: short branches become predicated instructions)")
    if abs(yours - theirs) > DIVERGES * theirs:
        return (f"{said}, more than {DIVERGES:.0%} apart. With every lane on path B your "
                f"kernel takes {path_b:.2f} times its path-A time: the two paths should cost "
                "the same, one FMA a step")
    return None


@pytest.mark.gpu
@pytest.mark.points(2)
def test_paths_really_diverge(run: dict[str, Any]) -> None:
    """two_paths pays for a split warp as the trusted kernel does (timed by the checks)"""
    problem = divergence_problem(run["timed"])
    assert problem is None, problem


# -- your timing, and your model, against the trusted kernel -------------------------------------
@pytest.fixture(scope="module")
def trusted() -> dict[str, Any]:
    """The trusted kernel's times, on this GPU, in this run."""
    return ref.own_times(TRUSTED_MASKS)


def learner_times(learner: Any) -> dict[str, float]:
    times = {}
    for name, (pattern, prefix) in TIMED.items():
        got = learner.call("time_pattern", pattern, prefix)
        assert is_number(got) and got > 0, (
            f"time_pattern({pattern!r}, {prefix}) returned {got!r:.80}: expected the "
            "milliseconds of one launch, a positive number")
        times[name] = float(got)
    return times


def timing_problems(yours: dict[str, float], trusted: dict[str, Any]) -> list[str]:
    ms = trusted["ms"]
    uniform, theirs = yours["uniform"], ms["uniform"]
    if uniform < HOST_TIMER * theirs:
        return [f"your uniform launch took {uniform:.4f} ms by your timer, but the same work "
                f"takes {theirs:.3f} ms on this GPU (the trusted kernel, {trusted['n']:,} "
                "threads, timed with CUDA events in this run). Your timer stops before the "
                "GPU has finished: a host timer around an asynchronous launch measures only "
                "the launch. Record CUDA events around the launches and wait for the end "
                "event before you read them"]
    if uniform > SLOW * theirs:
        return [f"your uniform launch took {uniform:.3f} ms by your timer, the same work "
                f"{theirs:.3f} ms with the trusted kernel in this run: do you divide by the "
                "number of launches between your two events, and keep the warm-up launch "
                "(compiling, clocks) out of the timing?"]
    problems = []
    for key, (label, _, _) in ref.MEASURED.items():
        mine = yours[key] / yours[baseline(key)]
        truth = ms[key] / ms[baseline(key)]
        if abs(mine - truth) <= TOLERANCE * truth:
            continue
        text = (f"{label}: by your timing {mine:.2f} times the uniform launch, by the checks' "
                f"{truth:.2f} ({TOLERANCE:.0%} allowed)")
        if truth > 1.5 and mine < 1 + 0.5 * (truth - 1):
            text += (": your split costs almost nothing. If your kernel passed the check that "
                     "times it (test_paths_really_diverge), your time_pattern is not timing "
                     "the mask it was asked for; if not, your kernel's paths were merged")
        problems.append(text)
    return problems


@pytest.mark.gpu
@pytest.mark.points(3)
def test_time_patterns(learner: Any, trusted: dict[str, Any], measured: Any) -> None:
    """time_pattern: your ratios to the uniform launch against the trusted kernel's, same run"""
    yours = learner_times(learner)
    ms = trusted["ms"]
    for key, (label, _, _) in ref.MEASURED.items():
        measured(key, label=label, unit="x", yours=yours[key] / yours[baseline(key)],
                 trusted=ms[key] / ms[baseline(key)], tolerance=TOLERANCE)
    problems = timing_problems(yours, trusted)
    assert not problems, "; ".join(problems)


def model_problems(learner: Any, masks: dict[str, tuple[list[int], int]],
                   trusted: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """Your predicted_slowdown for each mask (a period of the grid's mask) against the
    trusted kernel's measured ratio; path B's cost is the measured all-B ratio."""
    ms = trusted["ms"]
    cost_b = ms["all_b"] / ms["uniform"]
    problems = []
    for key, (mask, prefix) in masks.items():
        got = learner.call("predicted_slowdown", mask, 1.0, cost_b, float(prefix))
        assert is_number(got), f"predicted_slowdown returned {got!r:.80}: expected a number"
        truth = ms[key] / ms["uniform_tenth" if prefix else "uniform"]
        if abs(got - truth) > MODEL_TOLERANCE * truth:
            problems.append(
                f"{labels[key]}: your model predicts {got:.2f} times the uniform time, the GPU "
                f"measured {truth:.2f} (path B costs {cost_b:.2f} times path A here): "
                + slowdown_hint(mask, float(prefix), got, ref.predicted_slowdown(
                    mask, 1.0, cost_b, float(prefix))))
    return problems


@pytest.mark.gpu
@pytest.mark.points(1)
def test_model_against_the_gpu(learner: Any, trusted: dict[str, Any]) -> None:
    """predicted_slowdown predicts what the GPU measured, pattern by pattern"""
    masks = {key: (ref.pattern_mask(pattern, 2048), prefix)
             for key, (_, pattern, prefix) in ref.MEASURED.items()}
    labels = {key: label for key, (label, _, _) in ref.MEASURED.items()}
    problems = model_problems(learner, masks, trusted, labels)
    assert not problems, "; ".join(problems)
