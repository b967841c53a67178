"""The report's figures, one function each, drawn with matplotlib's Agg backend (no display).

Each function takes the loaded results (nn_cuda.report.inputs.Result) it needs and the output
folder, writes one PNG and returns its path, or None when its inputs hold nothing to draw. Every
figure carries, under the axes, the machine, the date and the command of each file it shows.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from ..outputs import atomic_file
from ..records import machine_line
from . import numbers

WEIGHTS = ("W1", "W2", "b1", "b2")


def _pyplot():
    """matplotlib's pyplot on the Agg backend (no display). Imported when a figure is drawn, not
    when the report's modules are: choosing a backend is a process-wide setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    return matplotlib.pyplot


def provenance(results) -> list[str]:
    """One line per distinct (machine, date, command) of `results`."""
    lines = []
    for result in results:
        line = f"{machine_line(result.machine)}; $ {result.machine['command']}"
        if line not in lines:
            lines.append(line)
    return lines


def _save(fig, results, path: Path) -> Path:
    width = int(fig.get_figwidth() * 21)  # characters of 6-point monospace across the figure
    lines = [part for line in provenance(results)
             for part in textwrap.wrap(line, width, subsequent_indent="    ")]
    fig.text(0.01, 0.005, "\n".join(lines), fontsize=6, va="bottom", ha="left", family="monospace")
    footer = (0.1 * len(lines) + 0.1) / fig.get_figheight()  # 6-point lines, about 0.1 inch each
    fig.tight_layout(rect=(0, footer, 1, 1))
    try:
        with atomic_file(path) as stream:  # rendered into a temporary file, then renamed
            fig.savefig(stream, format="png", dpi=110)
    finally:
        _pyplot().close(fig)
    return path


def gemm_ladder(gemm_results, out: Path):
    """GFLOP/s per algorithm and size (GPU files), else the simulator's relative error / tolerance."""
    timed = [r for r in gemm_results if r.data.get("timed")]
    shown = timed or gemm_results
    if not shown:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(shown), figsize=(6.5 * len(shown), 4.8), squeeze=False)
    for ax, result in zip(axes[0], shown):
        rows = result.data["results"]
        algos = list(dict.fromkeys(r["algo"] for r in rows))
        cases = list(dict.fromkeys(numbers.gemm_case(r) for r in rows))
        width = 0.8 / len(algos)
        for i, algo in enumerate(algos):
            values = []
            for case in cases:
                row = next((r for r in rows if r["algo"] == algo and numbers.gemm_case(r) == case), None)
                if row is None:
                    values.append(float("nan"))
                elif timed:
                    values.append(row.get("gflops", float("nan")))
                else:
                    values.append(row["rel_err"] / row["tolerance"])
            ax.bar([c + i * width for c in range(len(cases))], values, width, label=algo)
        ax.set_xticks([c + 0.4 - width / 2 for c in range(len(cases))])
        ax.set_xticklabels(cases, rotation=30, ha="right", fontsize=7)
        dtype = result.data.get("config", {}).get("dtype", "?")
        if timed:
            ax.set_ylabel("GFLOP/s (median of the calls)")
            ax.set_title(f"GEMM ladder, {result.data['backend']} {dtype}")
        else:
            ax.set_ylabel("relative error / tolerance (pass below 1)")
            ax.axhline(1.0, color="red", lw=0.8)
            ax.set_title(f"GEMM correctness, {result.data['backend']} {dtype} (no timing without a GPU)")
        ax.legend(fontsize=7)
    return _save(fig, shown, out / "gemm_ladder.png")


def roofline(roofline_results, gemm_results, out: Path):
    """Measured bandwidth and FLOP-rate roofs, with every measured GEMM at its arithmetic intensity."""
    if not roofline_results:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    used = []
    colors = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    for result in roofline_results:
        data = result.data
        bandwidth, peak = data["bandwidth_bytes_per_s"] / 1e9, data["peak_gflops"]
        color = next(colors)
        ax.plot([0.1, peak / bandwidth, 1e4], [0.1 * bandwidth, peak, peak], color=color,
                label=f"{data['device']} {data.get('config', {}).get('dtype', '')}: {bandwidth:.0f} GB/s, "
                      f"{peak:.0f} GFLOP/s")
        points = data.get("squares", []) + data.get("course_sizes", [])
        ax.scatter([p["intensity"] for p in points], [p["gflops"] for p in points], color=color, marker="x",
                   label=f"{data['device']} vendor GEMM")
        used.append(result)
    roof_dtypes = {r.data.get("config", {}).get("dtype", "float32") for r in roofline_results}
    roof_gpus = {r.data["machine"].get("gpu") for r in roofline_results}
    for result in gemm_results:
        dtype = result.data.get("config", {}).get("dtype", "float32")
        on_its_roof = dtype in roof_dtypes and result.data["machine"].get("gpu") in roof_gpus
        if not result.data.get("timed") or not on_its_roof:
            continue  # a GEMM belongs under the roof of its own precision, measured on its own device
        rows = [r for r in result.data["results"] if "gflops" in r]
        itemsize = 8 if result.data.get("config", {}).get("dtype") == "float64" else 4
        for algo in dict.fromkeys(r["algo"] for r in rows):
            mine = [r for r in rows if r["algo"] == algo]
            ax.scatter([numbers.intensity(r["M"], r["N"], r["K"], itemsize) for r in mine],
                       [r["gflops"] for r in mine], label=f"{algo} ({result.data['backend']} {dtype})", s=18)
        used.append(result)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte, each matrix moved once)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Roofline (measured copy bandwidth and best GEMM rate)")
    ax.legend(fontsize=7)
    return _save(fig, used, out / "roofline.png")


def train_phases(train_results, profile_results, out: Path):
    """Stacked milliseconds per step of each phase, per backend and GEMM algorithm."""
    bars = numbers.phase_bars(train_results, profile_results)
    if not bars:
        return None
    from ..profiling import PHASES

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(bars) + 3), 4.8))
    bottoms = [0.0] * len(bars)
    for phase in PHASES:
        values = [bar["ms"][phase] for bar in bars]
        ax.bar(range(len(bars)), values, bottom=bottoms, label=phase)
        bottoms = [b + v for b, v in zip(bottoms, values)]
    plain = [bar.get("plain_ms") for bar in bars]
    if any(p is not None for p in plain):
        ax.scatter([i for i, p in enumerate(plain) if p is not None], [p for p in plain if p is not None],
                   color="black", marker="_", s=400, label="ms/step untimed")
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([bar["label"] for bar in bars], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("ms per step")
    ax.set_title("Training step by phase")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    used = list({id(bar["source"]): bar["source"] for bar in bars}.values())
    return _save(fig, used, out / "train_phases.png")


def scaling(scaling_results, out: Path):
    """Samples/s against ranks (data and model parallelism), and bytes per step against the model."""
    series = numbers.scaling_series(scaling_results)
    if not series:
        return None
    plt = _pyplot()
    fig, (ax, ax_bytes) = plt.subplots(1, 2, figsize=(12, 4.8))
    for s in series:
        ax.plot(s["ranks"], s["samples_per_s"], marker="o", label=s["label"])
        ax_bytes.plot(s["ranks"], [b / 1e6 for b in s["payload_bytes"]], marker="o",
                      label=f"{s['label']}: measured payload")
        ax_bytes.plot(s["ranks"], [b / 1e6 for b in s["model_payload_bytes"]], ls="--", marker="x",
                      label=f"{s['label']}: cost model")
        ax_bytes.plot(s["ranks"], [b / 1e6 for b in s["wire_bytes"]], ls=":", marker=".",
                      label=f"{s['label']}: ring wire bytes")
    ax.set_xlabel("MPI ranks")
    ax.set_ylabel("samples / s")
    ax.set_title("Scaling")
    ax.legend(fontsize=7)
    from matplotlib.ticker import MaxNLocator

    for axis in (ax, ax_bytes):
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_bytes.set_yscale("log", nonpositive="mask")  # data and model parallelism differ ~100x; p = 1 sends 0
    ax_bytes.set_xlabel("MPI ranks")
    ax_bytes.set_ylabel("MB per step and rank (log; 0 not shown)")
    ax_bytes.set_title("Communication per step: measured and cost model")
    ax_bytes.legend(fontsize=6)
    return _save(fig, scaling_results, out / "scaling.png")


def correctness(diff_results, out: Path):
    """l2 relative error of each weight, float32 against float64, as lr, epochs, H and batch vary."""
    if not diff_results:
        return None
    result = diff_results[-1]
    rows = [r for r in result.data["results"] if "errors" in r]
    axes_names = list(dict.fromkeys(r["vary"] for r in rows))
    if not axes_names:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(axes_names), figsize=(3.6 * len(axes_names), 4.2), squeeze=False)
    limit = result.data["config"]["thresholds"]["float32"]
    for ax, name in zip(axes[0], axes_names):
        mine = [r for r in rows if r["vary"] == name]
        for weight in WEIGHTS:
            ax.plot([r["value"] for r in mine], [r["errors"][weight][1] for r in mine], marker="o", label=weight)
        ax.axhline(limit, color="red", lw=0.8, label=f"course threshold {limit:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(name)
        ax.set_title(f"vary {name}", fontsize=9)
    axes[0][0].set_ylabel("l2 relative error, float32 vs float64")
    axes[0][0].legend(fontsize=7)
    return _save(fig, [result], out / "correctness.png")


def learning_curves(history_results, out: Path):
    """Loss, and validation and test accuracy, per epoch of each --history run of two epochs or more
    (a run of one epoch has no curve; the report's table lists it)."""
    history_results = [result for result in history_results if len(result.data["epochs"]) >= 2]
    if not history_results:
        return None
    plt = _pyplot()
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(12, 5))
    for index, result in enumerate(history_results):
        epochs = result.data["epochs"]
        color = f"C{index % 10}"
        x = [e["epoch"] for e in epochs]
        ax_loss.plot(x, [e.get("loss", float("nan")) for e in epochs], marker=".", color=color,
                     label=numbers.history_label(result.data))
        ax_acc.plot(x, [e.get("val_acc", float("nan")) for e in epochs], marker=".", color=color)
        if any("test_acc" in e for e in epochs):
            ax_acc.plot(x, [e.get("test_acc", float("nan")) for e in epochs], ls="--", color=color)
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("training loss (last read-back of the epoch)")
    ax_loss.set_yscale("log")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy: validation (solid), test (dashed)")
    ax_loss.legend(fontsize=6)
    ax_loss.set_title("Learning curves (one colour per run)")
    return _save(fig, history_results, out / "learning_curves.png")
