"""Every flag of every command, given a bad value, ends in one line and an exit status: never a
traceback.

For each command (train, grade, the data tool, bench gemm, adversarial eval and train), every option
that takes a value is given each of BAD_VALUES on top of a tiny valid configuration, in-process. A
run may refuse the value (argparse's usage error, or one "error:" line) or accept it and finish; any
other exception escaping `main`, or "Traceback" in what it printed, fails. The specific mistakes of
the fault probe (a missing data folder, a 300-character name, a kernel folder without nn_ops.cu...)
are checked as whole commands in tests/test_user_faults.py.
"""

from __future__ import annotations

import argparse

import pytest

from nn_cuda import config, data, grade, train
from nn_cuda.adversarial import cli as adversarial
from nn_cuda.bench import gemm as bench_gemm
from nn_cuda.bench.__main__ import main as bench_main


BAD_VALUES = ["", "abc", "-1", "0", "nan", "1e999", "/nonexistent/folder/file", "x" * 300]

TINY = ["--dataset", "mnist-sample", "-n", "8", "--max-steps", "1", "--quiet", "--eval-limit", "20"]

COMMANDS = {
    "train": (train.main, config.build_parser(), TINY),
    "grade": (grade.main, grade.build_parser(),
              ["--mode", "3", "--dataset", "mnist-sample", "--hidden", "8", "--max-steps", "1"]),
    "bench gemm": (lambda argv: bench_main(["gemm", *argv]), bench_gemm.build_parser(), ["--sizes", "3x2x4"]),
    "adversarial train": (lambda argv: adversarial.main(["train", *argv]), adversarial.train_parser(),
                          ["--dataset", "mnist-sample", "-n", "8", "--max-steps", "1", "--quiet", "--eval-limit", "20",
                           "--eval-steps", "1"]),
    "data info": (lambda argv: data.main(["info", *argv]), None, []),
}


def data_info_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir")  # the one option of `python -m nn_cuda.data info`
    return parser


def value_options(parser: argparse.ArgumentParser) -> list[str]:
    return [action.option_strings[-1] for action in parser._actions
            if action.option_strings and action.nargs != 0 and not isinstance(action, argparse._HelpAction)]


def cases():
    for name, (main, parser, base) in COMMANDS.items():
        for option in value_options(parser or data_info_parser()):
            yield pytest.param(name, option, id=f"{name} {option}")


@pytest.mark.parametrize("command, option", list(cases()))
def test_a_bad_value_ends_in_one_line_never_a_traceback(command, option, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NN_CUDA_OFFLINE", "1")
    main, _, base = COMMANDS[command]
    if command == "grade":
        base = [*base, "--outputs", str(tmp_path / "Outputs")]
    for value in BAD_VALUES:
        try:
            status = main([*base, option, value])
        except SystemExit as stop:
            status = stop.code
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err, f"{command} {option} {value!r}:\n{err[-3000:]}"
        assert status in (0, 1, 2, None) or isinstance(status, str), (command, option, value, status)
        if status not in (0, None):
            error_lines = [line for line in err.splitlines() if "error" in line]
            assert error_lines, f"{command} {option} {value!r} failed without saying why:\n{err[-2000:]}"
