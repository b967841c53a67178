"""`python -m nn_cuda.bench train`: runs are timed in alternating rounds and compared round by round."""

import json
import statistics

import pytest

from nn_cuda.bench import train as bench_train


class FakeTimer:
    """A timer whose step time depends on the round, as on a machine that changes speed."""

    def __init__(self, name, log, seconds_per_round):
        self.name, self.log, self.seconds = name, log, list(seconds_per_round)

    def block(self, steps):
        self.log.append(self.name)
        return [self.seconds.pop(0)] * steps


def test_rounds_alternate_between_the_runs():
    log = []
    timers = {"a": FakeTimer("a", log, [1, 2, 3]), "b": FakeTimer("b", log, [4, 5, 6])}
    per_round = bench_train.interleaved_rounds(timers, rounds=3, steps=2)
    assert log == ["a", "b"] * 3
    assert per_round == {"a": [1, 2, 3], "b": [4, 5, 6]}


def test_ratios_are_taken_round_by_round():
    # Each ratio pairs the numbers of one round: 1.0, 0.8, 0.6. The ratio of the two medians
    # (0.027 / 0.030 = 0.9) would mix rounds in which the machine ran at different speeds.
    summary = bench_train.ratio_summary([0.030, 0.012, 0.027], [0.030, 0.015, 0.045])
    assert summary == pytest.approx({"median": 0.8, "min": 0.6, "max": 1.0})


def test_bench_train_writes_consistent_numbers(tmp_path):
    out = tmp_path / "train.json"
    assert bench_train.main(["--hidden", "16", "--batch", "32", "--rounds", "3", "--steps", "2",
                             "--warmup", "1", "--phase-steps", "2", "--no-torch", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    (row,) = data["results"]
    assert row["name"] == "nn_cuda numpy/numpy"
    rounds = row["ms_per_step_per_round"]
    floors = data["baseline"]["gemm_floor_ms_per_round"]
    assert len(rounds) == len(floors) == 3 and min(rounds) > 0 and min(floors) > 0
    assert row["ms_per_step"] == pytest.approx(statistics.median(rounds))
    ratios = [step / floor for step, floor in zip(rounds, floors)]
    assert row["vs_floor"] == pytest.approx({"median": statistics.median(ratios), "min": min(ratios),
                                             "max": max(ratios)})
    assert row["gflops"] == pytest.approx(data["flop_per_step"] / row["ms_per_step"] / 1e6)
    assert "vs_torch" not in row  # --no-torch: no comparison, rather than a made-up one
    assert set(row["phases"]["ms_per_step"]) >= {"forward_gemm", "backward_gemm", "elementwise", "update"}


def test_a_comparison_with_pytorch_that_cannot_run_is_said_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench_train, "import_torch", lambda: None)  # as where torch is not installed
    out = tmp_path / "train.json"
    assert bench_train.main(["--hidden", "8", "--batch", "16", "--rounds", "1", "--steps", "1", "--warmup", "1",
                             "--phase-steps", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "PyTorch does not import here: the comparison with it is skipped" in printed
    assert f"wrote {out}" in printed


def test_a_simulated_benchmark_says_first_how_long_it_will_take(monkeypatch, capsys):
    # bench train --backend numba-sim at its default sizes ran for hours (about 40 by the estimate) in
    # silence; here a simulator slowed down on paper makes a tiny run long enough to be told
    numba_config = pytest.importorskip("numba").config
    if not numba_config.ENABLE_CUDASIM:
        pytest.skip("backend numba-sim needs NUMBA_ENABLE_CUDASIM=1 before Numba is imported")
    from nn_cuda import training

    class TimingStarted(Exception):
        pass

    def first_timer(*args, **kwargs):  # the note must be out before the first step is timed
        raise TimingStarted

    monkeypatch.setattr(training, "SIMULATED_THREADS_PER_SECOND", 1)
    monkeypatch.setattr(bench_train, "StepTimer", first_timer)
    with pytest.raises(TimingStarted):
        bench_train.main(["--backend", "numba-sim", "--hidden", "4", "--batch", "4", "--rounds", "1", "--steps",
                          "1", "--warmup", "0", "--phase-steps", "0", "--no-torch"])
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("NOTE: numba-sim runs every CUDA thread as a Python thread") and "hours in all" in first
    assert first.endswith("--hidden 8 --batch 16 --rounds 1 --steps 1 --warmup 1 --phase-steps 1 tries the "
                          "kernels in seconds")


def test_phases_far_from_the_step_are_said_by_the_benchmark_as_by_the_report(monkeypatch, capsys):
    # the benchmark printed phases adding up to 121 ms against an untimed 11.9-ms step without a word;
    # the report said the machine's speed had changed
    from types import SimpleNamespace

    far = [{"label": "nn_cuda numpy/numpy", "ms": {"forward_gemm": 100.0, "update": 21.0}, "plain_ms": 11.9,
            "source": SimpleNamespace(on_gpu=False)}]
    monkeypatch.setattr(bench_train, "phase_bars", lambda train, profile: far)
    monkeypatch.setattr(bench_train, "phases_table", lambda bars: [])
    assert bench_train.main(["--hidden", "8", "--batch", "16", "--rounds", "1", "--steps", "1", "--warmup", "1",
                             "--phase-steps", "1", "--no-torch"]) == 0
    assert ("the phases add up to 121.0 ms against 11.9 ms untimed.** The two are measured one after the other"
            in capsys.readouterr().out)


def test_bench_train_rejects_zero_rounds(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench_train.main(["--rounds", "0"])
    assert exit_info.value.code == 2
    assert "--rounds" in capsys.readouterr().err
