"""The documentation's example commands, run: every fenced block marked `<!-- readme-example -->` in
README.md and docs/*.md.

Each command of a marked block has an entry in EXAMPLES saying how it runs here - exactly as
written, with smaller settings (which ones, and why), or not at all (why) - and which claim written
next to it in the documentation is checked, and how. A command without an entry, or an entry whose
command the documentation no longer has, fails the test: the examples and this file change together.

Run exactly as written: the checkpoint example. (The runs of the README's table of accuracies are
rerun against their records by tests/test_doc_tables.py.) Run smaller: the quick start's `mpirun -n 4 python -m nn_cuda.train` and the
MPI example (1 epoch instead of 20), the simulator example (one step of 8 images instead of two of 32,
16 images evaluated instead of 100), the adversarial examples (1 epoch at H = 32, 2 PGD steps on 100
images). Not run: cloning and installing (this test runs in the installed project), `pytest` (this
test is part of it), and the CuPy examples without an NVIDIA GPU and CuPy.

The commands run one block at a time in a fresh folder, offline and with an empty download cache, so
that `python -m nn_cuda.train` without --dataset trains on the bundled sample, as on a laptop without
MNIST. The accuracies in the documentation are float32 runs measured on 2-core x86-64 VMs with OpenBLAS;
another BLAS rounds differently, so they are checked to within 0.02.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
MARKER = "<!-- readme-example -->"
ACCURACY_TOLERANCE = 0.02


def readme_blocks(text: str) -> list[list[tuple[str, str]]]:
    """The marked blocks of one document (README.md or a docs/ page): each a list of (command, comment)."""
    blocks = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        assert lines[index + 1].startswith("```"), f"{MARKER} must stand right above a fenced block"
        commands = []
        for code in lines[index + 2:]:
            if code.startswith("```"):
                break
            if code.strip() and not code.lstrip().startswith("#"):
                command, _, comment = code.partition("  #")  # a comment stands two spaces or more away
                commands.append((command.strip(), comment.strip()))
        blocks.append(commands)
    return blocks


# ---- what each example claims, and how it is checked ----------------------------------------------


def accuracies(output: str) -> tuple[float, float]:
    (match,) = re.findall(r"validation accuracy ([\d.]+)  test accuracy ([\d.]+)", output)
    return float(match[0]), float(match[1])


def accuracies_are(validation: float, test: float) -> Callable:
    def check(output: str, folder: Path) -> None:
        assert accuracies(output) == pytest.approx((validation, test), abs=ACCURACY_TOLERANCE), output[-2000:]
    return check


def checkpoints_equal(first: str, second: str) -> Callable:
    def check(output: str, folder: Path) -> None:
        a, b = np.load(folder / first), np.load(folder / second)
        for name in ("W1", "b1", "W2", "b2"):
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    return check


def all_of(*checks: Callable) -> Callable:
    def check(output: str, folder: Path) -> None:
        for one in checks:
            one(output, folder)
    return check


def contains(*texts: str) -> Callable:
    def check(output: str, folder: Path) -> None:
        for text in texts:
            assert text in output, (text, output[-3000:])
    return check


def wrote(name: str) -> Callable:
    def check(output: str, folder: Path) -> None:
        assert (folder / name).is_file() and output.count(f"saved parameters to {name}") == 1, output[-2000:]
    return check


@dataclass
class Example:
    readme: str  # the command as the documentation writes it
    claim: str  # what the comment beside it says (checked to be there)
    run: str | None = None  # the command run here; None: not run
    why: str = ""  # why it runs with other settings, or not at all
    check: Callable | None = None  # check(output, folder) of its claim
    gpus: int = 0  # GPUs (seen by CuPy) it needs; skipped with fewer


NOT_INSTALLING = "this test runs in the project already cloned and installed"
TRAIN = "python -m nn_cuda.train"
SAMPLE = f"{TRAIN} --dataset mnist-sample"
SIMULATOR = "NUMBA_ENABLE_CUDASIM=1 python -m nn_cuda.train --backend numba --dataset mnist-sample -n 8"
ADVERSARIAL = "python -m nn_cuda.adversarial"
SMALL_ADVERSARIAL = "-e 1 -n 32 --eval-steps 2 --eval-limit 100"
COURSE = "python -m nn_cuda.course"
#: a workspace whose every task is written: the project's own kernels and MPI step copied in
WRITTEN_WORKSPACE = (f"{{ test -d my-course || {COURSE} start my-course > /dev/null; }} && cp {REPO}/kernels/*.cu my-course/kernels/ && "
                     f"cp {REPO}/nn_cuda/parallel/course_task.py my-course/data_parallel.py")

EXAMPLES = [
    # quick start
    Example("git clone <this repository> nn_cuda && cd nn_cuda", "", why=NOT_INSTALLING),
    Example("python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[mpi,dev]'", "install",
            why=NOT_INSTALLING),
    Example(f"mpirun -n 4 {TRAIN}", "train", run=f"mpirun -n 4 {TRAIN} -e 1",
            why="1 epoch instead of 20 (the 20 epochs are checked serially below)",
            check=contains("NOTE: MNIST was not found", "data parallel over 4 MPI ranks",
                           "validation accuracy 0.6375")),
    Example("pytest", "test", why="this test is part of the suite it would run"),
    # the student's page
    Example(f"{COURSE} start my-course", "writes my-course/kernels/ and my-course/data_parallel.py",
            run=f"{COURSE} start my-course", check=contains("wrote 6 files into my-course; 11 tasks to write")),
    Example(f"{COURSE} check my-course", "every task fails until written", run=f"{COURSE} check my-course; test $? = 1",
            why="it ends with exit status 1 on a fresh workspace, as it says",
            check=contains("task naive: not written yet: the TODO is at my-course/kernels/gemm1_naive.cu:")),
    Example(f"{COURSE} tasks", "the tasks, in order", run=f"{COURSE} tasks",
            check=contains("naive              kernels/gemm1_naive.cu", "mpi_allreduce      data_parallel.py")),
    Example(f"{COURSE} check my-course naive", "one task: the case, the first wrong element, a hint",
            run=f"{WRITTEN_WORKSPACE} && {COURSE} check my-course naive",
            why="in a new workspace whose tasks are written (the project's own files copied in)",
            check=contains("task naive: PASS (80 cases")),
    Example(f"NN_CUDA_KERNEL_DIR=my-course/kernels {TRAIN} --backend cuda-cpu --gemm tiled -e 1", "your kernels",
            run=f"{WRITTEN_WORKSPACE} && NN_CUDA_KERNEL_DIR=my-course/kernels {TRAIN} --backend cuda-cpu --gemm tiled "
            "-e 1 -n 16 --max-steps 2",
            why="a written workspace; 2 steps at H = 16 instead of an epoch at H = 1000",
            check=contains("my-course/kernels (NN_CUDA_KERNEL_DIR)", "gemm=tiled")),
    Example(f"mpirun -n 4 {TRAIN} --mpi-task my-course/data_parallel.py", "your MPI step",
            run=f"{WRITTEN_WORKSPACE} && mpirun -n 4 {TRAIN} --mpi-task my-course/data_parallel.py -e 1",
            why="a written workspace; 1 epoch instead of 20",
            check=contains("the MPI task of ", "my-course/data_parallel.py)", "validation accuracy 0.6375")),
    Example("NN_CUDA_KERNEL_DIR=my-course/kernels python -m nn_cuda.grade --mode 3 --backend cuda-cpu --gemm tiled",
            "vs NumPy",
            run=f"{WRITTEN_WORKSPACE} && NN_CUDA_KERNEL_DIR=my-course/kernels python -m nn_cuda.grade --mode 3 "
            "--backend cuda-cpu --gemm tiled --max-steps 2",
            why="a written workspace; 2 steps of mode 3 instead of its epoch",
            check=contains("under test: cuda-cpu/tiled", "mode 3: PASS")),
    Example("python -m nn_cuda.grade --kernels my-course/kernels", "every check of every kernel",
            run=f"{WRITTEN_WORKSPACE} && python -m nn_cuda.grade --kernels my-course/kernels",
            why="a written workspace", check=contains("1 of 1 folders pass every check on cuda-cpu")),
    # checkpoints
    Example(f"{SAMPLE} -e 10 --save a.npz", "validation 0.890, test 0.898", run=f"{SAMPLE} -e 10 --save a.npz",
            check=all_of(accuracies_are(0.890, 0.898), wrote("a.npz"))),
    Example(f"{SAMPLE} -e 10 --init a.npz --save b.npz", "validation 0.908, test 0.916",
            run=f"{SAMPLE} -e 10 --init a.npz --save b.npz",
            check=all_of(accuracies_are(0.908, 0.916), wrote("b.npz"))),
    Example(f"{SAMPLE} --save c.npz", "20 epochs at once: c.npz equals b.npz", run=f"{SAMPLE} --save c.npz",
            check=checkpoints_equal("b.npz", "c.npz")),
    # Numba's simulator
    Example(f"{SIMULATOR} -b 32 --max-steps 2", "backend=numba-sim gemm=naive",
            run=f"{SIMULATOR} -b 8 --max-steps 1 --eval-limit 16",
            why="one step of 8 images and 16 evaluated instead of two steps of 32 and 100: the simulator "
            "takes 9 s for the documented command on an idle 2-core machine, over a minute on a busy one",
            check=contains("backend=numba-sim gemm=naive", "NOTE: backend numba-sim emulates the GPU kernels",
                           "GEMM naive, the cheapest to emulate",
                           "(on the first 16 of 400 validation and 16 of 1000 test images)")),
    # MPI
    Example(f"mpirun -n 2 {TRAIN} --shuffle --save weights.npz", "rank 0 writes weights.npz",
            run=f"mpirun -n 2 {TRAIN} --shuffle --save weights.npz -e 1", why="1 epoch instead of 20",
            check=wrote("weights.npz")),
    Example(f"mpirun -n 4 {TRAIN} --backend cupy", "rank r uses GPU (local rank % GPUs)",
            run=f"mpirun -n 4 {TRAIN} --backend cupy -e 1", why="1 epoch; needs a GPU and CuPy",
            check=contains("data parallel over 4 MPI ranks"), gpus=1),
    Example(f"mpirun -n 4 {TRAIN} --backend cupy --comm nccl", "NCCL instead of host staging, one GPU per rank",
            run=f"mpirun -n 4 {TRAIN} --backend cupy --comm nccl -e 1",
            why="1 epoch; needs 4 GPUs, CuPy and NCCL", check=contains("--comm nccl"), gpus=4),
    # adversarial
    Example(f"{ADVERSARIAL} train --attack pgd --eps 0.1 --steps 3 --save robust.npz",
            "ends with clean, FGSM and PGD accuracy",
            run=f"{ADVERSARIAL} train --attack pgd --eps 0.1 --steps 3 --save robust.npz {SMALL_ADVERSARIAL}",
            why="1 epoch at H = 32, the robustness check with 2 PGD steps on 100 test images (20 epochs at "
            "H = 1000, 20 steps on 1,000 in docs/adversarial.md)",
            check=all_of(contains("robustness on 100 test images", "clean    FGSM     PGD"),
                         wrote("robust.npz"))),
    Example(f"{ADVERSARIAL} eval --checkpoint robust.npz --eps 0.05,0.1,0.2 --steps 20", "",
            run=f"{ADVERSARIAL} eval --checkpoint robust.npz --eps 0.05,0.1,0.2 --steps 2 --limit 100",
            why="2 PGD steps on 100 images instead of 20 on 1,000",
            check=contains("clean    FGSM     PGD", " 0.050 ", " 0.100 ", " 0.200 ")),
    Example(f"mpirun -n 3 {ADVERSARIAL} train --async --dataset mnist-sample", "prints the staleness histogram",
            run=f"mpirun -n 3 {ADVERSARIAL} train --async --dataset mnist-sample {SMALL_ADVERSARIAL}",
            why="1 epoch at H = 32, 2 PGD steps on 100 test images",
            check=contains("staleness (updates between")),
]


def gpus_of_cupy() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy, no driver, no device
        return 0


def environment(folder: Path) -> dict:
    """Offline, an empty download cache, this Python and its mpirun first on PATH."""
    env = dict(os.environ)
    env.update(NN_CUDA_OFFLINE="1", NN_CUDA_CACHE_DIR=str(folder / "cache"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    env.pop("NN_CUDA_DATA", None)
    return env


#: the files of the CPU runner's own parts in a build cache (its runtime, shared guard and precompiled
#: header, with their records), the same for every code
_RUNNER_PARTS = ("runtime-", "runtime_header-", "shared_guard-")


def share_the_runner_parts(folder: Path) -> None:
    """Hard links in the example's build cache to the runner's parts that this test session has built
    (the test cache of conftest.py): each example still compiles its kernels in a cache of its own, not
    the runner again. A part the session has not built yet, or removes meanwhile, is built by the
    example as on a fresh machine."""
    session, example = Path(os.environ["NN_CUDA_CACHE_DIR"]) / "cuda_cpu", folder / "cache" / "cuda_cpu"
    example.mkdir(mode=0o700, parents=True, exist_ok=True)
    for part in session.glob("*") if session.is_dir() else ():
        if part.name.startswith(_RUNNER_PARTS):
            try:
                os.link(part, example / part.name)
            except FileNotFoundError:
                pass


def run_example(example: Example, folder: Path) -> str:
    result = subprocess.run(["bash", "-c", example.run], cwd=folder, env=environment(folder),
                            capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{example.run}\n{output[-3000:]}"
    return output


#: the files whose marked blocks are run: the README and every page of docs/
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCKS = [block for document in DOCUMENTS for block in readme_blocks(document.read_text())]


def test_every_readme_example_has_an_entry_and_every_entry_an_example():
    in_readme = {command for block in BLOCKS for command, _ in block}
    listed = {example.readme for example in EXAMPLES}
    assert in_readme - listed == set(), "documented examples without an entry in EXAMPLES"
    assert listed - in_readme == set(), "entries of EXAMPLES the documentation no longer has"
    comments = {command: comment for block in BLOCKS for command, comment in block}
    for example in EXAMPLES:
        assert example.claim in comments[example.readme], (example.readme, comments[example.readme])
        assert example.run is not None or example.why, f"say why {example.readme!r} is not run"
        assert example.run == example.readme or example.why, f"say why {example.readme!r} runs changed"


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[block[0][0][:40] for block in BLOCKS])
def test_readme_example_block(block, tmp_path):
    by_command = {example.readme: example for example in EXAMPLES}
    share_the_runner_parts(tmp_path)
    for command, _ in block:
        example = by_command[command]
        if example.run is None or (example.gpus and gpus_of_cupy() < example.gpus):
            continue
        output = run_example(example, tmp_path)
        if example.check is not None:
            example.check(output, tmp_path)
