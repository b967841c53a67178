"""`python -m nn_cuda.report [--results DIR] [--out DIR]`: write the report of the benchmark results.
`python -m nn_cuda.report --update`: rewrite the committed report/ from the committed results/.
`python -m nn_cuda.report --docs`: regenerate the result tables of README.md and docs/*.md.

Reads every JSON file of --results (default runs/, what ./run.sh writes; $NN_CUDA_BENCH_DIR moves
it), draws OUT/figures/*.png and writes OUT/REPORT.md (default runs/report/), and OUT/REPORT.pdf when
pandoc is installed. A user's runs thus never rewrite the repository: --update (results/ into
report/, after ./run.sh --update) and --docs are the explicit ways to do so. Inputs that
are missing or unreadable are listed at the top of the report and on the terminal.

The report is written from its inputs alone, never from its own previous output: a section whose
inputs are absent says which command measures them, and a figure without inputs is removed. A folder
with no usable result changes nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import failed
from ..interrupts import ends_in_one_line_when_interrupted, ends_in_one_line_while_starting

with ends_in_one_line_while_starting("nn_cuda.report"):
    from ..outputs import OutputError, write_bytes
    from . import doc_tables, figures
    from .inputs import KINDS, load_results
    from .markdown import write_report


def build_parser():
    p = argparse.ArgumentParser(prog="python -m nn_cuda.report", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=None,
                   help="folder of the benchmark JSON files (default: runs/, or $NN_CUDA_BENCH_DIR)")
    p.add_argument("--out", default=None, help="folder of REPORT.md and figures/ (default: runs/report/)")
    p.add_argument("--update", action="store_true",
                   help="the committed report: read results/ and write report/ (after ./run.sh --update)")
    p.add_argument("--no-pdf", action="store_true", help="do not try to convert REPORT.md to PDF")
    docs = p.add_mutually_exclusive_group()
    docs.add_argument("--docs", action="store_true",
                      help="instead of the report: regenerate the result tables of README.md and docs/*.md "
                           "from the JSON files their markers name")
    docs.add_argument("--check-docs", action="store_true",
                      help="instead of the report: list the result tables of README.md and docs/*.md that "
                           "differ from their JSON files (exit status 1 if any)")
    p.add_argument("--root", default=".", help="with --docs/--check-docs: the folder of README.md and docs/")
    return p


def update_docs(root: Path, write: bool) -> int:
    """--docs / --check-docs: the generated tables of the documents under `root`."""
    if not (root / "README.md").is_file():
        return failed("nn_cuda.report", f"no README.md in {root}; run it from the repository's root "
                      "(or give --root DIR)")
    try:
        stale = doc_tables.refresh(root, write)
    except (doc_tables.DocTableError, OutputError) as error:
        return failed("nn_cuda.report", error)
    names = ", ".join(str(path.relative_to(root)) for path in stale)
    if write:
        print(f"rewrote the result tables of {names}" if stale else "every result table was up to date")
        return 0
    if stale:
        blocks = [f"  {path.relative_to(root)} {block}" for path in stale for block in doc_tables.stale_blocks(path)]
        print("\n".join([f"result tables differ from their JSON files in {names}:", *blocks,
                         "`python -m nn_cuda.report --docs` regenerates them"]), file=sys.stderr)
        return 1
    print("every result table matches its JSON files")
    return 0


def draw_figures(results, figure_dir: Path) -> dict:
    """{name: path, or None where its inputs are absent}."""
    return {
        "gemm_ladder": figures.gemm_ladder(results.of("gemm"), figure_dir),
        "roofline": figures.roofline(results.of("roofline"), results.of("gemm"), figure_dir),
        "train_phases": figures.train_phases(results.of("train"), results.of("profile"), figure_dir),
        "scaling": figures.scaling(results.of("scaling"), figure_dir),
        "correctness": figures.correctness(results.of("diff"), figure_dir),
        "learning_curves": figures.learning_curves(results.of("history"), figure_dir),
    }


def convert_to_pdf(markdown: Path) -> str:
    pandoc = shutil.which("pandoc")
    if pandoc is None:
        return "no PDF: pandoc is not installed (the Markdown is complete without it)"
    pdf = markdown.with_suffix(".pdf")
    try:
        with tempfile.TemporaryDirectory() as folder:  # pandoc picks the format from the name's suffix
            made = Path(folder) / pdf.name
            subprocess.run([pandoc, markdown.name, "-o", str(made)], cwd=markdown.parent,
                           capture_output=True, text=True, check=True)
            write_bytes(pdf, made.read_bytes())
    except subprocess.CalledProcessError as job:
        last_line = job.stderr.strip().splitlines()[-1] if job.stderr.strip() else f"exit status {job.returncode}"
        return f"no PDF: pandoc failed ({last_line}); install a LaTeX engine or convert REPORT.md by hand"
    except OutputError as error:
        return f"no PDF: {error}"
    return f"wrote {pdf}"


@ends_in_one_line_when_interrupted("nn_cuda.report")
def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.docs or args.check_docs:
        return update_docs(Path(args.root), write=args.docs)
    if args.update and (args.results or args.out):
        parser.error("--update reads results/ and writes report/: drop --results and --out, or --update")
    runs = os.environ.get("NN_CUDA_BENCH_DIR") or "runs"
    results_dir = Path("results" if args.update else args.results or runs)
    out_dir = Path("report" if args.update else args.out or Path(runs) / "report")
    if not results_dir.is_dir():
        hint = ("./run.sh TARGET writes your benchmarks' records there (./run.sh lists the targets, ./run.sh "
                "all runs every one); report/REPORT.md is the report of the committed records, and --results "
                f"results draws it again into {out_dir}" if results_dir == Path(runs) else
                "give --results the folder of the benchmarks' JSON records")
        return failed("nn_cuda.report", f"no results folder {results_dir}: {hint}")
    results = load_results(results_dir)
    for bad, reason in results.rejected:
        print(f"not used: {bad}: {reason}")
    if len(results.missing()) == len(KINDS):
        return failed("nn_cuda.report", f"no usable benchmark result in {results_dir}, so nothing was "
                      f"written ({out_dir} is as it was); run ./run.sh all first (or give --results DIR)")
    try:
        drawn = draw_figures(results, out_dir / "figures")
        command = "python -m nn_cuda.report" + (" --update" if args.update else "")
        path = write_report(results, drawn, out_dir, command)
    except OutputError as error:
        return failed("nn_cuda.report", error)
    for kind in results.missing():
        print(f"missing input: {kind} ({KINDS[kind][0]})")
    for name, figure in drawn.items():
        old = out_dir / "figures" / f"{name}.png"
        if figure is not None:
            print(f"drew {figure}")
        elif old.exists():  # an earlier run's figure, which this report does not show
            old.unlink()
            print(f"removed {old}: no input for it in {results_dir}")
    print(f"wrote {path} and {sum(p is not None for p in drawn.values())} figures in {out_dir / 'figures'}")
    if not args.no_pdf:
        print(convert_to_pdf(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
