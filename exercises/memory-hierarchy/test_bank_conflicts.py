"""Checks of the bank-conflicts exercise (lesson: the GPU memory hierarchy).

`bank` and `passes` are compared with the checks' own arithmetic on the
shared-memory layout (32 banks of 4 bytes). Your kernel is CUDA C text and
your launch configuration is numbers: the checks fetch both from your notebook
and hand them to gpulab's kernel worker, a separate process that runs none of
your Python. It refuses a source that breaks the rules of kernel answers (the
notebook states them), compiles it, fills the input with random values it
keeps to itself, new ones for every launch (the output starts as NaN, with
guard zones on both sides, so unwritten elements and writes past the ends
both show), launches your kernel, and compares with its own transpose. On an
8192 x 8192 matrix it times your kernel launch by launch, with its own
transposes with and without the padding column and a plain copy of the same
bytes, all in the same run, checking every launch. Where compute-sanitizer
can run, its memcheck and racecheck look for bad accesses and races too.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpulab.grading.checks.gpu import new_seed, run_kernel, sanitize_kernel, sanitizer_missing

BANKS = 32
SIZES = ((1, 1), (31, 33), (33, 31), (32, 32), (1000, 999))
TIMED = (8192, 8192)
SPEED = 0.8              # of the padded reference's bandwidth, same sizes, same run
# ... and nearer the padded reference than the unpadded one, as this GPU times them
MOST = 0.95              # the bar never asks more than this of the padded reference's speed
REPEATED = (1000, 999)
REPEAT = 10
BLOCK_ROWS = (1, 2, 4, 8, 16, 32)


# -- the checks' own bank arithmetic ---------------------------------------------------
def want_passes(words: list[int]) -> int:
    """Passes a warp needs: the most distinct words that any one bank must deliver."""
    per_bank: dict[int, set[int]] = {}
    for word in words:
        per_bank.setdefault(word % BANKS, set()).add(word)
    return max(len(found) for found in per_bank.values())


def column(width: int, col: int = 0) -> list[int]:
    """The words a warp reads when lane i reads tile[i][col] of rows `width` words long."""
    return [lane * width + col for lane in range(32)]


PASS_CASES: list[tuple[list[int], str]] = [
    (list(range(32)), "a row of the tile: 32 consecutive words"),
    (column(32), "a column of a [32][32] tile"),
    (column(33, 5), "column 5 of a [32][33] tile"),
    ([2 * lane for lane in range(32)], "every second word (stride 2)"),
    ([16 * lane for lane in range(32)], "stride 16"),
    ([7] * 32, "the same word for the whole warp"),
    ([lane // 2 for lane in range(32)], "two lanes per word, 16 consecutive words"),
    ([0 if lane % 2 == 0 else 32 for lane in range(32)], "words 0 and 32, 16 lanes each"),
    (column(64, 3), "column 3 of a [32][64] tile"),
]


def plain_ints(values: Any) -> bool:
    return isinstance(values, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in values)


def dims(value: Any) -> list[int] | None:
    """A grid or block as a list of ints, trailing 1s dropped (None if it is not one)."""
    items = value if isinstance(value, list) else [value]
    if not plain_ints(items) or not 1 <= len(items) <= 3:
        return None
    while len(items) > 2 and items[-1] == 1:
        items = items[:-1]
    return list(items)


def config_problem(config: Any, rows: int, cols: int) -> str | None:
    """What is wrong with launch_config(rows, cols), or None."""
    call = f"launch_config({rows}, {cols})"
    if not isinstance(config, dict) or not {"grid", "block"} <= set(config) or \
            set(config) - {"grid", "block", "shared_mem"}:
        return f"{call} returned {config!r:.120}: expected a dict with the keys 'grid' and " \
               "'block' (lists of plain ints)"
    grid, block = dims(config["grid"]), dims(config["block"])
    if grid is None or block is None:
        return f"{call} returned {config!r:.120}: grid and block must be plain ints or lists " \
               "of one to three plain ints (not floats or NumPy numbers)"
    want_grid = [(cols + 31) // 32, (rows + 31) // 32]
    if len(block) != 2 or block[0] != 32 or block[1] not in BLOCK_ROWS:
        return f"{call} gives blocks of {block}: the kernel is written for 32 threads across " \
               "(one warp along a row of the tile) and 8 down, block [32, 8]"
    if [*grid, 1][:2] != want_grid or len(grid) > 2:
        return f"{call} gives the grid {grid}, but one block per 32 x 32 tile needs " \
               f"{want_grid}: x across the {cols} columns of `in`, y down its {rows} rows, " \
               "each rounded up so that the last, partial tile is covered"
    return None


def speed_bar(timed: dict[str, Any]) -> float:
    """The share of the padded reference's speed a transpose needs in this run: SPEED, or
    more where this GPU pays less for the conflict, so that the time must lie nearer the
    padded reference's than the unpadded one's (a GPU whose unpadded transpose is 1.2 times
    slower asks 0.91); at most MOST, so that timing noise cannot fail a padded kernel."""
    slower = timed["ms"]["unpadded"] / timed["ms"]["padded"]
    return min(MOST, max(SPEED, 2 / (1 + slower)))


def speed_message(timed: dict[str, Any], bar: float, where: str) -> str:
    gbs = timed["gbs"]
    return (
        f"{where}your transpose moved {gbs['yours']:.0f} GB/s (the median of launches timed "
        "one by one, on fresh inputs); in the same run the padded reference "
        f"moved {gbs['padded']:.0f}, the unpadded one {gbs['unpadded']:.0f} and a plain copy "
        f"{gbs['copy']:.0f} (read + written). That is {timed['vs_padded']:.2f} of the padded "
        f"reference ({bar:.2f} needed: at least {SPEED}, and nearer the padded reference than "
        f"the unpadded one) and {timed['vs_unpadded']:.2f} times the unpadded one. "
        "Is the tile declared [32][33]? Without the spare column, the 32 words of a tile "
        "column are 32 apart, all in one bank, and each warp's read of the tile takes 32 "
        "passes instead of one")


def passed(case: dict[str, Any]) -> bool:
    return case["wrong"] == 0 and case["overrun"] == 0


def describe(case: dict[str, Any]) -> str:
    """A teaching message for a case the kernel got wrong."""
    rows, cols = case["rows"], case["cols"]
    where = f"{rows} x {cols}"
    if case["overrun"]:
        side = "before the start" if case.get("overrun_before") else "past the end"
        return (f"{where}: your kernel wrote {case['overrun']} floats {side} of `out`. "
                "A thread whose element lies outside the matrix must not write: the output is "
                "cols x rows, so test `oy < cols && ox < rows` before the store (and "
                "`y < rows && x < cols` before the load)")
    first = case["first_wrong"]
    r, c = divmod(first["index"], rows)
    if case["untouched"]:
        return (f"{where}: {case['untouched']} of {case['size']} elements of `out` were never "
                f"written, the first out[{r}][{c}]: does the grid cover every tile, rounded up "
                "(ceil(cols / 32) across, ceil(rows / 32) down), and does each thread walk "
                "down its tile in steps of 8 until it has covered all 32 rows?")
    square = " A square matrix hides a swapped rows and cols; this one is not square." \
        if rows != cols else ""
    return (f"{where}: {case['wrong']} of {case['size']} elements are wrong; out[{r}][{c}] is "
            f"{first['got']} but in[{c}][{r}] is {first['want']}. `out` is cols x rows: how "
            f"long is one of its rows, and what does your store's index multiply by?{square}")


def diagnose(cases: list[dict[str, Any]]) -> str | None:
    """A message for the first wrong case; when every square matrix is right and only
    others are wrong, the row length of `out` before anything else (its wrong index then
    also writes past the end, which would read as a missing bounds check)."""
    bad = [case for case in cases if not passed(case)]
    if not bad:
        return None
    square = [case for case in cases if case["rows"] == case["cols"]]
    if square and all(passed(case) for case in square):
        case = bad[0]
        found = [f"{case['wrong']} of {case['size']} elements wrong"]
        if case["overrun"]:
            found.append(f"{case['overrun']} floats written past the end of `out`")
        return (f"right on every square matrix but wrong on {case['rows']} x {case['cols']} "
                f"({', '.join(found)}): a transpose whose output rows have the wrong length "
                "is right exactly when rows = cols. `out` is cols x rows: how long is one of "
                "its rows, and what does your store's index multiply by?")
    return describe(bad[0])


def describe_repeated(case: dict[str, Any]) -> str:
    """A teaching message for a case run several times, one launch of which went wrong."""
    text = (f"launch {case['failed_at']} of {case['launches']} went wrong "
            f"({case['failed_launches']} in all, each on fresh inputs, beside a busy kernel): "
            f"{describe(case)}")
    if case["failed_launches"] < case["launches"]:
        text += (". The other launches of this size were right: a result that changes from "
                 "one launch to the next is a race. Does every thread wait until the whole "
                 "tile is loaded before it reads a column of it?")
    return text


# -- running the kernel ---------------------------------------------------------------
def learner_cases(learner: Any, sizes: tuple[tuple[int, int], ...]) -> list[dict[str, Any]]:
    """One case per size, each with the learner's own launch configuration."""
    cases = []
    for rows, cols in sizes:
        config = learner.call("launch_config", rows, cols)
        problem = config_problem(config, rows, cols)
        assert problem is None, problem
        cases.append({"label": f"{rows} x {cols}", "rows": rows, "cols": cols, "config": config})
    return cases


def findings(learner: Any, cases: list[dict[str, Any]],
             timed: tuple[int, int] | None) -> dict[str, Any]:
    """Run the learner's kernel on `cases` (and a timed run) in the kernel worker."""
    params: dict[str, Any] = {"seed": new_seed(), "cases": cases}
    if timed:
        params["timed"] = {"rows": timed[0], "cols": timed[1],
                           "config": learner.call("launch_config", *timed)}
    return run_kernel("transpose", learner.call("transpose_source"), params)


def secret_size(draw: random.Random, low: int, high: int) -> tuple[int, int]:
    """Rows and columns drawn at random, neither a multiple of 32."""
    def side() -> int:
        n = draw.randrange(low, high)
        return n if n % 32 else n + 1
    return side(), side()


@pytest.fixture(scope="module")
def run(learner: Any) -> dict[str, Any]:
    cases = learner_cases(learner, (*SIZES, secret_size(random.SystemRandom(), 100, 3000),
                                    REPEATED))
    cases[-2]["label"] = "a secret size"
    cases[-1].update(label=f"{REPEATED[0]} x {REPEATED[1]}, launched {REPEAT} times",
                     repeat=REPEAT, busy=True)
    return findings(learner, cases, TIMED)


# -- the checks -----------------------------------------------------------------------
@pytest.mark.points(1)
def test_bank(learner: Any) -> None:
    """bank gives the bank of a 4-byte word"""
    for word in (0, 1, 31, 32, 33, 1000, 32 * 33, 2**20 + 5):
        got = learner.call("bank", word)
        assert got == word % BANKS, (
            f"bank({word}) returned {got!r}, but word {word} is in bank {word % BANKS}: "
            f"consecutive words go to consecutive banks and wrap after {BANKS}, so the bank "
            f"is the word index modulo {BANKS}")


@pytest.mark.points(2)
def test_passes(learner: Any) -> None:
    """passes counts the conflict degree of a warp's access"""
    for words, what in PASS_CASES:
        got = learner.call("passes", words)
        want = want_passes(words)
        assert got == want, (
            f"passes(...) for {what} returned {got!r}, but it takes {want}: count, for "
            "each bank, the distinct words the warp wants from it (lanes that read the same "
            "word share one delivery, a broadcast), and take the largest count")


@pytest.mark.points(1)
def test_launch_config(learner: Any) -> None:
    """launch_config: blocks of 32 x 8, one per 32 x 32 tile"""
    for rows, cols in (*SIZES, (8192, 8192), (1, 5000), (4097, 3)):
        problem = config_problem(learner.call("launch_config", rows, cols), rows, cols)
        assert problem is None, problem


@pytest.mark.gpu
@pytest.mark.points(4)
def test_transpose_is_right(run: dict[str, Any]) -> None:
    """The transpose is right on 1 x 1 up to 1000 x 999, and on a secret size"""
    message = diagnose(run["cases"][:-1])
    assert message is None, message


@pytest.mark.gpu
@pytest.mark.points(1)
def test_repeated_launches(run: dict[str, Any]) -> None:
    """Right on every one of 10 launches with fresh inputs beside a busy kernel"""
    case = run["cases"][-1]
    assert passed(case), describe_repeated(case)


@pytest.mark.gpu
@pytest.mark.points(3)
def test_speed(run: dict[str, Any]) -> None:
    """Near the padded reference's speed on 8192 x 8192 (0.8 of it or more), in the same run"""
    timed = run["timed"]
    assert passed(timed), (
        f"the timed run ({TIMED[0]} x {TIMED[1]}) went wrong on {timed['failed_launches']} of "
        f"its {timed['launches']} launches, each on fresh inputs, so its speed does not count: "
        + describe(timed))
    bar = speed_bar(timed)
    assert timed["vs_padded"] >= bar, speed_message(timed, bar, "")


@pytest.mark.points(1)
def test_sanitizer(learner: Any) -> None:
    """compute-sanitizer finds no bad access and no race (skipped where it cannot run)"""
    missing = sanitizer_missing()
    if missing:
        pytest.skip(missing)
    cases = learner_cases(learner, ((63, 65), (33, 31)))
    verdict = sanitize_kernel("transpose", learner.call("transpose_source"), cases)
    if verdict.skipped:
        pytest.skip(verdict.skipped)
    assert verdict.problem is None, verdict.problem
