"""The numbers the figures and tables show, taken from the results (nothing is estimated here
except the cost model of the communication, which is a formula of the sizes)."""

from __future__ import annotations

N_INPUTS, N_CLASSES = 784, 10


def gemm_case(row) -> str:
    return f"{row['M']}x{row['N']}x{row['K']} {row.get('trans', 'NN')}"


def intensity(M, N, K, itemsize, beta_nonzero=True) -> float:
    """FLOP per byte of C <- alpha op(A) op(B) + beta C, each matrix moved once."""
    moved = M * K + K * N + M * N * (2 if beta_nonzero else 1)
    return 2.0 * M * N * K / (moved * itemsize)


def gradient_elements(hidden: int) -> int:
    """Elements of the gradient buffer [W1 | W2 | b1 | b2]: 795 H + 10."""
    return hidden * N_INPUTS + N_CLASSES * hidden + hidden + N_CLASSES


def model_payload_bytes(parallel: str, hidden: int, samples: int, steps: int, itemsize: int) -> float:
    """Payload of one step and rank on paper, averaged over an epoch of `samples` rows in `steps`
    steps (nn_cuda/parallel/cost_model.py explains it): data parallelism allreduces the gradient
    buffer every step, model parallelism the partial logits, 10 values per sample of the batch."""
    if parallel == "model":
        return float(N_CLASSES * samples * itemsize) / steps
    return float(gradient_elements(hidden) * itemsize)


def modelled_bytes(row, parallel: str, hidden: int, itemsize: int) -> float:
    """The cost model's payload per step of a scaling row: the benchmark's own figure
    (nn_cuda.parallel.cost_model) when it recorded one, else the formula above (data, model)."""
    if "modelled_payload_bytes_per_step" in row:
        return float(row["modelled_payload_bytes_per_step"])
    if parallel not in ("data", "model"):
        return float("nan")
    return model_payload_bytes(parallel, hidden, row["samples_per_epoch"], row["steps_per_epoch"], itemsize)


def phase_bars(train_results, profile_results) -> list[dict]:
    """[{label, ms: {phase: ms/step}, plain_ms, source}] of every row with a phase breakdown."""
    from ..profiling import PHASES

    bars = []
    for result in train_results:
        for row in result.data["results"]:
            phases = row.get("phases")
            if not phases:
                continue
            bars.append({"label": f"{row['backend']}/{row.get('gemm')} (bench)",
                         "ms": {p: phases["ms_per_step"].get(p, 0.0) for p in PHASES},
                         "plain_ms": row.get("ms_per_step"), "source": result})
    for result in profile_results:
        profile = result.data["profile"]
        bars.append({"label": f"{profile.get('backend')}/{profile.get('gemm')} (train --profile)",
                     "ms": {p: profile["ms_per_step"].get(p, 0.0) for p in PHASES},
                     "plain_ms": None, "source": result})
    return bars


def scaling_series(scaling_results) -> list[dict]:
    """One series per (file, parallelism, overlap): ranks, samples/s, measured and modelled bytes."""
    series = []
    for result in scaling_results:
        config = result.data.get("config", {})
        itemsize = 8 if config.get("dtype") == "float64" else 4
        groups = {}
        for row in result.data["results"]:
            parallel = row.get("parallel", config.get("parallel", "data"))
            key = (parallel, bool(row.get("overlap")))
            groups.setdefault(key, []).append(row)
        for (parallel, overlap), rows in groups.items():
            rows.sort(key=lambda r: r["ranks"])
            hidden = config.get("hidden", 1000)
            series.append({
                "label": f"{parallel} parallel{', overlap' if overlap else ''} ({row_backend(rows, config)})",
                "parallel": parallel, "overlap": overlap,
                "ranks": [r["ranks"] for r in rows],
                "samples_per_s": [r["samples_per_second"] for r in rows],
                "seconds_per_epoch": [r["seconds_per_epoch"] for r in rows],
                "speedup": [r.get("speedup") for r in rows],
                "efficiency": [r.get("efficiency") for r in rows],
                "payload_bytes": [r["payload_bytes_per_step"] for r in rows],
                "wire_bytes": [r["wire_bytes_per_step"] for r in rows],
                "model_payload_bytes": [modelled_bytes(r, parallel, hidden, itemsize) for r in rows],
                "split": [r.get("split", {}) for r in rows],
                "waiting": [r.get("allreduce_wait") for r in rows],
                "calls_per_step": [r.get("allreduce_calls_per_step") for r in rows],
                "source": result,
            })
    return series


def row_backend(rows, config) -> str:
    return rows[0].get("backend") or config.get("backend", "?")


def history_label(data) -> str:
    """What tells one --history run from another: data, epochs, seed, ranks, backend, H and lr."""
    config = data.get("config", {})
    dataset = data.get("dataset") or config.get("dataset") or "?"
    parts = [str(dataset), f"{config.get('epochs')} epochs", f"seed {config.get('seed')}"]
    if data.get("ranks", 1) > 1:
        parts.append(f"{data['ranks']} ranks")
    backend = " ".join(str(p) for p in (config.get("backend", "?"), config.get("gemm"), config.get("dtype")) if p)
    parts.append(f"{backend} H={config.get('hidden')} lr={config.get('lr')}")
    return ", ".join(parts)
