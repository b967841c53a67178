"""What a run of the report keeps from the previous REPORT.md: the parts its inputs do not replace.

The report is a sequence of parts, each under a "## " or "### " heading. A results folder that holds
only some of the benchmarks' files must not erase what the others measured, so a part is copied from
the previous report (when it has a part with the same heading) if this run's inputs say nothing
about it:

- its section reads none of the kinds of result present in the folder (a section's kinds are those
  it asks `results.of` for): the whole section is kept; or
- all the part would say is that its inputs are absent (its lines are NOT_MEASURED notes).

The rows of the previous report's "Inputs" table for the kinds of the kept parts stay listed, so
that every number still names the file it came from. `compose` returns the lines and, for each
part, what was done and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: how a part says that an input is absent (markdown._missing); the kind follows in backquotes
NOT_MEASURED = "*Not measured:*"
_ABSENT_KIND = re.compile(re.escape(NOT_MEASURED) + r" no `([^`]+)` result")


@dataclass
class Decision:
    heading: str
    kept: bool
    why: str


class Reads:
    """`results` as a section sees it, noting the kinds the section asks for."""

    def __init__(self, results):
        self._results = results
        self.kinds: list[str] = []

    def of(self, kind: str) -> list:
        self.kinds.append(kind)
        return self._results.of(kind)

    def __getattr__(self, name):
        return getattr(self._results, name)


def compose(results, header: list[str], sections, previous: str | None):
    """(lines of the report, [Decision]) from the `header` lines and the `sections` (callables of
    `results` returning their lines), keeping what `previous` (the old REPORT.md) has that this
    run's inputs do not replace."""
    old_lines = previous.splitlines() if previous else []
    old_sections = {part[0]: part for part in _split(old_lines, "## ")}
    old_parts = {part[0]: part for part in _split(old_lines, "## ", "### ")}
    present = {kind for kind, found in results.found.items() if found}
    body, decisions, kept_kinds = [], [], set()
    for section in sections:
        reads = Reads(results)
        lines = section(reads)
        absent = sorted(set(reads.kinds) - present)
        if reads.kinds and len(absent) == len(set(reads.kinds)) and lines[0] in old_sections:
            body += old_sections[lines[0]]
            kept_kinds.update(absent)
            decisions.append(Decision(lines[0], True, f"no {', '.join(absent)} input"))
            continue
        for part in _split(lines, "## ", "### "):
            not_measured = _only_absent_kinds(part)
            if not_measured and part[0] in old_parts:
                body += old_parts[part[0]]
                kept_kinds.update(not_measured)
                decisions.append(Decision(part[0], True, f"no {', '.join(not_measured)} input"))
            else:
                body += part
                used = sorted(set(reads.kinds) & present)
                why = f"from {', '.join(used)}" if used else "no input, and none in the previous report"
                decisions.append(Decision(part[0], False, why))
    return header + _kept_inputs(old_lines, kept_kinds, decisions) + body, decisions


def _split(lines: list[str], *heading_marks: str) -> list[list[str]]:
    """The parts of `lines` that start at a heading (a line starting with one of `heading_marks`);
    lines before the first heading are left out."""
    parts = []
    for line in lines:
        if line.startswith(heading_marks):
            parts.append([line])
        elif parts:
            parts[-1].append(line)
    return parts


def _only_absent_kinds(part: list[str]) -> list[str]:
    """The kinds a part says are absent, when that is all it says (else [])."""
    said = [line for line in part[1:] if line.strip()]
    kinds = [_ABSENT_KIND.match(line) for line in said]
    if not said or not all(kinds):
        return []
    return [match.group(1) for match in kinds]


def _kept_inputs(old_lines: list[str], kinds: set, decisions: list) -> list[str]:
    """The note on the kept parts, with the previous report's Inputs rows of their kinds."""
    kept = [d.heading.lstrip("# ") for d in decisions if d.kept]
    if not kept:
        return []
    lines = ["**Kept from the previous report**, whose inputs are not in this folder: "
             + "; ".join(kept) + ".", ""]
    table = next((part for part in _split(old_lines, "## ") if part[0] == "## Inputs"), [])
    rows = [line for line in table if line.startswith("| `") and _cell(line, 1) in kinds]
    if rows:
        lines += ["Their inputs, as that report listed them:", ""]
        lines += [line for line in table if line.startswith(("| file", "|---"))][:2] + rows + [""]
    return lines


def _cell(row: str, index: int) -> str:
    return row.split("|")[index + 1].strip()
