"""What a kernel answer may contain: rules checked on its text before anything compiles it.

A kernel answer is CUDA C that the kernel worker compiles and runs. Every
exercise holds it to the same few rules, stated in each kernel notebook, and
a task refuses a source that breaks one before it compiles it, with the rule
and the line:

1. **No libraries**: no ``#include`` except ``<cuda_fp16.h>`` and
   ``<cuda_bf16.h>``. The kernel is the learner's own work.
2. **Nothing kept between launches**: no ``__device__``, ``__constant__`` or
   ``__managed__`` variables, and no ``static`` variables except ``__shared__``
   or ``const`` ones. A kernel must not remember anything in GPU memory from
   one launch to the next (a result cache makes every launch after the first
   look free).
3. **CUDA C only**: no inline PTX (``asm``).
4. **Nothing hidden in macros**: no ``##`` token pasting, and none of the
   words above inside a ``#define``, so that what the source says is what
   the rules see.

An exercise may add rules of its own (`Rules.forbidden`): the reduction asks
for the learner's own tree, so library reductions are refused by name. It may
also allow more headers (`Rules.includes`): the Tensor Core kernel of
matmul-dtypes needs ``<mma.h>`` (WMMA) and ``<cuda_pipeline_primitives.h>``
(asynchronous copies), which are CUDA's own intrinsics, not a library.
Comments and string literals are blanked (line breaks kept) before anything
is matched, so a comment never trips a rule and line numbers stay the
learner's. Plain Python: nothing here needs a GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpulab.grading.checks.tasks.common import TaskError

__all__ = ["INCLUDES", "RULES_TEXT", "Rules", "Violation", "check_rules", "violations"]

INCLUDES = ("cuda_fp16.h", "cuda_bf16.h")
RULES_TEXT = (
    "no #include except <cuda_fp16.h> and <cuda_bf16.h>; no __device__, __constant__ or "
    "__managed__ variables and no static variables except __shared__ or const ones (a "
    "kernel keeps nothing in GPU memory from one launch to the next); no inline PTX (asm); "
    "no ## and none of these words inside a #define"
)
"""The rules in one sentence, as the notebooks state them."""

_COMMENT_OR_TEXT = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.DOTALL
)
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b", re.MULTILINE)
_HEADER = re.compile(r"#\s*include\s*[<\"]\s*([^>\"\s]*)\s*[>\"]")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define\b(?:[^\n\\]|\\\n|\\)*", re.MULTILINE)
_DECLARATION_END = re.compile(r"[(;=\[{,]")
_STATE_WORDS = re.compile(r"\b(__device__|__constant__|__managed__|static)\b")
_ASM = re.compile(r"\b(asm|__asm__|__asm)\b")
_MACRO_WORDS = re.compile(r"\b(__device__|__constant__|__managed__|static|asm|__asm__|__asm)\b")


@dataclass(frozen=True)
class Rules:
    """The rules one exercise's kernel answers are held to, beyond the common ones."""

    exercise: str
    forbidden: tuple[tuple[str, str], ...] = ()  # (regular expression, why it is refused)
    includes: tuple[str, ...] = ()  # headers allowed beyond INCLUDES

    def allowed(self) -> tuple[str, ...]:
        """Every header this exercise's kernels may include."""
        return (*INCLUDES, *self.includes)

    def text(self) -> str:
        """The rules in one sentence, with this exercise's headers (RULES_TEXT if none)."""
        if not self.includes:
            return RULES_TEXT
        return RULES_TEXT.replace(
            "no #include except <cuda_fp16.h> and <cuda_bf16.h>",
            f"no #include except {_listed(self.allowed())}",
        )


def _listed(headers: tuple[str, ...]) -> str:
    """<a>, <b> and <c>."""
    names = [f"<{name}>" for name in headers]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@dataclass(frozen=True)
class Violation:
    """One broken rule: the line (1-based, of the source as given), the rule, the text."""

    line: int
    rule: str
    text: str

    def message(self) -> str:
        return f"line {self.line}: {self.text!r}: {self.rule}"


def blank_comments_and_text(source: str) -> str:
    """The source with comments and string/char literals replaced by spaces (newlines kept)."""

    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    return _COMMENT_OR_TEXT.sub(blank, source)


def violations(source: str, rules: Rules) -> list[Violation]:
    """Every rule the source breaks, in the order of the source."""
    code = blank_comments_and_text(source)
    lines = source.split("\n")
    found: list[Violation] = []

    def add(offset: int, rule: str) -> None:
        number = code.count("\n", 0, offset) + 1
        text = lines[number - 1].strip() if number <= len(lines) else ""
        found.append(Violation(number, rule, text[:100]))

    for match in _INCLUDE.finditer(code):
        line_end = source.find("\n", match.start())
        named = _HEADER.search(source, match.start(), len(source) if line_end < 0 else line_end)
        if named is None or named.group(1) not in rules.allowed():
            add(
                match.start(),
                f"rule 1 (no libraries): only {_listed(rules.allowed())} "
                "may be included; write the kernel yourself",
            )
    defines = [(m.start(), m.end()) for m in _DEFINE.finditer(code)]
    for start, end in defines:
        word = _MACRO_WORDS.search(code, start, end)
        if word:
            add(
                word.start(),
                f"rule 4 (nothing hidden in macros): write {word.group(1)} where "
                "it applies, not inside a #define",
            )
    for match in re.finditer(r"##", code):
        add(match.start(), "rule 4 (nothing hidden in macros): no ## token pasting")
    for match in _STATE_WORDS.finditer(code):
        if any(start <= match.start() < end for start, end in defines):
            continue  # reported as rule 4 above
        problem = _state_problem(code, match)
        if problem:
            add(match.start(), problem)
    for match in _ASM.finditer(code):
        if not any(start <= match.start() < end for start, end in defines):
            add(match.start(), "rule 3 (CUDA C only): no inline PTX (asm)")
    for pattern, why in rules.forbidden:
        for match in re.finditer(pattern, code):
            add(match.start(), f"a rule of {rules.exercise}: {why}")
    first: dict[int, Violation] = {}
    for violation in found:  # one rule a line is enough to show where
        first.setdefault(violation.line, violation)
    return sorted(first.values(), key=lambda v: v.line)


def _state_problem(code: str, match: re.Match[str]) -> str | None:
    """Why the declaration starting at this __device__/__constant__/__managed__/static
    keeps state between launches, or None (a function, a __shared__ or const variable)."""
    word = match.group(1)
    rule = (
        "rule 2 (nothing kept between launches): {what}; a kernel must not keep "
        "anything in GPU memory from one launch to the next"
    )
    if word in ("__constant__", "__managed__"):
        return rule.format(what=f"no {word} variables")
    end = _DECLARATION_END.search(code, match.end())
    if end is None or end.group(0) == "(":
        return None  # a function (or the end of the text)
    begin = max(code.rfind(c, 0, match.start()) for c in ";{}") + 1
    declaration = code[begin : end.start()]
    words = set(re.findall(r"\w+", declaration))
    if word == "static" and (
        words & {"__shared__", "constexpr"} or ("const" in words and "*" not in declaration)
    ):
        return None  # per-block scratch, or a constant
    if word == "static":
        return rule.format(what="no static variables except __shared__ or const ones")
    return rule.format(what="no __device__ variables")


def check_rules(source: str, rules: Rules) -> None:
    """Refuse a source that breaks a rule: a `TaskError` of kind "rule", before any compiling."""
    broken = violations(source, rules)
    if not broken:
        return
    shown = "\n".join(f"    {v.message()}" for v in broken[:5])
    more = f"\n    ... and {len(broken) - 5} more" if len(broken) > 5 else ""
    raise TaskError(
        "rule",
        f"your kernel breaks the rules of kernel answers, so it was not "
        f"compiled:\n{shown}{more}\n(The rules: {rules.text()}.)",
    )
