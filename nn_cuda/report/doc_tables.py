"""The result tables of README.md and docs/*.md, generated from the JSON files they name.

A generated table sits between two marker comments; the first names the kind of table and the
result files (paths relative to the Markdown file):

    <!-- results-table: runs ../results/accuracy_sample_e20.json ../results/accuracy_sample_e80_seed0.json -->
    ...generated, never edited by hand...
    <!-- end results-table -->

`python -m nn_cuda.report --docs` rewrites every such block from its files, with the machine, the
date and the command of the measurement under the table; `--check-docs` only says which blocks
differ from their files. Regenerating from unchanged files changes nothing (nothing here reads the
clock). The tables are drawn by the report's own functions (nn_cuda.report.markdown), so a number
in the docs and the same number in report/REPORT.md come from one file the same way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..outputs import write_text
from ..records import machine_name
from . import markdown, numbers
from .inputs import Result, check

BLOCK = re.compile(r"(?P<open><!-- results-table: (?P<kind>[\w-]+)(?P<files>(?: [^ >]+)+) -->\n)"
                   r"(?P<body>.*?)(?P<close><!-- end results-table -->)", re.S)
#: the Markdown files that may hold generated tables, relative to the repository root
DOCUMENTS = ("README.md", "docs/*.md")
#: flags of a training command that say where its records go, not what it trained
RECORD_FLAGS = {"--quiet": 0, "--history": 1, "--profile": 1}


class DocTableError(ValueError):
    """A marker names an unknown table or a result file that is missing or not of the right kind."""


def _load(path: Path, kind: str) -> Result:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise DocTableError(f"{path}: {error}") from None
    problem = check(data)
    if problem is None and data["benchmark"] != kind:
        problem = f"a {data['benchmark']!r} result, where a {kind!r} one is needed"
    if problem:
        raise DocTableError(f"{path}: {problem}")
    return Result(path, kind, data)


def shown_command(command: str) -> str:
    """A training command without the flags that only say where its records were written."""
    words, shown, skip = command.split(), [], 0
    for word in words:
        if "=" in word and not shown:  # an environment variable in front of the command
            shown.append(word)
        elif skip:
            skip -= 1
        elif word in RECORD_FLAGS:
            skip = RECORD_FLAGS[word]
        else:
            shown.append(word)
    return " ".join(shown)


def measured_on(results, with_command: bool) -> str:
    """One line: the machines and days of `results`, and their command when there is one."""
    machines = {}
    for result in results:
        machines.setdefault(machine_name(result.machine), set()).add(result.machine["date"][:10])
    where = "; ".join(f"{name}, {' to '.join(sorted({min(days), max(days)}))}" for name, days in machines.items())
    line = f"Measured on {where}"
    commands = list(dict.fromkeys(result.machine["command"] for result in results))
    if with_command:
        line += ": " + ", ".join(f"`{command}`" for command in commands)
    numpy = sorted({result.machine.get("numpy") for result in results if result.machine.get("numpy")})
    if numpy:
        line += f" (NumPy {', '.join(numpy)})"
    return line + "."


def runs_table(results) -> list[str]:
    """Training runs (`nn_cuda.train --history`): what each command reached and how fast."""
    rows = []
    for result in results:
        data = result.data
        last = data["epochs"][-1] if data["epochs"] else {}
        rows.append([f"`{shown_command(result.machine['command'])}`", data.get("steps", "-"),
                     markdown.fmt(last.get("loss"), ".2f"), markdown.accuracy_cell(data.get("val_acc")),
                     markdown.accuracy_cell(data.get("test_acc")),
                     f"{data['train_seconds']:.1f} s", f"{data.get('samples_per_second', 0):,.0f}"])
    lines = markdown.table(["command", "steps", "final loss", "validation accuracy", "test accuracy",
                             "training time", "samples/s"], rows)
    return lines + ["", measured_on(results, with_command=False)]


def _each(draw: Callable[[Result], list[str]]) -> Callable[[list[Result]], list[str]]:
    """A table kind that draws each file with `draw` (one benchmark run each), then says where and how
    they were measured."""
    def tables(results):
        lines = []
        for result in results:
            lines += draw(result)
        return lines + [measured_on(results, with_command=True)]
    return tables


def _scaling(results) -> list[str]:
    lines = []
    for series in numbers.scaling_series(results):
        lines += markdown.scaling_table(series)
    return lines + [measured_on(results, with_command=True)]


@dataclass(frozen=True)
class TableKind:
    result_kind: str  # the "benchmark" of the JSON files it reads
    draw: Callable[[list[Result]], list[str]]  # the block's lines


TABLES = {
    "runs": TableKind("history", runs_table),
    "gemm": TableKind("gemm", _each(lambda result: markdown.gemm_table(result) + [""])),
    "lr": TableKind("lr", _each(markdown.lr_table)),
    "train": TableKind("train", _each(markdown.train_table)),
    "scaling": TableKind("scaling", _scaling),
    "adversarial": TableKind("adversarial", _each(markdown.adversarial_tables)),
    "resources": TableKind("resources", _each(markdown.resources_table)),
    "launch": TableKind("launch", _each(markdown.launch_table)),
}


def render(kind: str, paths: list[Path]) -> str:
    """The Markdown of one block (ending with a newline)."""
    if kind not in TABLES:
        raise DocTableError(f"unknown table {kind!r}; the kinds are {', '.join(TABLES)}")
    table = TABLES[kind]
    results = [_load(path, table.result_kind) for path in paths]
    return "\n".join(table.draw(results)).rstrip("\n") + "\n"


def refresh_text(text: str, folder: Path) -> str:
    """`text` with every generated block drawn anew from its files (named relative to `folder`)."""
    def redraw(match):
        paths = [folder / name for name in match["files"].split()]
        return match["open"] + render(match["kind"], paths) + match["close"]
    return BLOCK.sub(redraw, text)


def documents(root: Path) -> list[Path]:
    found = []
    for pattern in DOCUMENTS:
        found += sorted(root.glob(pattern))
    return found


def stale_blocks(path: Path) -> list[str]:
    """"line N: the KIND table of FILES" for each generated block of `path` that its files no longer give."""
    text = path.read_text()
    found = []
    for match in BLOCK.finditer(text):
        if render(match["kind"], [path.parent / name for name in match["files"].split()]) != match["body"]:
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"line {line}: the {match['kind']} table of {match['files'].strip()}")
    return found


def refresh(root: Path, write: bool) -> list[Path]:
    """The documents under `root` whose generated blocks differ from their files (rewritten when
    `write`). Raises DocTableError, naming the document, when a block cannot be drawn."""
    stale = []
    for path in documents(root):
        text = path.read_text()
        try:
            fresh = refresh_text(text, path.parent)
        except DocTableError as error:
            raise DocTableError(f"{path.relative_to(root)}: {error}") from None
        if fresh != text:
            stale.append(path)
            if write:
                write_text(path, fresh)
    return stale
