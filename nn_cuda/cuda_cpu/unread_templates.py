"""Function templates whose bodies do not compile, left out of the CPU build as NVRTC leaves them out.

NVRTC reads a function template's body only where a kernel instantiates the template: NVRTC 12.9
builds an undeclared name, an undeclared type, even a syntax error in a template that nothing
instantiates (measured with its wheel). MXNet's runtime-compiled kernels all include a header whose
unused `nrm2::Reduce` names `sum_of_square`; ArrayFire builds kernel files whose other kernels use
`THREADS`, which the options of the kernel it builds leave undefined. GCC reads every body and
refuses the code.

Where every error of a build is in the body of a function template of the code, the build is made
again with each such body replaced by the call of a function that exists nowhere. A template that
a kernel instantiates then calls it, which the library's undefined symbols show: the code's own
errors stand, as NVRTC would report them at the instantiation. Otherwise the library is what NVRTC
builds, and one line on stderr says which bodies were left out.
"""

from __future__ import annotations

import re

from . import source_text

#: the call a left-out body makes, numbered (the library's undefined symbols name it, mangled)
MARKER = "nn_cuda_cpu_unread_template_body_"
#: GCC's error placed in a named source: (file, line, column)
_ERROR = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): error: ", re.M)
#: a `#line 1 "name"` directive: where the code called `name` starts in the unit
_LINE_ONE = re.compile(r'^#line 1 "(?P<name>(?:[^"\\]|\\.)*)"\n', re.M)
#: a word that may stand between a function's `)` and its body's `{`, with `&` and spaces
_QUALIFIER = re.compile(r"(?:\bconst|\bvolatile|\bnoexcept|\boverride|\bfinal|\bmutable|&)$")
#: a trailing return type, the text after its `->`
_RETURN_TYPE = re.compile(r"[\w:<>,\s*&]+")


def _enclosing_braces(text: str, offsets: list[int]) -> dict[int, list[int]]:
    """For each offset, the positions of the `{` that enclose it in `text` (source_text.blanked's),
    outermost first."""
    stack, found, wanted = [], {}, sorted(set(offsets))
    for i, char in enumerate(text):
        while wanted and wanted[0] <= i:
            found[wanted.pop(0)] = list(stack)
        if not wanted:
            break
        if char == "{":
            stack.append(i)
        elif char == "}" and stack:
            stack.pop()
    return found


def _is_function_body(text: str, brace: int) -> bool:
    """Whether the `{` at `brace` opens a function's body: it follows the parameters' `)`, after
    qualifiers (`const`, `noexcept`, ...) or a trailing return type."""
    # Scanned back from the brace: a pattern anchored at the end and searched from the text's start
    # tries every position of a long run of spaces (a blanked comment), quadratic in its length
    # (minutes for a header of long comments).
    before = text[:brace]
    arrow = before.rfind("->")
    if arrow >= 0 and _RETURN_TYPE.fullmatch(before, arrow + 2):
        before = before[:arrow]
    while True:
        before = before.rstrip()
        qualifier = _QUALIFIER.search(before, max(0, len(before) - 9))
        if qualifier is None:
            return before.endswith(")")
        before = before[:qualifier.start()]


def _body_end(text: str, brace: int) -> int:
    """The position of the `}` that closes the `{` at `brace`."""
    depth = 0
    for i in range(brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return len(text)


def without_failing_bodies(unit: str, log: str) -> tuple[str, list[int]] | None:
    """`unit` with the body of each function that holds one of the build's errors (`log`) replaced by
    a numbered marker's call, on as many lines as it took, and the code's lines where those bodies
    start; None where an error is elsewhere than in a function's body of the code."""
    errors = list(_ERROR.finditer(log))
    # the code's start: the last `#line 1` of the name the errors give (the prelude before it may name
    # its own lines so too)
    code = next((start for start in reversed(list(_LINE_ONE.finditer(unit)))
                 if errors and start["name"] == errors[0]["file"]), None)
    if code is None:
        return None
    first_line = unit.count("\n", 0, code.end())  # the code's line 1, counted from 0
    line_starts = [0] + [m.end() for m in re.finditer("\n", unit)]
    offsets = []
    for error in errors:
        if error["file"] != code["name"] or first_line + int(error["line"]) - 1 >= len(line_starts):
            return None
        offsets.append(line_starts[first_line + int(error["line"]) - 1] + int(error["column"]) - 1)
    if not offsets:
        return None
    text = source_text.blanked(unit, directives=True)  # no brace of a comment, a text or a macro
    bodies = set()
    for enclosing in _enclosing_braces(text, offsets).values():
        body = next((brace for brace in enclosing if brace > code.end() and _is_function_body(text, brace)), None)
        if body is None:
            return None
        bodies.add(body)
    pieces, done, lines = [], 0, []
    for number, brace in enumerate(sorted(bodies)):
        if brace < done:  # inside a body already left out
            continue
        end = _body_end(text, brace)
        marker = f"{MARKER}{number}"
        pieces += [unit[done:brace + 1], f" extern void {marker}(); {marker}(); __builtin_unreachable(); ",
                   "\n" * unit.count("\n", brace, end)]
        lines.append(unit.count("\n", code.end(), brace) + 1)
        done = end
    return "".join(pieces) + unit[done:], lines


def instantiated(undefined_symbols: set[str]) -> bool:
    """Whether a library built without those bodies calls a marker: a kernel instantiates one of them."""
    return any(MARKER in name for name in undefined_symbols)
