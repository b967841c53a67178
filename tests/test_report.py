"""python -m nn_cuda.report on small benchmark JSON files made here: every figure and section, and
missing or broken inputs reported rather than filled in."""

import json
import os
import shutil
from pathlib import Path

from nn_cuda.profiling import PHASES
from nn_cuda.report.__main__ import main
from nn_cuda.report.figures import provenance
from nn_cuda.report.inputs import load_results

FIGURES = ("gemm_ladder", "roofline", "train_phases", "scaling", "correctness", "learning_curves")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def machine(command, gpu=None):
    return {"date": "2026-01-02T03:04:05+00:00", "command": command, "cpu": "Test CPU @ 1GHz",
            "cores": 2, "gpu": gpu, "platform": "test", "python": "3", "numpy": "2"}


def gemm(timed):
    rows = []
    for algo, gflops in (("naive", 111.0), ("tiled", 222.0), ("cublas", 999.0)):
        row = {"algo": algo, "backend": "cupy" if timed else "numba-sim", "dtype": "float32", "trans": "NN",
               "M": 800, "N": 1000, "K": 784, "rel_err": 1.5e-7, "tolerance": 4.7e-5, "passed": True}
        if timed:
            row.update(time_ms=1.0, gflops=gflops, percent_of_cublas=100 * gflops / 999.0)
        rows.append(row)
    return {"benchmark": "gemm", "backend": rows[0]["backend"], "timed": timed,
            "machine": machine("python -m nn_cuda.bench gemm --backend X", "Test GPU" if timed else None),
            "config": {"dtype": "float32"}, "results": rows}


def scaling_rows(parallel):
    rows = []
    for p in (1, 2):
        payload = 318040.0 if parallel == "data" else 32000.0
        rows.append({"ranks": p, "overlap": False, "parallel": parallel, "backend": "numpy",
                     "steps_per_epoch": 4, "samples_per_epoch": 3200, "seconds_per_epoch": 0.5 / p,
                     "samples_per_second": 6400.0 * p, "speedup": float(p), "efficiency": 1.0,
                     "split": {"compute": 0.4, "allreduce": 0.05, "other": 0.05}, "allreduce_wait": 0.01,
                     "allreduce_calls_per_step": 1.0,
                     "payload_bytes_per_step": payload, "wire_bytes_per_step": payload * (p - 1) / p * 2})
    return rows


def resource_row(kernel, arch, threads, registers, smem_bytes, blocks, limited_by, spill_stores=0):
    warps = blocks * threads // 32
    return {"file": "x.cu", "kernel": kernel, "arch": arch, "threads": threads, "registers": registers,
            "smem_bytes": smem_bytes, "stack_bytes": 0, "spill_stores": spill_stores, "spill_loads": 0,
            "blocks_per_sm": blocks, "warps_per_sm": warps, "occupancy": warps / 64, "limited_by": limited_by}


RESOURCE_ROWS = [
    resource_row("gemm_tiled<float, false, false>", "sm_80", 1024, 32, 8448, 2, ["threads", "registers"]),
    resource_row("gemm_tiled<float, false, false>", "sm_90", 1024, 30, 8448, 2, ["threads", "registers"]),
    resource_row("gemm_regblock<float, false, false>", "sm_80", 64, 56, 256, 18, ["registers"]),
    resource_row("gemm_regblock<float, false, false>", "sm_90", 64, 51, 256, 18, ["registers"]),
]
SM_LIMITS = {arch: {"shared_memory": kib * 1024, "registers": 65536, "threads": 2048, "blocks": 32,
                    "register_allocation_unit": 256, "reserved_shared_per_block": 1024, "warp_size": 32}
             for arch, kib in (("sm_80", 164), ("sm_90", 228))}

ROBUST_PLAIN = [{"eps": e, "clean": 0.8, "fgsm": 0.5 - e, "pgd": 0.4 - e, "steps": 20, "alpha": e / 8}
                for e in (0.05, 0.1, 0.2)]


def write_inputs(folder: Path, gpu=False, skip=()):
    files = {
        "gemm.json": gemm(timed=gpu),
        "roofline.json": {"benchmark": "roofline", "machine": machine("python -m nn_cuda.bench roofline"),
                          "device": "numpy (CPU)", "bandwidth_bytes_per_s": 5e9, "peak_gflops": 70.0,
                          "squares": [{"M": 512, "N": 512, "K": 512, "gflops": 40.0, "intensity": 64.0}],
                          "course_sizes": [{"M": 800, "N": 10, "K": 1000, "gflops": 9.0, "intensity": 4.8}]},
        "train.json": {"benchmark": "train", "machine": machine("python -m nn_cuda.bench train"),
                       "config": {"hidden": 1000, "batch": 800, "dtype": "float32", "steps": 5},
                       "flop_per_step": 2.5e9, "baseline": {"gemm_floor_ms": 50.0, "numpy_gemm_gflops": 50.0},
                       "results": [{"name": "nn_cuda numpy/numpy", "backend": "numpy", "gemm": "numpy",
                                    "ms_per_step": 123.45, "samples_per_s": 6480.0, "gflops": 20.7,
                                    "vs_floor": {"median": 1.25, "min": 1.125, "max": 1.5},
                                    "phases": {"clock": "host", "steps": 3,
                                               "ms_per_step": {p: 10.0 + i for i, p in enumerate(PHASES)}}}]},
        "profile.json": {"benchmark": "profile", "machine": machine("python -m nn_cuda.train --profile p.json"),
                         "config": {"backend": "numpy"},
                         "profile": {"backend": "numpy", "gemm": "numpy", "steps": 10,
                                     "ms_per_step": {p: 1.0 for p in PHASES}}},
        "scaling.json": {"benchmark": "scaling", "machine": machine("python -m nn_cuda.bench scaling --ranks 1,2"),
                         "config": {"hidden": 100, "batch": 800, "dtype": "float32", "samples": 3200,
                                    "threads": 1, "comm": "host", "backend": "numpy"},
                         "results": scaling_rows("data") + scaling_rows("model")},
        "diff.json": {"benchmark": "diff", "machine": machine("python -m nn_cuda.bench diff"),
                      "config": {"backend": "numpy", "dataset": "mnist-sample", "base": {"lr": 0.5},
                                 "thresholds": {"float32": 1e-4, "float64": 1e-7},
                                 "reference": "numpy float64", "tested": "numpy float32"},
                      "results": [{"vary": axis, "value": value, "step": 5,
                                   "errors": {w: [value * 1e-7, value * 2e-7] for w in ("W1", "W2", "b1", "b2")},
                                   "passes_float32": True}
                                  for axis in ("lr", "epochs") for value in (1, 4)],
                      "modes": [{"mode": 3, "lr": 0.002, "epochs": 1, "passes_float32": True,
                                 "errors": {w: [6.5e-7, 3e-7] for w in ("W1", "W2", "b1", "b2")}}]},
        "history.json": {"benchmark": "history", "machine": machine("python -m nn_cuda.train --history h.json"),
                         "config": {"backend": "numpy", "dtype": "float32", "hidden": 100, "lr": 0.5},
                         "epochs": [{"epoch": 1, "loss": 2.1, "val_acc": 0.5, "test_acc": 0.49},
                                    {"epoch": 2, "loss": 1.7, "val_acc": 0.6125, "test_acc": 0.6}]},
        "lr.json": {"benchmark": "lr", "machine": machine("python -m nn_cuda.bench lr --torch"),
                    "config": {"dataset": "mnist-sample", "hidden": 1000, "batch": 800, "epochs": 20,
                               "dtype": "float32"},
                    "results": [{"lr": 0.5, "seed": 0, "test_acc": 0.717, "steps": 100, "diverged": False,
                                 "torch": {"test_acc": 0.716}},
                                {"lr": 2.0, "seed": 0, "test_acc": None, "diverged": True,
                                 "torch": {"test_acc": None}}]},
        "lr_raw.json": {"benchmark": "lr", "machine": machine("python -m nn_cuda.bench lr --pixels raw"),
                        "config": {"dataset": "mnist-sample", "hidden": 1000, "batch": 800, "epochs": 20,
                                   "dtype": "float32", "pixels": "raw"},
                        "results": [{"lr": 0.2, "seed": 0, "test_acc": 0.933, "steps": 100, "diverged": False}]},
        "resources.json": {"benchmark": "resources",
                           "machine": machine("python -m nn_cuda.kernel_resources --json r.json"),
                           "compiler": {"nvrtc": "13.5", "ptxas": "release 13.5, V13.5.37"},
                           "sm_limits": SM_LIMITS, "results": RESOURCE_ROWS},
        "adversarial.json": {"benchmark": "adversarial", "machine": machine("python -m nn_cuda.bench adversarial"),
                             "settings": {}, "plain": {"robustness": ROBUST_PLAIN},
                             "results": [{"ranks": 2, "k": 1, "serial_seconds": 4.0, "async_seconds": 2.5,
                                          "speedup": 1.6, "staleness_histogram": {"0": 1, "1": 17},
                                          "serial_robustness": ROBUST_PLAIN, "async_robustness": ROBUST_PLAIN}]},
        "launch.json": {"benchmark": "launch", "machine": machine("python -m nn_cuda.bench launch"),
                        "backend": "cuda-cpu", "results": [{"operation": "gemm", "python_calls": 12,
                                                            "launch_us": 46.5, "numpy_us": 1.5}]},
        "launch_cupy.json": {"benchmark": "launch", "machine": machine("python scripts/bench_launch.py --backend cupy"),
                             "backend": "cupy", "results": [{"operation": "gemm", "python_calls": 9,
                                                             "launch_us": 20.0, "numpy_us": 2.5}]},
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        if name.split(".")[0] not in skip:
            (folder / name).write_text(json.dumps(data))
    return folder


def run_report(tmp_path, **kwargs):
    results = write_inputs(tmp_path / "results", **kwargs)
    out = tmp_path / "report"
    assert main(["--results", str(results), "--out", str(out), "--no-pdf"]) == 0
    return out, (out / "REPORT.md").read_text()


def test_every_figure_and_section_from_complete_inputs(tmp_path):
    out, text = run_report(tmp_path, gpu=True)
    for name in FIGURES:
        png = out / "figures" / f"{name}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC, name
        assert f"(figures/{name}.png)" in text
    for title in ("## 1. GEMM ladder", "### Roofline", "## 2. Training step", "## 3. Scaling",
                  "## 4. Correctness", "### The course's grading modes", "## 5. Learning curves",
                  "## 6. Asynchronous adversarial training"):
        assert title in text
    # numbers come from the files
    assert "| 2 | 1 | 4 | 2.5 | 1.60x | 0: 1, 1: 17 |" in text and "0.450 / 0.350" in text
    assert "222.0" in text and "123.45" in text and "0.6125" in text and "6.50e-07" in text
    assert "Missing inputs" not in text and "No GPU numbers" not in text
    assert "Model parallelism: not measured" not in text
    # model parallel cost model: 10 values x 3200 samples x 4 bytes / 4 steps = 0.032 MB per step
    assert "| 1 | 0.500 | 6,400 | 1.00 | 1.00 | 0.400 | 0.050 | 0.010 | 1 | 0.0320 | 0.0320 | 0.0000 |" in text
    assert "Test CPU @ 1GHz" in text and "python -m nn_cuda.bench scaling --ranks 1,2" in text
    assert "| 0.5 | 0.717 (0.716) |" in text and "| 2 | diverged (diverged) |" in text  # the lr scan
    assert "float32, pixels in [0, 1]," in text and "| 0.2 | 0.933 |" in text  # and its raw-pixel twin
    assert text.index("float32, pixels in [0, 1],") < text.index("float32, raw 0-255 pixels (the course's input)")
    assert "| - | 1.25x [1.12-1.50] |" in text  # per-round ratios: median [min-max]; no torch: -
    assert "| `gemm` | 12 | 46.5 us | 1.5 us | 31.0x |" in text  # the launch's cost, on each backend measured
    assert "| `gemm` | 9 | 20.0 us | 2.5 us | 8.0x |" in text and "| cupy launch |" in text


def test_kernel_resources_section_shows_each_instance_on_each_architecture(tmp_path):
    out, text = run_report(tmp_path)
    section = text[text.index("### Kernel resources and occupancy"):text.index("## 2. Training step")]
    assert "NVRTC 13.5 to PTX, then ptxas (release 13.5, V13.5.37) for sm_80 and sm_90" in section
    assert "shared memory (164 KiB on sm_80, 228 KiB on sm_90, plus 1024 bytes per block" in section
    assert ("| `gemm_tiled<float, false, false>` | 1024 | 32 / 30 | 8448 | 2, 64 (100%; threads, registers) "
            "| 2, 64 (100%; threads, registers) |") in section
    assert "| `gemm_regblock<float, false, false>` | 64 | 56 / 51 | 256 | 18, 36 (56%; registers) |" in section
    assert "No instance spills registers or uses a stack frame on sm_80 or sm_90." in section
    assert "holds 32 warps, 50% of the SM's resident warps" in section
    assert "(per thread: 56 on sm_80, 51 on sm_90), so registers limit an SM to 18 blocks (36 warps)" in section
    assert "$ python -m nn_cuda.kernel_resources --json r.json" in section


def test_every_diff_and_resources_record_is_shown_not_the_last_alone(tmp_path):
    # results/diff.json (NumPy) and diff_cupy.json (a GPU): the report showed the last one read only
    results = write_inputs(tmp_path / "results")
    for kind in ("diff", "resources"):
        data = json.loads((results / f"{kind}.json").read_text())
        data["machine"]["command"] += " --second"
        if kind == "diff":
            data["config"]["tested"] = "cupy float32"
        (results / f"{kind}_second.json").write_text(json.dumps(data))
    assert main(["--results", str(results), "--out", str(tmp_path / "out"), "--no-pdf"]) == 0
    text = (tmp_path / "out" / "REPORT.md").read_text()
    correctness = text[text.index("## 4. Correctness"):text.index("## 5.")]
    assert "numpy float32 against numpy float64" in correctness and "cupy float32 against numpy float64" in correctness
    resources = text[text.index("### Kernel resources and occupancy"):text.index("## 2. Training step")]
    assert resources.count("$ python -m nn_cuda.kernel_resources --json r.json") == 2


def test_two_training_runs_alike_are_told_apart_by_their_files(tmp_path):
    # the plain and the checking-mode runs of the CPU runner read as the same row twice
    results = write_inputs(tmp_path / "results")
    (results / "history_again.json").write_text((results / "history.json").read_text())
    assert main(["--results", str(results), "--out", str(tmp_path / "out"), "--no-pdf"]) == 0
    text = (tmp_path / "out" / "REPORT.md").read_text()
    curves = text[text.index("## 5."):]
    assert "(`history.json`) |" in curves and "(`history_again.json`) |" in curves


def test_kernel_resources_section_names_spills_and_says_when_it_has_no_input(tmp_path):
    results = write_inputs(tmp_path / "results")
    data = json.loads((results / "resources.json").read_text())
    data["results"][3]["spill_stores"] = 8
    (results / "resources.json").write_text(json.dumps(data))
    assert main(["--results", str(results), "--out", str(tmp_path / "out"), "--no-pdf"]) == 0
    text = (tmp_path / "out" / "REPORT.md").read_text()
    assert "**Local memory:** `gemm_regblock<float, false, false>` on sm_90 (8 B stored" in text
    assert "No instance spills" not in text

    _, text = run_report(tmp_path / "again", skip=("resources",))
    assert "no `resources` result in the inputs" in text
    assert "`python -m nn_cuda.kernel_resources --json PATH` produces it" in text


def test_the_roofline_plots_a_gemm_only_under_the_roof_of_its_own_device(tmp_path, monkeypatch):
    # The H200's GEMMs were drawn under the CPU's roof, 100x above it.
    import json

    from nn_cuda.report import figures
    from nn_cuda.report.inputs import Result

    write_inputs(tmp_path)
    roof = Result(None, "roofline", json.loads((tmp_path / "roofline.json").read_text()))
    on_gpu, on_cpu = Result(None, "gemm", gemm(timed=True)), Result(None, "gemm", gemm(timed=True))
    on_cpu.data["machine"]["gpu"] = None  # a timed GEMM of the roof's own machine (cuda-cpu, numpy)
    drawn = {}
    monkeypatch.setattr(figures, "_save", lambda fig, results, path: drawn.setdefault("results", results))
    figures.roofline([roof], [on_gpu, on_cpu], tmp_path)
    figures._pyplot().close("all")
    assert drawn["results"] == [roof, on_cpu]


def test_cpu_only_inputs_say_which_sections_need_a_gpu(tmp_path):
    out, text = run_report(tmp_path, gpu=False)
    assert "No GPU numbers" in text and "correctness only" in text
    assert "GFLOP/s and % of cuBLAS" in text
    assert "% cuBLAS |" not in text  # no timing columns for the simulator


def test_gpu_inputs_of_some_kinds_leave_the_others_named(tmp_path):
    # Only the GEMMs were measured on a GPU here, as in results/ after the first H200 run.
    out, text = run_report(tmp_path, gpu=True)
    assert "Not measured on a GPU yet" in text and "No GPU numbers" not in text
    assert "the roofline of the GPU" in text and "scaling over GPUs" in text
    assert "GEMM GFLOP/s and % of cuBLAS" not in text


def test_gpu_phases_under_the_step_say_host_bound_and_cpu_ones_say_the_machine_changed(tmp_path):
    # On an H200 the CUDA events of Numba's step summed 0.8 ms in a 2.1-ms step: the host's launches,
    # not a machine that changed speed, which is what a gap means where the host clock times both.
    folder = write_inputs(tmp_path / "results")
    train = json.loads((folder / "train.json").read_text())
    cpu_row = train["results"][0]  # phases 10-15 ms each (75 ms in all) in a 123-ms step
    gpu_row = {**cpu_row, "name": "nn_cuda numba/tiled", "backend": "numba", "gemm": "tiled"}
    gpu_row["phases"] = {"clock": "cuda events", "steps": 3, "ms_per_step": {p: 0.1 for p in PHASES}}
    gpu_row["ms_per_step"] = 2.13
    for name, row, gpu in (("train.json", cpu_row, None), ("train_gpu.json", gpu_row, "Test GPU")):
        (folder / name).write_text(json.dumps({**train, "machine": machine("python -m nn_cuda.bench train", gpu),
                                               "results": [row]}))
    assert main(["--results", str(folder), "--out", str(tmp_path / "report"), "--no-pdf"]) == 0
    text = (tmp_path / "report" / "REPORT.md").read_text()
    assert f"**numba/tiled (bench): {0.1 * len(PHASES):.2f} ms of GPU work in a 2.13-ms step.**" in text
    assert "numba/tiled (bench): the phases add up" not in text
    assert "**numpy/numpy (bench): the phases add up to 75.0 ms against 123.5 ms untimed.**" in text


def test_missing_inputs_are_reported_not_invented(tmp_path):
    out, text = run_report(tmp_path, skip=("scaling", "history", "diff"))
    assert "**Missing inputs:**" in text
    for kind in ("scaling", "history", "diff"):
        assert f"no `{kind}` result in the inputs" in text
    for name in ("scaling", "learning_curves", "correctness"):
        assert not (out / "figures" / f"{name}.png").exists()
    assert (out / "figures" / "gemm_ladder.png").exists()
    assert "not measured" in text  # the grading modes' measured column
    assert "samples/s | speedup" not in text


def test_model_parallel_absent_is_said(tmp_path):
    results = write_inputs(tmp_path / "results")
    data = json.loads((results / "scaling.json").read_text())
    data["results"] = [r for r in data["results"] if r["parallel"] == "data"]
    (results / "scaling.json").write_text(json.dumps(data))
    assert main(["--results", str(results), "--out", str(tmp_path / "out"), "--no-pdf"]) == 0
    assert "Model parallelism: not measured" in (tmp_path / "out" / "REPORT.md").read_text()


def test_broken_files_are_listed(tmp_path):
    results = write_inputs(tmp_path / "results")
    (results / "garbage.json").write_text("{not json")
    (results / "other.json").write_text(json.dumps({"benchmark": "gemm", "results": []}))
    loaded = load_results(results)
    reasons = {path.name: reason for path, reason in loaded.rejected}
    assert reasons["garbage.json"].startswith("unreadable")
    assert "machine record" in reasons["other.json"]
    assert main(["--results", str(results), "--out", str(tmp_path / "out"), "--no-pdf"]) == 0
    assert "**Not used:** `garbage.json`" in (tmp_path / "out" / "REPORT.md").read_text()


def test_no_results_folder_is_one_clear_error(tmp_path, capsys, monkeypatch):
    assert main(["--results", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 1
    assert f"no results folder {tmp_path / 'nowhere'}: give --results the folder" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing written
    monkeypatch.chdir(tmp_path)  # no runs/ yet: what makes one, and the report there is already
    assert main([]) == 1
    error = capsys.readouterr().err
    assert "no results folder runs: ./run.sh TARGET writes your benchmarks' records there" in error
    assert "report/REPORT.md is the report of the committed records, and --results results" in error


def test_provenance_names_machine_date_and_command(tmp_path):
    loaded = load_results(write_inputs(tmp_path / "results"))
    (line,) = provenance(loaded.of("train"))
    assert "Test CPU @ 1GHz (2 cores), no GPU" in line
    assert "2026-01-02T03:04:05+00:00" in line and "$ python -m nn_cuda.bench train" in line


def test_cost_model_prefers_the_benchmarks_own_figure():
    from nn_cuda.report.numbers import modelled_bytes

    row = {"samples_per_epoch": 3200, "steps_per_epoch": 4}
    # data parallelism: the gradient buffer, 795 H + 10 floats
    assert modelled_bytes(row, "data", 100, 4) == (795 * 100 + 10) * 4
    # model parallelism: 10 logits per sample, 800 samples per step
    assert modelled_bytes(row, "model", 100, 4) == 10 * 800 * 4
    assert modelled_bytes({**row, "modelled_payload_bytes_per_step": 123.0}, "hybrid", 100, 4) == 123.0
    assert modelled_bytes(row, "hybrid", 100, 4) != modelled_bytes(row, "hybrid", 100, 4)  # NaN: unknown



# ---- a report of its inputs alone -----------------------------------------------------------------

REPOSITORY_REPORT = Path(__file__).resolve().parent.parent / "report"


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_empty_results_folder_changes_no_committed_file(tmp_path, capsys):
    """Before, REPORT.md was rewritten with every section "not measured" and every figure deleted."""
    out = tmp_path / "report"
    shutil.copytree(REPOSITORY_REPORT, out)
    before = snapshot(out)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "notes.json").write_text("[]")
    assert main(["--results", str(tmp_path / "results"), "--out", str(out)]) == 1
    assert snapshot(out) == before
    captured = capsys.readouterr()
    assert "notes.json: not a JSON object" in captured.out
    (line,) = captured.err.splitlines()
    assert line.startswith(f"nn_cuda.report: error: no usable benchmark result in {tmp_path / 'results'}")


def test_partial_results_give_a_report_of_those_alone(tmp_path, capsys):
    """The report never reads its own previous output: from a gemm-only folder, into the folder of a
    complete report, every other section says it was not measured and their figures are removed."""
    out, first = run_report(tmp_path / "all")
    assert "| 2 | 1 | 4 | 2.5 | 1.60x | 0: 1, 1: 17 |" in first
    only_gemm = tmp_path / "gemm-only"
    only_gemm.mkdir()
    data = gemm(timed=True)
    data["results"][1]["gflops"] = 333.0
    (only_gemm / "gemm.json").write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["--results", str(only_gemm), "--out", str(out), "--no-pdf"]) == 0
    text = (out / "REPORT.md").read_text()
    assert "333.0" in text and "222.0" not in text  # the GEMM ladder, from the new file
    for kind in ("roofline", "resources", "train", "scaling", "diff", "history", "lr", "adversarial"):
        assert f"*Not measured:* no `{kind}` result in the inputs" in text, kind
    assert "| 2 | 1 | 4 | 2.5 | 1.60x | 0: 1, 1: 17 |" not in text and "`scaling.json`" not in text
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["gemm_ladder.png"]
    said = capsys.readouterr().out
    assert f"drew {out / 'figures' / 'gemm_ladder.png'}" in said
    assert f"removed {out / 'figures' / 'scaling.png'}: no input for it in {only_gemm}" in said


def test_the_pdf_appears_complete_or_not_at_all(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pandoc = bin_dir / "pandoc"
    pandoc.write_text('#!/bin/sh\nprintf "%%PDF of %s" "$1" > "$3"\n')
    pandoc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    results = write_inputs(tmp_path / "results")
    out = tmp_path / "out"
    assert main(["--results", str(results), "--out", str(out)]) == 0
    assert (out / "REPORT.pdf").read_bytes() == b"%PDF of REPORT.md"
    pandoc.write_text('#!/bin/sh\nprintf "half" > "$3"\necho "pdflatex not found" >&2\nexit 43\n')
    assert main(["--results", str(results), "--out", str(out)]) == 0
    assert (out / "REPORT.pdf").read_bytes() == b"%PDF of REPORT.md"  # the failed run left it as it was
    assert sorted(p.name for p in out.iterdir()) == ["REPORT.md", "REPORT.pdf", "figures"]
