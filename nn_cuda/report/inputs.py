"""Finding and checking the benchmark JSON files the report is made of.

Every benchmark of nn_cuda.bench and scripts/ (and `nn_cuda.train --profile / --history`, `nn_cuda.kernel_resources
--json`) writes one JSON object with a "benchmark" kind and a "machine" record
(nn_cuda.records.machine_info: date, command, CPU, GPU). `load_results(folder)` reads every
*.json file of the folder, keeps those it understands and lists the others with the reason, so that
the report can say what it could not use. Nothing is ever filled in: a section whose input is absent
says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

#: kind -> (what produces it, what the report makes of it)
KINDS = {
    "gemm": ("python -m nn_cuda.bench gemm", "GEMM ladder and roofline"),
    "roofline": ("python scripts/bench_roofline.py", "the machine's bandwidth and GEMM rate"),
    "resources": ("python -m nn_cuda.kernel_resources --json PATH", "the kernels' registers, shared memory and occupancy"),
    "train": ("python -m nn_cuda.bench train", "training step and its phases"),
    "profile": ("python -m nn_cuda.train --profile PATH", "phases of a real training run"),
    "scaling": ("python -m nn_cuda.bench scaling", "MPI scaling and bytes per step"),
    "diff": ("python scripts/bench_diff.py", "float32 against float64"),
    "history": ("python -m nn_cuda.train --history PATH", "learning curves"),
    "lr": ("python scripts/bench_lr.py", "test accuracy as the learning rate varies"),
    "adversarial": ("python scripts/bench_adversarial.py", "asynchronous adversarial training"),
    "launch": ("python scripts/bench_launch.py", "what one kernel launch costs the host"),
}
MACHINE_KEYS = ("date", "command", "cpu")


@dataclass
class Result:
    path: Path | None  # None: a record a benchmark has just measured, drawn before (or without) saving it
    kind: str
    data: dict

    @property
    def machine(self) -> dict:
        return self.data["machine"]

    @property
    def on_gpu(self) -> bool:
        """True when the numbers of this file were measured on a GPU: the GEMM benchmark says so
        ("timed"); for the others, a GPU backend on a machine whose record names a GPU (the
        simulator, `numba-sim`, runs on the CPU)."""
        if self.kind == "gemm":
            return bool(self.data.get("timed"))
        if self.kind == "roofline":
            return "cupy" in str(self.data.get("device", ""))
        if not self.machine.get("gpu"):
            return False
        backends = {self.data.get("config", {}).get("backend")}
        if self.kind == "train":
            backends |= {r.get("backend") for r in self.data.get("results", [])}
        return bool(backends & {"cupy", "numba"})


@dataclass
class Results:
    folder: Path
    found: dict = field(default_factory=lambda: {kind: [] for kind in KINDS})
    rejected: list = field(default_factory=list)  # (path, reason)

    def of(self, kind: str) -> list:
        return self.found[kind]

    def missing(self) -> list:
        return [kind for kind, results in self.found.items() if not results]


def check(data) -> str | None:
    """Why `data` is not a benchmark result the report can use, or None when it is."""
    if not isinstance(data, dict):
        return "not a JSON object"
    kind = data.get("benchmark")
    if kind not in KINDS:
        return f"benchmark kind {kind!r} is not part of this report"
    machine = data.get("machine")
    if not isinstance(machine, dict) or any(key not in machine for key in MACHINE_KEYS):
        return "no machine record (date, command, cpu)"
    needed = {"gemm": "results", "train": "results", "scaling": "results", "diff": "results",
              "roofline": "bandwidth_bytes_per_s", "profile": "profile", "history": "epochs",
              "lr": "results", "adversarial": "results", "resources": "results", "launch": "results"}[kind]
    if needed not in data:
        return f"no {needed!r} field"
    return None


def load_results(folder) -> Results:
    folder = Path(folder)
    results = Results(folder)
    if not folder.is_dir():
        return results
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            results.rejected.append((path, f"unreadable: {error}"))
            continue
        reason = check(data)
        if reason:
            results.rejected.append((path, reason))
        else:
            results.found[data["benchmark"]].append(Result(path, data["benchmark"], data))
    return results
