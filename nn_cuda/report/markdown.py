"""REPORT.md: the sections of the report, written from the results and the figures' paths.

Every number printed here is read from a result file; a section whose input is missing says which
command produces it. Numbers measured on a GPU appear only where a file says it was measured on one.
"""

from __future__ import annotations

import datetime
import math

from .. import compare
from ..bench.common import format_ratio
from ..outputs import write_text
from ..profiling import PHASES
from . import numbers
from .figures import provenance
from .inputs import KINDS
from .keep import NOT_MEASURED, compose

GPU_SECTIONS = (
    "GEMM GFLOP/s and % of cuBLAS (`python -m nn_cuda.bench gemm --backend cupy`)",
    "the roofline of the GPU (`python -m nn_cuda.bench roofline` on a GPU machine)",
    "the training step of the CuPy and Numba backends, with its phases timed by CUDA events "
    "(`python -m nn_cuda.bench train --backend cupy --gemm naive,tiled,regblock,cublas`)",
    "scaling over GPUs (`python -m nn_cuda.bench scaling --backend cupy`, `--comm cuda-aware|nccl`)",
    "float32 on the GPU against the float64 reference (`python -m nn_cuda.bench diff`, which picks CuPy)",
)


def _g(value, spec=".3g") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if spec == ".3g" and float(value).is_integer():
        return str(int(value))
    return format(value, spec)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def _figure(path, title, out_dir) -> list[str]:
    if path is None:
        return []
    return [f"![{title}]({path.relative_to(out_dir).as_posix()})", ""]


def _sources(results) -> list[str]:
    return [f"Measured on {line}" if i == 0 else f"and on {line}" for i, line in enumerate(provenance(results))]


def _missing(kind) -> list[str]:
    command, what = KINDS[kind]
    if "PATH" not in command:
        command += " --json PATH"
    return [f"{NOT_MEASURED} no `{kind}` result in the inputs ({what}); `{command}` "
            "produces it (`./run.sh all` runs every benchmark).", ""]


def header(results, generated_by: str) -> list[str]:
    lines = ["# nn_cuda: benchmark report", "",
             f"Generated {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')} by "
             f"`{generated_by}` from the JSON files of `{results.folder}`. Every number below is read from "
             "those files; each figure names the machine, the date and the command of its data.", ""]
    files = [r for kind in KINDS for r in results.of(kind)]
    if files:
        lines += ["## Inputs", ""]
        lines += _table(["file", "kind", "machine", "date", "command"],
                        [[f"`{r.path.name}`", r.kind, _machine(r.machine), r.machine["date"],
                          f"`{r.machine['command']}`"] for r in files])
        lines.append("")
    missing = results.missing()
    if missing:
        lines += ["**Missing inputs:** " + ", ".join(f"`{kind}` ({KINDS[kind][0]})" for kind in missing) + ".", ""]
    for path, reason in results.rejected:
        lines += [f"**Not used:** `{path.name}`: {reason}.", ""]
    if not any(r.on_gpu for r in files):
        lines += ["**No GPU numbers.** None of the inputs was measured on a GPU, so this report shows what "
                  "a CPU can measure: the kernels' correctness in Numba's CUDA simulator, NumPy's "
                  "training step, MPI scaling on the CPU and float32 on the CPU against float64. "
                  "These sections need a machine with an NVIDIA GPU and CuPy (`./run.sh all` there):", ""]
        lines += [f"- {section}" for section in GPU_SECTIONS]
        lines.append("")
    return lines


def _machine(machine) -> str:
    gpu = machine.get("gpu") or "no GPU"
    return f"{machine['cpu']} ({machine.get('cores', '?')} cores), {gpu}"


def _gemm_timed_table(rows) -> list[str]:
    header = ["algo", "M x N x K op", "rel. error", "tolerance", "pass", "ms", "GFLOP/s", "% cuBLAS"]
    return _table(header, [[r["algo"], numbers.gemm_case(r), _g(r["rel_err"], ".2e"), _g(r["tolerance"], ".1e"),
                            "yes" if r["passed"] else "**no**", _g(r.get("time_ms"), ".3f"),
                            _g(r.get("gflops"), ".1f"), _g(r.get("percent_of_cublas"), ".1f")] for r in rows])


def _gemm_error_table(rows) -> list[str]:
    """One line per problem, the relative error of each algorithm side by side."""
    algos = list(dict.fromkeys(r["algo"] for r in rows))
    cases = list(dict.fromkeys(numbers.gemm_case(r) for r in rows))
    table = []
    for case in cases:
        mine = {r["algo"]: r for r in rows if numbers.gemm_case(r) == case}
        errors = [_g(mine[a]["rel_err"], ".2e") if a in mine else "-" for a in algos]
        passed = all(r["passed"] for r in mine.values())
        table.append([case, *errors, _g(next(iter(mine.values()))["tolerance"], ".1e"),
                      "yes" if passed else "**no**"])
    return _table(["M x N x K op", *(f"{a} rel. error" for a in algos), "tolerance", "all pass"], table)


def gemm_section(results, figures, out_dir) -> list[str]:
    lines = ["## 1. GEMM ladder", ""]
    gemm = results.of("gemm")
    if not gemm:
        lines += _missing("gemm")
    for result in gemm:
        data = result.data
        dtype = data.get("config", {}).get("dtype", "?")
        lines += [f"**{data['backend']} {dtype}** (`{result.path.name}`): "
                  + ("times by CUDA events, median of each algorithm's calls." if data.get("timed") else
                     "correctness only; the simulator runs one Python thread per CUDA thread, so its "
                     "times say nothing about a GPU and none are taken."), ""]
        lines += (_gemm_timed_table(data["results"]) if data.get("timed") else
                  _gemm_error_table(data["results"]))
        lines += [""] + _sources([result]) + [""]
    lines += _figure(figures.get("gemm_ladder"), "GEMM ladder", out_dir)
    lines += ["### Roofline", ""]
    roof = results.of("roofline")
    if not roof:
        lines += _missing("roofline")
    for result in roof:
        data = result.data
        peak, bandwidth = data["peak_gflops"], data["bandwidth_bytes_per_s"] / 1e9
        lines += [f"{data['device']}: copy bandwidth {bandwidth:.1f} GB/s, best vendor GEMM {peak:.1f} GFLOP/s, "
                  f"so the ridge point is at {peak / bandwidth:.1f} FLOP/byte (each time the fastest of "
                  f"{data.get('config', {}).get('repeat', '?')} calls). Arithmetic intensity counts each "
                  "matrix moved once (A, B read, C read and written), 2 M N K / (s (MK + KN + 2MN)).", ""]
        rows = [[f"{p['M']}x{p['N']}x{p['K']}", _g(p["intensity"], ".1f"), _g(p["gflops"], ".1f"),
                 _g(min(peak, p["intensity"] * bandwidth), ".1f")]
                for p in data.get("course_sizes", []) + data.get("squares", [])]
        lines += _table(["M x N x K", "FLOP/byte", "vendor GEMM GFLOP/s", "roof GFLOP/s"], rows)
        lines += ["", "The bandwidth is that of a copy much larger than the caches; a problem whose matrices "
                  "fit in a cache can run above the slanted roof."]
        lines += [""] + _sources([result]) + [""]
    lines += _figure(figures.get("roofline"), "Roofline", out_dir)
    return lines + resources_section(results)


def resources_section(results) -> list[str]:
    """What ptxas gives each kernel instance, its launch block, and the occupancy those allow."""
    lines = ["### Kernel resources and occupancy", ""]
    found = results.of("resources")
    if not found:
        return lines + _missing("resources")
    result = found[-1]
    data = result.data
    by_kernel = {}
    for row in data["results"]:
        by_kernel.setdefault(row["kernel"], {})[row["arch"]] = row
    archs = list(dict.fromkeys(row["arch"] for row in data["results"]))
    lines += [_resources_intro(data, archs), ""]
    header = ["kernel", "threads", f"registers {' / '.join(archs)}", "static smem B",
              *(f"{arch}: blocks, warps/SM (occupancy; limit)" for arch in archs)]
    rows = [[f"`{kernel}`", _across(per_arch, "threads"), " / ".join(str(per_arch[a]["registers"]) for a in archs),
             _across(per_arch, "smem_bytes"), *(_occupancy_cell(per_arch[a]) for a in archs)]
            for kernel, per_arch in by_kernel.items()]
    lines += _table(header, rows) + [""]
    lines += [_spills_line(data["results"], archs), ""]
    reading = _occupancy_reading(by_kernel)
    if reading:
        lines += [reading, ""]
    lines += _sources([result]) + [""]
    return lines


def _resources_intro(data, archs) -> str:
    compiler, limits = data.get("compiler", {}), data.get("sm_limits", {})
    first = limits.get(archs[0], {})
    shared = ", ".join(f"{limits[a]['shared_memory'] // 1024} KiB on {a}" for a in archs if a in limits)
    return (f"Every kernel instance compiled as the CuPy backend compiles it, without a GPU: NVRTC "
            f"{compiler.get('nvrtc', '?')} to PTX, then ptxas ({compiler.get('ptxas', '?')}) for "
            f"{' and '.join(archs)}. Registers per thread and static shared memory per block are ptxas's; "
            "threads per block are the launch table's (`nn_cuda/kernel_launch.py`). An SM holds as many "
            f"blocks as its threads ({first.get('threads', '?')}), registers ({first.get('registers', '?')}, "
            f"allocated per warp in units of {first.get('register_allocation_unit', '?')}), shared memory "
            f"({shared}, plus {first.get('reserved_shared_per_block', '?')} bytes per block for the driver) "
            f"and block slots ({first.get('blocks', '?')}) allow; occupancy is its resident warps over the "
            f"{first.get('threads', 0) // first.get('warp_size', 32)} it can hold.")


def _across(per_arch, key) -> str:
    """The value of `key` in each architecture's row: once when they agree, else each with its arch."""
    return _per_arch({arch: row[key] for arch, row in per_arch.items()})


def _per_arch(values: dict) -> str:
    if len(set(values.values())) == 1:
        return str(next(iter(values.values())))
    return ", ".join(f"{value} on {arch}" for arch, value in values.items())


def _occupancy_cell(row) -> str:
    return (f"{row['blocks_per_sm']}, {row['warps_per_sm']} ({row['occupancy']:.0%}; "
            f"{', '.join(row['limited_by'])})")


def _spills_line(rows, archs) -> str:
    spilling = [f"`{r['kernel']}` on {r['arch']} ({r['spill_stores']} B stored, {r['spill_loads']} B loaded, "
                f"{r['stack_bytes']} B of stack)" for r in rows
                if r["spill_stores"] or r["spill_loads"] or r["stack_bytes"]]
    if not spilling:
        return f"No instance spills registers or uses a stack frame on {' or '.join(archs)}."
    return "**Local memory:** " + "; ".join(spilling) + "."


def _occupancy_reading(by_kernel) -> str:
    """What the float32 GEMM rows imply, in two sentences (nothing when those rows are absent)."""
    tiled = by_kernel.get("gemm_tiled<float, false, false>")
    regblock = by_kernel.get("gemm_regblock<float, false, false>")
    if not tiled or not regblock:
        return ""
    warps_per_block = {arch: -(-row["threads"] // 32) for arch, row in tiled.items()}
    share = {arch: f"{warps_per_block[arch] / row['warps_per_sm']:.0%}" for arch, row in tiled.items()}
    return (f"What this implies for the float32 GEMMs: gemm_tiled's {_across(tiled, 'threads')}-thread "
            f"blocks fit {_across(tiled, 'blocks_per_sm')} per SM, so every `__syncthreads()` holds "
            f"{_per_arch(warps_per_block)} warps, {_per_arch(share)} of the SM's resident warps, until the "
            "block's slowest warp arrives. gemm_regblock's "
            f"{_across(regblock, 'threads')}-thread blocks keep elements of C in registers (per thread: "
            f"{_across(regblock, 'registers')}), so registers limit an SM to "
            f"{_across(regblock, 'blocks_per_sm')} blocks ({_across(regblock, 'warps_per_sm')} warps): fewer "
            "warps to hide memory latency, traded for independent multiply-adds within each thread. "
            "Occupancy says what can be resident, not how fast it runs; the ladder above measures that.")


def train_section(results, figures, out_dir) -> list[str]:
    lines = ["## 2. Training step", ""]
    train, profile = results.of("train"), results.of("profile")
    if not train:
        lines += _missing("train")
    for result in train:
        data = result.data
        config = data.get("config", {})
        timing = (f"{config['rounds']} rounds of {config.get('steps')} steps of each run, timed in turn; "
                  "ms/step is the median of the round medians and each ratio the median of the same "
                  "rounds' ratios [min-max]" if "rounds" in config else f"median of {config.get('steps')} steps")
        lines += [f"H = {config.get('hidden')}, batch {config.get('batch')}, {config.get('dtype')}, "
                  f"{data.get('flop_per_step', 0) / 1e9:.2f} GFLOP per step, {timing} "
                  f"(`{result.path.name}`).", ""]
        rows = [[r["name"], _g(r["ms_per_step"], ".2f"), _g(r["samples_per_s"], ",.0f"), _g(r["gflops"], ".1f"),
                 format_ratio(r.get("vs_torch")), format_ratio(r.get("vs_floor"))]
                for r in data["results"]]
        lines += _table(["run", "ms/step", "samples/s", "GFLOP/s", "speed vs PyTorch", "time / GEMM floor"],
                        rows) + [""]
        baseline = data.get("baseline") or {}
        if "gemm_floor_ms" in baseline:
            lines += [f"The step's five GEMMs alone through NumPy take {baseline['gemm_floor_ms']:.2f} ms "
                      f"({baseline['numpy_gemm_gflops']:.1f} GFLOP/s).", ""]
        lines += _sources([result]) + [""]
    bars = numbers.phase_bars(train, profile)
    if bars:
        lines += ["Phases, ms per step (timed in a separate run, every call timed: by CUDA events on a GPU, "
                  "by the host clock after a synchronize on the CPU):", ""]
        rows = [[bar["label"]] + [_g(bar["ms"][p], ".3f") for p in PHASES] + [_g(bar["plain_ms"], ".2f")]
                for bar in bars]
        lines += _table(["run", *PHASES, "untimed ms/step"], rows) + [""]
        for bar in bars:
            total, plain = sum(bar["ms"].values()), bar["plain_ms"]
            if plain and abs(total - plain) > 0.25 * plain:
                lines += [f"**{bar['label']}: the phases add up to {total:.1f} ms against {plain:.1f} ms "
                          "untimed.** The two are measured one after the other, so a difference this large "
                          "means the machine's speed changed between them (a shared or throttled machine); "
                          "rerun the benchmark before reading much into either.", ""]
    elif train:
        lines += ["*No phase breakdown in the inputs* (`python -m nn_cuda.bench train` writes one unless "
                  "`--phase-steps 0`).", ""]
    if not profile:
        lines += ["*No `train --profile` run in the inputs* (phases of a real training run).", ""]
    lines += _figure(figures.get("train_phases"), "Training step by phase", out_dir)
    return lines


def scaling_section(results, figures, out_dir) -> list[str]:
    lines = ["## 3. Scaling over MPI ranks", ""]
    scaling = results.of("scaling")
    if not scaling:
        return lines + _missing("scaling")
    series = numbers.scaling_series(scaling)
    for s in series:
        config = s["source"].data.get("config", {})
        lines += [f"**{s['label']}**: H = {config.get('hidden')}, batch {config.get('batch')}, "
                  f"{config.get('samples')} samples per epoch, {config.get('threads')} BLAS thread(s) per rank, "
                  f"--comm {config.get('comm')} (`{s['source'].path.name}`).", ""]
        rows = []
        for i, p in enumerate(s["ranks"]):
            split = s["split"][i]
            rows.append([p, _g(s["seconds_per_epoch"][i], ".3f"), _g(s["samples_per_s"][i], ",.0f"),
                         _g(s["speedup"][i], ".2f"), _g(s["efficiency"][i], ".2f"),
                         _g(split.get("compute"), ".3f"), _g(split.get("allreduce"), ".3f"),
                         _g(s["payload_bytes"][i] / 1e6, ".4f"), _g(s["model_payload_bytes"][i] / 1e6, ".4f"),
                         _g(s["wire_bytes"][i] / 1e6, ".4f")])
        lines += _table(["ranks", "s/epoch", "samples/s", "speedup", "efficiency", "compute s", "allreduce s",
                         "MB/step measured", "MB/step cost model", "ring wire MB"], rows) + [""]
    if not any(s["parallel"] == "model" for s in series):
        lines += ["*Model parallelism: not measured.* No input holds model-parallel scaling rows; "
                  "its cost model (10 B values per step, against 795 H + 10 for data parallelism) "
                  "is in `nn_cuda/parallel/cost_model.py`.", ""]
    lines += ["The cost model's payload is what each rank hands to MPI per step; a ring allreduce sends "
              "2 (p - 1) / p of it over the wire.", ""]
    lines += _sources(scaling) + [""]
    lines += _figure(figures.get("scaling"), "Scaling", out_dir)
    return lines


EXPLANATION = (
    "Why float32 drifts from float64: a float32 dot product of length K is rounded at every addition, "
    "and floating-point addition is not associative, so two implementations that add in different "
    "orders (a blocked BLAS, GPU tiles, a float64 reference) differ by up to about K u of the result "
    "(u = 2^-24 = 6e-8). Each step puts such differences into the weights and the next steps feed them "
    "back through the gradients, so the error grows with the number of steps (epochs, and smaller "
    "batches for the same epochs) and with K (H, and the 784 inputs); a larger learning rate multiplies "
    "every perturbation of the gradient into the weights by more, and a run near its stability limit "
    "amplifies it further."
)


def trends(rows) -> list[str]:
    """One line per varied setting: the worst error at its smallest and largest value (measured)."""
    lines = ["Measured, worst error at the ends of each sweep:"]
    for axis in dict.fromkeys(r["vary"] for r in rows):
        mine = sorted((r for r in rows if r["vary"] == axis and "errors" in r), key=lambda r: r["value"])
        if len(mine) < 2:
            continue
        worst = [max(max(p) for p in r["errors"].values()) for r in (mine[0], mine[-1])]
        lines.append(f"- {axis} {_g(mine[0]['value'])} -> {_g(mine[-1]['value'])}: "
                     f"{worst[0]:.2e} -> {worst[1]:.2e} ({worst[1] / worst[0]:.1f}x)")
    return lines


def correctness_section(results, figures, out_dir) -> list[str]:
    lines = ["## 4. Correctness: float32 against the float64 reference", ""]
    diff = results.of("diff")
    from ..grading import COURSE_MODES

    if not diff:
        lines += _missing("diff")
    else:
        result = diff[-1]
        data = result.data
        config = data["config"]
        lines += [f"{config['tested']} against {config['reference']}, final weights, from the same initial "
                  f"weights and batches, on `{config['dataset']}`; base run {config['base']}, one setting varied "
                  "at a time. Relative l2 errors (the course's measures, `nn_cuda.compare`); "
                  "`worst` is the largest of the max-norm and l2 errors of all four.", "", EXPLANATION, ""]
        rows = []
        for r in data["results"]:
            if "errors" not in r:
                rows.append([r["vary"], _g(r["value"]), "-", "diverged", "", "", "", "", ""])
                continue
            rows.append([r["vary"], _g(r["value"]), r["step"]]
                        + [_g(r["errors"][w][1], ".2e") for w in compare.COLUMN_ORDER]
                        + [_g(max(max(p) for p in r["errors"].values()), ".2e"),
                           "yes" if r.get("passes_float32") else "**no**"])
        within = f"within {config['thresholds']['float32']:g}"
        lines += _table(["vary", "value", "steps", "W1", "W2", "b1", "b2", "worst", within], rows) + [""]
        lines += trends(data["results"]) + [""]
        lines += _sources([result]) + [""]
    lines += ["### The course's grading modes", "",
              "Modes 1-3 train H = 100, batch 800, reg 1e-4 on raw 0-255 pixels with these settings and "
              "compare the backend under test with the CPU reference in the same precision; a run passes "
              f"when every relative error is at most {compare.THRESHOLDS['float32']:g} (float32) or "
              f"{compare.THRESHOLDS['float64']:g} (float64). Mode 4 is the GEMM test. The last column is "
              "measured: float32 at the mode's settings against float64 (`python -m nn_cuda.bench diff`).", ""]
    measured = {m["mode"]: m for m in (diff[-1].data.get("modes", []) if diff else [])}
    rows = []
    for mode, settings in COURSE_MODES.items():
        lr32, ep32 = settings["float32"]
        lr64, ep64 = settings["float64"]
        point = measured.get(mode)
        if point is None or "errors" not in point:
            found = "not measured" if point is None else "diverged"
        else:
            worst = max(max(p) for p in point["errors"].values())
            found = f"{worst:.2e} ({'pass' if point.get('passes_float32') else 'fail'}, {point['epochs']} epochs)"
        rows.append([mode, lr32, ep32, lr64, ep64, found])
    lines += _table(["mode", "float32 lr", "float32 epochs", "float64 lr", "float64 epochs",
                     "worst error float32 vs float64"], rows) + [""]
    lines += _figure(figures.get("correctness"), "float32 against float64", out_dir)
    return lines


def learning_section(results, figures, out_dir) -> list[str]:
    lines = ["## 5. Learning curves and the learning rate", ""]
    history = results.of("history")
    if history:
        rows = []
        for result in history:
            last = result.data["epochs"][-1]
            rows.append([numbers.history_label(result.data), last["epoch"], _g(last.get("loss"), ".4f"),
                         _g(last.get("val_acc"), ".4f"),
                         _g(last.get("test_acc", result.data.get("test_acc")), ".4f")])
        lines += _table(["run", "epochs", "final loss", "validation accuracy", "test accuracy"], rows) + [""]
        lines += _sources(history) + [""]
        lines += _figure(figures.get("learning_curves"), "Learning curves", out_dir)
    else:
        lines += _missing("history")
    return lines + lr_scan(results.of("lr"))


def lr_scan(found) -> list[str]:
    """The learning-rate scan: test accuracy per lr (rows) and seed (columns), PyTorch in brackets."""
    lines = ["### The learning rate", ""]
    if not found:
        return lines + _missing("lr")
    for result in found:
        data, config = result.data, result.data["config"]
        seeds = sorted({r["seed"] for r in data["results"]})
        steps = max((r["steps"] for r in data["results"] if r.get("steps")), default="?")
        with_torch = any("torch" in r for r in data["results"])
        lines += [f"Test accuracy on `{config['dataset']}`, H = {config['hidden']}, batch {config['batch']}, "
                  f"{config['epochs']} epochs ({steps} steps), {config['dtype']}, "
                  + ("raw 0-255 pixels (the course's input)" if config.get("pixels") == "raw" else "pixels in [0, 1]")
                  + ", one run per learning rate "
                  "and init seed" + ("; in brackets the same run by a plain PyTorch loop (same initial "
                                     "weights and batches)." if with_torch else "."), ""]
        rows = []
        for lr in sorted({r["lr"] for r in data["results"]}):
            cells = [_g(lr)]
            for seed in seeds:
                run = next((r for r in data["results"] if r["lr"] == lr and r["seed"] == seed), None)
                cell = "-" if run is None else _accuracy(run["test_acc"])
                if run is not None and "torch" in run:
                    cell += f" ({_accuracy(run['torch']['test_acc'])})"
                cells.append(cell)
            rows.append(cells)
        lines += _table(["lr"] + [f"seed {s}" for s in seeds], rows) + [""]
        lines += _sources([result]) + [""]
    return lines


def _accuracy(value) -> str:
    return "diverged" if value is None else f"{value:.3f}"


def _robustness_row(label, rows) -> list[str]:
    by_eps = sorted(rows, key=lambda r: r["eps"])
    return [label, _g(by_eps[0]["clean"], ".3f")] + [f"{r['fgsm']:.3f} / {r['pgd']:.3f}" for r in by_eps]


def adversarial_section(results, figures, out_dir) -> list[str]:
    lines = ["## 6. Asynchronous adversarial training", ""]
    found = results.of("adversarial")
    if not found:
        return lines + _missing("adversarial")
    for result in found:
        data = result.data
        rows = [[r["ranks"], r["k"], _g(r["serial_seconds"]), _g(r["async_seconds"]),
                 f"{r['speedup']:.2f}x",
                 ", ".join(f"{k}: {v}" for k, v in sorted(r["staleness_histogram"].items(),
                                                          key=lambda kv: int(kv[0])))]
                for r in data["results"]]
        lines += ["Serial PGD training against the pipeline (rank 0 updates, P - 1 ranks generate the "
                  "adversaries), at equal k = P - 1; the fastest of the repeated runs.", ""]
        lines += _table(["P", "k", "serial s", "async s", "speedup", "staleness: count"], rows) + [""]
        eps = sorted(r["eps"] for r in data["plain"]["robustness"])
        robust = [_robustness_row("plain SGD", data["plain"]["robustness"])]
        for r in data["results"]:
            robust.append(_robustness_row(f"serial PGD, k={r['k']}", r["serial_robustness"]))
            robust.append(_robustness_row(f"async PGD, P={r['ranks']}", r["async_robustness"]))
        lines += _table(["model", "clean"] + [f"eps {e:g}: FGSM / PGD" for e in eps], robust) + [""]
    lines += _sources(found) + [""]
    return lines


def write_report(results, figures: dict, out_dir, generated_by: str):
    """Write OUT/REPORT.md, keeping the parts of the previous one that `results` do not replace
    (nn_cuda.report.keep); returns its path and what was done with each part."""
    path = out_dir / "REPORT.md"
    previous = path.read_text() if path.is_file() else None
    sections = [lambda reads, section=section: section(reads, figures, out_dir)
                for section in (gemm_section, train_section, scaling_section, correctness_section,
                                learning_section, adversarial_section)]
    lines, decisions = compose(results, header(results, generated_by), sections, previous)
    write_text(path, "\n".join(lines).rstrip() + "\n")
    return path, decisions
