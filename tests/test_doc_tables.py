"""The result tables of README.md and docs/*.md are generated from results/*.json
(`python -m nn_cuda.report --docs`): the committed ones match their files, a changed file changes its
table, a hand-edited number is caught, and regenerating from unchanged files changes nothing."""

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nn_cuda.config import TrainConfig
from nn_cuda.records import command_line
from nn_cuda.training import DEFAULT_HIDDEN
from nn_cuda.report import doc_tables
from nn_cuda.report.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


def blocks(text):
    return list(doc_tables.BLOCK.finditer(text))


def copy_tree(tmp_path) -> Path:
    """README.md, docs/ and results/ of the repository, copied (the tests change the copies)."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(ROOT / "README.md", root / "README.md")
    shutil.copytree(ROOT / "docs", root / "docs")
    shutil.copytree(ROOT / "results", root / "results")
    return root


def test_the_documents_have_generated_tables_of_every_kind():
    kinds = {match["kind"] for path in doc_tables.documents(ROOT) for match in blocks(path.read_text())}
    assert kinds == set(doc_tables.TABLES)
    readme = blocks((ROOT / "README.md").read_text())
    assert [match["kind"] for match in readme] == ["runs"]  # the accuracies a first run should reach


def test_every_generated_table_matches_its_result_files():
    assert doc_tables.refresh(ROOT, write=False) == [], "run: python -m nn_cuda.report --docs"


def test_every_generated_table_names_its_machine_and_date():
    for path in doc_tables.documents(ROOT):
        for match in blocks(path.read_text()):
            assert re.search(r"Measured on .+ \d{4}-\d\d-\d\d", match["body"]), (path, match["kind"])


def test_regenerating_from_unchanged_files_changes_nothing(tmp_path, capsys):
    root = copy_tree(tmp_path)
    before = {path: path.read_bytes() for path in doc_tables.documents(root)}
    assert main(["--docs", "--root", str(root)]) == 0
    assert "every result table was up to date" in capsys.readouterr().out
    assert {path: path.read_bytes() for path in doc_tables.documents(root)} == before


def test_a_changed_result_changes_its_table_and_only_it(tmp_path, capsys):
    root = copy_tree(tmp_path)
    record = root / "results" / "accuracy_sample_e20.json"
    data = json.loads(record.read_text())
    data["test_acc"] = 0.1234
    record.write_text(json.dumps(data))
    readme_before = (root / "README.md").read_text()
    assert main(["--check-docs", "--root", str(root)]) == 1
    assert "README.md" in capsys.readouterr().err
    assert main(["--docs", "--root", str(root)]) == 0
    readme = (root / "README.md").read_text()
    assert "| 0.123 |" in readme and "| 0.123 |" not in readme_before
    outside = doc_tables.BLOCK.sub("", readme)
    assert outside == doc_tables.BLOCK.sub("", readme_before)  # the prose is left as it was
    assert doc_tables.refresh(root, write=False) == []  # and a second run changes nothing


def test_a_hand_edited_number_is_caught(tmp_path, capsys):
    root = copy_tree(tmp_path)
    doc = root / "docs" / "mpi.md"
    text = doc.read_text()
    body = blocks(text)[0]
    assert "| 1 |" in body["body"]
    edited = body["body"].replace("| 1 |", "| 9 |", 1)  # the one-rank row becomes a nine-rank row
    doc.write_text(text[:body.start("body")] + edited + text[body.end("body"):])
    assert doc_tables.refresh(root, write=False) == [doc]
    assert main(["--check-docs", "--root", str(root)]) == 1
    # the block is named: its document, line and files (the other tables of the page are not)
    line = text.count("\n", 0, body.start()) + 1
    error = capsys.readouterr().err
    assert f"docs/mpi.md line {line}: the {body['kind']} table of {body['files'].strip()}" in error
    assert len([row for row in error.splitlines() if row.startswith("  docs/")]) == 1


@pytest.mark.parametrize("marker, message", [
    ("<!-- results-table: runs ../results/absent.json -->", "absent.json"),
    ("<!-- results-table: runs ../results/scaling.json -->", "a 'scaling' result, where a 'history' one is needed"),
    ("<!-- results-table: nonsense ../results/scaling.json -->", "unknown table 'nonsense'"),
])
def test_a_broken_marker_is_an_error_naming_the_document(tmp_path, capsys, marker, message):
    root = copy_tree(tmp_path)
    doc = root / "docs" / "grading.md"
    doc.write_text(doc.read_text() + f"\n{marker}\n<!-- end results-table -->\n")
    before = doc.read_text()
    assert main(["--docs", "--root", str(root)]) == 1
    error = capsys.readouterr().err
    assert "docs/grading.md" in error and message in error
    assert doc.read_text() == before


def test_outside_the_repository_root_it_says_where_to_run_it(tmp_path, capsys):
    assert main(["--check-docs", "--root", str(tmp_path)]) == 1
    assert "no README.md" in capsys.readouterr().err


def test_shown_commands_leave_out_where_the_records_went():
    command = "mpirun -n 4 python -m nn_cuda.train --quiet --dataset mnist-sample --history results/x.json -e 80"
    assert doc_tables.shown_command(command) == "mpirun -n 4 python -m nn_cuda.train --dataset mnist-sample -e 80"
    checked = "NN_CUDA_CPU_CHECK=1 python -m nn_cuda.train --backend cuda-cpu --history h.json"
    assert doc_tables.shown_command(checked) == "NN_CUDA_CPU_CHECK=1 python -m nn_cuda.train --backend cuda-cpu"


def test_a_record_names_the_variables_that_changed_the_run():
    words = ["python", "-m", "nn_cuda.train", "-e", "1"]
    environ = {"NN_CUDA_CPU_CHECK": "1", "HOME": "/home/x", "NUMBA_ENABLE_CUDASIM": "1"}
    assert command_line(words, "cuda-cpu", environ) == "NN_CUDA_CPU_CHECK=1 python -m nn_cuda.train -e 1"
    assert command_line(words, "numba", environ) == "NUMBA_ENABLE_CUDASIM=1 python -m nn_cuda.train -e 1"
    assert command_line(words, "numpy", environ) == "python -m nn_cuda.train -e 1"  # changes nothing there
    assert command_line(words, "cuda-cpu", {}) == "python -m nn_cuda.train -e 1"


def test_the_report_is_regenerated_unchanged_from_the_committed_results(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "results", root / "results")
    shutil.copytree(ROOT / "report", root / "report")
    before = (root / "report" / "REPORT.md").read_text()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main(["--update", "--no-pdf"]) == 0
    finally:
        os.chdir(cwd)
    assert (root / "report" / "REPORT.md").read_text() == before


#: the README's quick runs: rerun here and compared with their records (the other seeds, Fashion-MNIST
#: and 4 ranks take longer and are the same code; tests/test_mpi_data_parallel.py checks the ranks agree)
REPRODUCED = ("accuracy_sample_e1.json", "accuracy_sample_e20.json")
#: the records are float32 runs on x86-64 with OpenBLAS; another BLAS rounds differently
ACCURACY_TOLERANCE = 0.02


@pytest.mark.slow
@pytest.mark.parametrize("name", REPRODUCED)
def test_the_readme_runs_reproduce_their_records(name, tmp_path):
    record = json.loads((ROOT / "results" / name).read_text())
    command = doc_tables.shown_command(record["machine"]["command"]).split()
    assert command[:3] == ["python", "-m", "nn_cuda.train"]
    env = dict(os.environ, NN_CUDA_OFFLINE="1", NN_CUDA_CACHE_DIR=str(tmp_path / "cache"))
    history = tmp_path / "history.json"
    subprocess.run([sys.executable, *command[1:], "--quiet", "--history", str(history)], cwd=tmp_path,
                   env=env, check=True, capture_output=True, timeout=300)
    rerun = json.loads(history.read_text())
    assert rerun["steps"] == record["steps"]
    assert rerun["val_acc"] == pytest.approx(record["val_acc"], abs=ACCURACY_TOLERANCE)
    assert rerun["test_acc"] == pytest.approx(record["test_acc"], abs=ACCURACY_TOLERANCE)
    # README, "What a first run shows": the loss falls below a uniform guess's ln 10 in the first epoch
    first_loss = rerun["epochs"][0]["loss"]
    assert first_loss == pytest.approx(record["epochs"][0]["loss"], rel=0.05) and first_loss < math.log(10)


#: README: the default run's test accuracy for seeds 0-2, on the sample and on Fashion-MNIST
DEFAULT_RUN_TARGETS = {"mnist-sample": ("accuracy_sample_e20*.json", 0.90),
                       "fashion-mnist": ("accuracy_fashion_e20*.json", 0.85)}


@pytest.mark.parametrize("dataset", DEFAULT_RUN_TARGETS)
def test_the_default_run_records_meet_the_readme_targets(dataset):
    """The records behind the README's first table are runs of today's defaults, for seeds 0-2, each
    at or above the target, none with an epoch's loss above ln 10 after the first epoch."""
    pattern, target = DEFAULT_RUN_TARGETS[dataset]
    records = [json.loads(path.read_text()) for path in sorted((ROOT / "results").glob(pattern))]
    assert {record["config"]["seed"] for record in records} == {0, 1, 2}
    defaults = TrainConfig()
    for record in records:
        config = record["config"]
        assert record["dataset"] == dataset and config["epochs"] == defaults.epochs
        assert (config["lr"], config["pixels"], tuple(config["init_scale"]), config["hidden"], config["batch"]) == \
            (defaults.lr, defaults.pixels, defaults.init_scale, DEFAULT_HIDDEN, defaults.batch), record["machine"]["command"]
        assert record["test_acc"] >= target, record["machine"]["command"]
        assert max(epoch["loss"] for epoch in record["epochs"][1:]) < math.log(10), record["machine"]["command"]
