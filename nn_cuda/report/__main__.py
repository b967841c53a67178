"""`python -m nn_cuda.report [--results DIR] [--out DIR]`: write the report of the benchmark results.

Reads every JSON file of --results (default bench_results/, what ./run.sh all writes), draws
OUT/figures/*.png and writes OUT/REPORT.md, and OUT/REPORT.pdf when pandoc is installed. Inputs that
are missing or unreadable are listed at the top of the report and on the terminal.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import figures
from .inputs import KINDS, load_results
from .markdown import write_report


def build_parser():
    p = argparse.ArgumentParser(prog="python -m nn_cuda.report", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=os.environ.get("NN_CUDA_BENCH_DIR", "bench_results"),
                   help="folder of the benchmark JSON files")
    p.add_argument("--out", default="report", help="folder of REPORT.md and figures/")
    p.add_argument("--no-pdf", action="store_true", help="do not try to convert REPORT.md to PDF")
    return p


def draw_figures(results, figure_dir: Path) -> dict:
    """{name: path} of the figures whose inputs exist; stale PNGs of this run's names are removed."""
    drawn = {
        "gemm_ladder": figures.gemm_ladder(results.of("gemm"), figure_dir),
        "roofline": figures.roofline(results.of("roofline"), results.of("gemm"), figure_dir),
        "train_phases": figures.train_phases(results.of("train"), results.of("profile"), figure_dir),
        "scaling": figures.scaling(results.of("scaling"), figure_dir),
        "correctness": figures.correctness(results.of("diff"), figure_dir),
        "learning_curves": figures.learning_curves(results.of("history"), figure_dir),
    }
    for name, path in drawn.items():
        stale = figure_dir / f"{name}.png"
        if path is None and stale.exists():
            stale.unlink()  # an old figure must not outlive its input
    return drawn


def convert_to_pdf(markdown: Path) -> str:
    pandoc = shutil.which("pandoc")
    if pandoc is None:
        return "no PDF: pandoc is not installed (the Markdown is complete without it)"
    pdf = markdown.with_suffix(".pdf")
    job = subprocess.run([pandoc, markdown.name, "-o", pdf.name], cwd=markdown.parent,
                         capture_output=True, text=True)
    if job.returncode != 0:
        last_line = job.stderr.strip().splitlines()[-1] if job.stderr.strip() else f"exit status {job.returncode}"
        return f"no PDF: pandoc failed ({last_line}); install a LaTeX engine or convert REPORT.md by hand"
    return f"wrote {pdf}"


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    results_dir, out_dir = Path(args.results), Path(args.out)
    if not results_dir.is_dir():
        print(f"nn_cuda.report: error: no results folder {results_dir}; run ./run.sh all first "
              "(or give --results DIR)", file=sys.stderr)
        return 1
    results = load_results(results_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn = draw_figures(results, out_dir / "figures")
    given = sys.argv[1:] if argv is None else list(argv)
    path = write_report(results, drawn, out_dir, " ".join(["python -m nn_cuda.report", *given]))
    for kind in results.missing():
        print(f"missing input: {kind} ({KINDS[kind][0]})")
    for bad, reason in results.rejected:
        print(f"not used: {bad}: {reason}")
    print(f"wrote {path} and {sum(p is not None for p in drawn.values())} figures in {out_dir / 'figures'}")
    if not args.no_pdf:
        print(convert_to_pdf(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
