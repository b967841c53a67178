"""The training core: data splits, initial parameters, the loop, its history and errors, and one
whole run; `python -m nn_cuda.train` (train.py), the grading harness (grading.py), the benchmarks and
the adversarial attacks call it.

The loop is the project statement's SGD with mini-batches (its Figure 5):

    for epoch in range(epochs):
        for batch in batches(epoch):          # file order, or a seeded permutation with --shuffle
            forward; backward; [allreduce]; update

Data and parameters are put on the backend once; a step does no transfers or allocations. The loss is
read back only every --print-every steps (for the progress bar and the divergence check).
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from . import parallel
from .parallel.serial import Serial

from . import kernel_info, kernel_launch, memory, model
from .backends import BackendUnavailable, KernelFailure, get_backend
from .checkpoint import CheckpointError, for_pixels, load_checkpoint, save_checkpoint
from .config import EMULATED_EVAL_LIMIT, TrainConfig, default_lr
from .data import DataError, load_dataset, split_dataset
from .divergence import DivergenceWatch
from .interrupts import raise_if_interrupted
from .profiling import PhaseTimer, timed_step
from .outputs import OutputError, atomic_file, check_output_paths, write_each

DEFAULT_HIDDEN = 1000


class TrainingError(Exception):
    """A problem the user can fix (bad flag combination, divergence, ...): one line, exit 1."""


class Diverged(TrainingError):
    """The run diverged (nn_cuda.divergence says when)."""


# ---- data ---------------------------------------------------------------------------------------


@dataclass
class Splits:
    """Host arrays, pixels already scaled and cast: images (n, 784) float, labels (n,) int32."""

    dataset: str
    source: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def scale_pixels(images: np.ndarray, pixels: str, dtype) -> np.ndarray:
    """uint8 images as `dtype`: divided by 255 ("unit") or as they are ("raw", the course's input)."""
    out = images.astype(dtype)
    if pixels == "unit":
        out /= model.RAW_PIXEL_MAX
    return out


def load_splits(cfg: TrainConfig, log=print, progress: bool = True) -> Splits:
    """The dataset of `cfg`: first 90 % of the training file to train, last 10 % to validate.
    `progress`: show a download's progress bars (rank 0 only under MPI)."""
    ds = load_dataset(cfg.dataset, data_dir=cfg.data_dir, log=log, progress=progress)
    x_tr, y_tr, x_va, y_va = split_dataset(ds)
    as_x = lambda images: scale_pixels(images, cfg.pixels, cfg.dtype)  # noqa: E731
    as_y = lambda labels: np.ascontiguousarray(labels, dtype=np.int32)  # noqa: E731
    return Splits(
        ds.name, ds.source, as_x(x_tr), as_y(y_tr), as_x(x_va), as_y(y_va),
        as_x(ds.test_images), as_y(ds.test_labels),
    )


def data_fingerprint(splits: Splits) -> tuple:
    """What identifies the data of a run: the dataset's name, the split sizes, and a hash of every
    label and every image (where the files were found may differ between machines). All of it: a
    sample of the rows let ranks whose rows 410-499 differed train on; SHA-256 reads the 220 MB of
    full MNIST in well under a second."""
    digest = hashlib.sha256()
    for array in (splits.y_train, splits.y_val, splits.y_test, splits.x_train, splits.x_val, splits.x_test):
        digest.update(np.ascontiguousarray(array).tobytes())
    sizes = (splits.x_train.shape[0], splits.x_val.shape[0], splits.x_test.shape[0])
    return splits.dataset, sizes, digest.hexdigest()[:16]


def check_ranks_share_the_data(comm, splits: Splits) -> None:
    """Every rank loads the data itself; under MPI they must have found the same (a rank that fell
    back to the bundled sample, or found another copy, would train on other rows). `comm`: the ranks
    (anything with `size` and `allgather`; None in a serial run). Raises on every rank alike, so
    that the job ends with one message."""
    if comm is None or comm.size == 1:
        return
    # where each rank found its files may differ (another machine's copy): it is said, not compared
    found = comm.allgather((data_fingerprint(splits), splits.source))
    fingerprints = [fingerprint for fingerprint, _ in found]
    others = [r for r, f in enumerate(fingerprints) if f != fingerprints[0]]
    if others:
        def describe(r):
            (name, sizes, digest), source = found[r]
            return (f"rank {r}: {name} from {source} ({sizes[0]} train / {sizes[1]} val / {sizes[2]} test, "
                    f"contents {digest[:8]})")

        raise TrainingError(
            "the ranks did not load the same data (" + "; ".join(describe(r) for r in [0, *others[:3]])
            + "): give every rank the same files, with --data-dir or $NN_CUDA_DATA"
        )


def make_strategy(cfg: TrainConfig):
    """Serial, or the --parallel strategy when an MPI launcher started this process (mpirun -n P).

    Called before the backend is created: a parallel strategy picks this rank's GPU. --mpi-task
    without a launcher is refused: the run would train on one process and never call the task.
    """
    if parallel.launched_by_mpi():
        return parallel.create_strategy(cfg)
    if cfg.mpi_task:
        raise TrainingError(f"--mpi-task {cfg.mpi_task} runs under an MPI launcher, which starts the ranks your "
                            f"task splits the batch over: mpirun -n 4 python -m nn_cuda.train --mpi-task "
                            f"{cfg.mpi_task} (without mpirun, one process would train and never call it)")
    return Serial()


# ---- the training loop ----------------------------------------------------------------------------


@dataclass
class History:
    steps: int = 0
    samples: int = 0
    train_seconds: float = 0.0
    load_seconds: float = 0.0  # compiling and loading the step's kernels before the clock (model.load_step_kernels)
    epochs: list = field(default_factory=list)  # one dict per epoch: loss, val_acc
    snapshots: list = field(default_factory=list)  # (step, host params) with snapshot_every


def accuracy(backend, params, workspace, x, y, reduce_logits=None) -> float:
    if x.shape[0] == 0:
        return float("nan")
    return float(np.mean(model.predict(backend, params, workspace, x, reduce_logits) == y))


def weights_squared(backend, params, strategy) -> float:
    """|W1|^2 + |W2|^2, the same on every rank (summed over the ranks holding different hidden units)."""
    return strategy.sum_over_hidden(backend.sum_squares(params.weights))


def batch_loss(backend, Yhat, labels, n_global: int, reg: float, strategy, weights_sq: float) -> float:
    """J of the last step, the same on every rank: the cross-entropy summed over the ranks holding
    different samples, plus the L2 term of `weights_sq` (weights_squared)."""
    cross_entropy = strategy.sum(backend.cross_entropy_sum(Yhat, labels)) / n_global
    return cross_entropy + 0.5 * reg * weights_sq


# A diverging run is detected and reported (Diverged), so NumPy's overflow warnings are only noise.
@np.errstate(over="ignore", invalid="ignore", divide="ignore")
def train_loop(backend, params, batches, cfg: TrainConfig, strategy=None, *, x_val=None, y_val=None,
               x_test=None, y_test=None, snapshot_every: int = 0, progress: bool | str = True, log=print,
               timer=None) -> History:
    """SGD over `batches` for cfg.epochs (or cfg.max_steps); returns the History.

    `x_val`/`y_val` (backend arrays), when given, are evaluated after every epoch (outside the timed
    training time), and `x_test`/`y_test` too (the learning curves of --history). With
    snapshot_every, host copies of the parameters are kept at step 0 and every snapshot_every steps
    (the grading harness compares them between backends). `timer`, a nn_cuda.profiling.PhaseTimer,
    times the phases of every step (--profile); without one the step runs on `backend` itself. The
    step's kernels are compiled and loaded before the clock starts (model.load_step_kernels).
    """
    strategy = strategy or Serial()
    step_backend, step_strategy = backend, strategy  # what the step calls: timed stand-ins under a timer
    if timer is not None:
        step_backend, step_strategy = timer.backend(backend), timer.strategy(strategy)
    hidden = params.hidden
    grads = model.Parameters(backend, hidden, params.dtype, params.n_in, params.n_out)
    last_good = model.Parameters(backend, hidden, params.dtype, params.n_in, params.n_out)
    workspace = model.Workspace(backend, cfg.batch, hidden, params.dtype, params.n_out)
    backend.copy(params.flat, last_good.flat)
    check_every = cfg.print_every or max(1, batches.steps_per_epoch // 10)
    n_weights = strategy.sum_over_hidden(params.n_weights)
    initial_rms = math.sqrt(weights_squared(backend, params, strategy) / n_weights)
    watch = DivergenceWatch(cfg.lr, cfg.reg, initial_rms, backend.name, default_lr(cfg.pixels))
    history = History(load_seconds=model.load_step_kernels(backend, params))
    if snapshot_every:
        history.snapshots.append((0, strategy.gather_parameters(params)))
    max_steps = cfg.max_steps or cfg.epochs * batches.steps_per_epoch
    epochs = min(cfg.epochs, -(-max_steps // batches.steps_per_epoch))
    # a label (the grading harness's runs) shows the bar even in a quiet run, prefixed by it
    show = bool(progress) and strategy.is_root and (isinstance(progress, str) or not cfg.quiet)
    label = f"{progress}: " if isinstance(progress, str) else ""
    from tqdm.auto import tqdm

    for epoch in range(epochs):
        # closed on the way out, an error included: the error's line then starts a line of its own
        with tqdm(total=min(batches.steps_per_epoch, max_steps - history.steps),
                  desc=f"{label}epoch {epoch + 1}/{epochs}", unit="step", disable=not show,
                  leave=not label) as bar:
            backend.synchronize()
            started = time.perf_counter()
            last_loss = float("nan")
            for X, labels, n_global in batches.batches(epoch):
                raise_if_interrupted()  # a Ctrl-C that landed in a finalizer, where Python ignores it
                if timer is None:
                    Yhat = model.training_step(backend, params, grads, workspace, X, labels, 1.0 / n_global,
                                               cfg.lr, cfg.reg, strategy)
                else:
                    Yhat = timed_step(timer, model, step_backend, params, grads, workspace, X, labels,
                                      1.0 / n_global, cfg.lr, cfg.reg, step_strategy)
                history.steps += 1
                history.samples += n_global
                bar.update(1)
                if history.steps % check_every == 0 or history.steps == max_steps:
                    weights_sq = weights_squared(backend, params, strategy)
                    last_loss = batch_loss(backend, Yhat, labels, n_global, cfg.reg, strategy, weights_sq)
                    biases = strategy.sum_over_hidden(backend.sum_squares(params.biases))  # NaN on any rank
                    diverged = watch.check(history.steps, last_loss, math.sqrt(weights_sq / n_weights),
                                           finite=math.isfinite(biases))
                    if diverged:
                        backend.copy(last_good.flat, params.flat)
                        raise Diverged(diverged)
                    if watch.healthy:  # what --save writes if the run diverges later
                        backend.copy(params.flat, last_good.flat)
                    bar.set_postfix(loss=f"{last_loss:.4f}")
                if snapshot_every and history.steps % snapshot_every == 0:
                    history.snapshots.append((history.steps, strategy.gather_parameters(params)))
                if history.steps >= max_steps:
                    break
            backend.synchronize()
            history.train_seconds += time.perf_counter() - started
            record = {"epoch": epoch + 1, "loss": last_loss}
            if x_val is not None and strategy.evaluates:
                record["val_acc"] = accuracy(backend, params, workspace, x_val, y_val, strategy.reduce_logits)
                bar.set_postfix(loss=f"{last_loss:.4f}", val_acc=f"{record['val_acc']:.4f}")
            if x_test is not None and strategy.evaluates:
                record["test_acc"] = accuracy(backend, params, workspace, x_test, y_test, strategy.reduce_logits)
        history.epochs.append(record)
        if history.steps >= max_steps:
            break
    return history


# ---- the command --------------------------------------------------------------------------------


# ---- a run kept for comparison: snapshots of the parameters (grading, -s) -----------------------


@dataclass
class Run:
    params: dict  # final host parameters
    snapshots: list  # [(step, host parameters)]: step 0, every -p steps, and the last
    val_acc: float
    seconds: float

    @classmethod
    def from_history(cls, final: dict, history, val_acc: float) -> "Run":
        """The Run of a finished train_loop, from its final host parameters (its snapshots completed
        with the last step)."""
        snapshots = list(history.snapshots)
        if not snapshots or snapshots[-1][0] != history.steps:
            snapshots.append((history.steps, final))
        return cls(final, snapshots, val_acc, history.train_seconds)


def snapshot_interval(cfg: TrainConfig, steps_per_epoch: int) -> int:
    """Steps between snapshots: -p, or (with -p 0) a whole run, so that step 0 and the last are kept."""
    return cfg.print_every or cfg.epochs * steps_per_epoch


def train_with_snapshots(cfg: TrainConfig, backend, gemm, splits, init: dict,
                         strategy=None, progress: bool | str = False) -> Run:
    """Train from `init` on one backend (a Backend, or a backend's name with `gemm`; under `strategy`:
    serial by default), keeping snapshots.

    Snapshots are taken at step 0, every cfg.print_every steps and at the last step. On the ranks
    other than the root of a parallel run, the validation accuracy is NaN and the parameters
    are None (the root reports).
    """
    strategy = strategy or Serial()
    backend = get_backend(backend, gemm) if isinstance(backend, str) else backend
    params = strategy.local_parameters(backend, init, cfg.dtype)
    strategy.broadcast_parameters(params)
    batches = strategy.make_batches(backend, splits.x_train, splits.y_train, cfg)
    every = snapshot_interval(cfg, batches.steps_per_epoch)
    history = train_loop(backend, params, batches, cfg, strategy, snapshot_every=every, progress=progress)
    val_acc = float("nan")
    if strategy.evaluates:  # rank 0 of data parallelism; every rank of model parallelism
        workspace = model.Workspace(backend, cfg.batch, params.hidden, cfg.dtype)
        val_acc = accuracy(backend, params, workspace, backend.to_device(splits.x_val), splits.y_val,
                           strategy.reduce_logits)
    final = strategy.gather_parameters(params)
    if not strategy.is_root:
        val_acc = float("nan")
    return Run.from_history(final, history, val_acc)


def check_kernels_written(backend) -> None:
    """TrainingError when a kernel file the run launches still holds a course workspace's TODO line
    (NN_CUDA_KERNEL_DIR=DIR/kernels before every task is written): its kernel would do nothing."""
    if not backend.runs_kernel_files:
        return
    left = kernel_info.unwritten_tasks(kernel_info.files_launched_by_training(backend.gemm_algo))
    if left:
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        raise TrainingError(f"{left[0]} is not written yet{more}: the run launches its file's kernels, and an "
                            f"unwritten one does nothing; write them, and check each with "
                            f"{kernel_info.course_check_command()}")


def initial_parameters(cfg: TrainConfig, check_fits=None, log=print) -> tuple[int, dict]:
    """(H, host parameters) from --init (for --pixels: checkpoint.for_pixels), or the seeded init with
    H = --hidden (default 1000). `check_fits(H)`, when given, is called once H is known, before the
    init draws its weights."""
    if cfg.init:
        host, note = for_pixels(*load_checkpoint(cfg.init), cfg.pixels, cfg.init)
        if note:
            log(note)
        hidden = host["W1"].shape[0]
        if host["W1"].shape[1] != model.N_INPUTS:
            raise TrainingError(f"{cfg.init}: W1 has {host['W1'].shape[1]} inputs, expected 784")
        if cfg.hidden is not None and cfg.hidden != hidden:
            raise TrainingError(
                f"--hidden {cfg.hidden} disagrees with --init {cfg.init} (H = {hidden}); drop --hidden"
            )
        if check_fits is not None:
            check_fits(hidden)
        return hidden, host
    hidden = cfg.hidden or DEFAULT_HIDDEN
    if check_fits is not None:
        check_fits(hidden)
    return hidden, model.init_parameters(hidden, cfg.seed, scale=cfg.init_scale)


#: bytes per parameter at a run's peak: 24 (the float64 init, and float64-sized copies of the
#: parameters when training starts and ends: the snapshots of the first and last step, the gathered
#: result) plus 3 of the run's dtype (the parameters, their gradients, the copy kept in case of
#: divergence). Measured: the peak RSS of H = 100,000 and 200,000 (float32) and H = 100,000 (float64)
#: on the NumPy backend is within 1 % of memory_parts (the interpreter counted).
BYTES_PER_PARAMETER_FIXED, PARAMETER_COPIES = 24, 3
#: Python, NumPy and the project's modules, before any array
INTERPRETER_BYTES = 128 * 2**20


def memory_parts(cfg: TrainConfig, hidden: int, splits: Splits, runs: int = 1) -> dict:
    """{part: bytes} of a training run's peak: the parameters (BYTES_PER_PARAMETER_FIXED and
    PARAMETER_COPIES), the activations of one batch (A1 and dZ1, batch x H each, and batch x 10
    twice), the data on the backend and the interpreter; `runs` runs kept side by side (grading
    trains the backend under test, then the reference)."""
    item = np.dtype(cfg.dtype).itemsize
    n_parameters = model.parameter_count(hidden)
    n_images = splits.x_train.shape[0] + splits.x_val.shape[0] + splits.x_test.shape[0]
    return {f"activations of batches of {cfg.batch}": 2 * cfg.batch * (hidden + model.N_CLASSES) * item,
            f"parameters of H = {hidden}": runs * n_parameters * (BYTES_PER_PARAMETER_FIXED + PARAMETER_COPIES * item),
            "data": n_images * model.N_INPUTS * item, "Python and its libraries": INTERPRETER_BYTES}


def check_memory(cfg: TrainConfig, hidden: int, splits: Splits, runs: int = 1) -> None:
    """NotEnoughMemory, before anything large is allocated, when training cannot fit (memory_parts)."""
    parts = memory_parts(cfg, hidden, splits, runs)
    activations, parameters = parts[f"activations of batches of {cfg.batch}"], parts[f"parameters of H = {hidden}"]
    n_train = splits.x_train.shape[0]
    if activations > parameters:
        fewer = f" (the training set has {n_train} images)" if cfg.batch > n_train else ""
        fix = f"use a smaller -b/--batch{fewer} or -n/--hidden"
    else:
        fix = "use a smaller -n/--hidden"
    memory.require(parts, fix, what=f"training with -n {hidden} -b {cfg.batch}")


def evaluation_limit(cfg: TrainConfig, backend) -> int | None:
    """--eval-limit, or on an emulated backend (Backend.emulated) EMULATED_EVAL_LIMIT when none is given."""
    if cfg.eval_limit is None and backend.emulated:
        return EMULATED_EVAL_LIMIT
    return cfg.eval_limit


def first_rows(splits: Splits, train: int | None, validation: int | None, test: int | None) -> Splits:
    """`splits` cut to the first `train` training, `validation` validation and `test` test images
    (None keeps all of a split)."""
    def first(n):
        return slice(None) if n is None else slice(0, n)

    return replace(splits, x_train=splits.x_train[first(train)], y_train=splits.y_train[first(train)],
                   x_val=splits.x_val[first(validation)], y_val=splits.y_val[first(validation)],
                   x_test=splits.x_test[first(test)], y_test=splits.y_test[first(test)])


#: CUDA threads Numba's simulator runs a second, one Python thread each: measured on the 2-core AMD
#: EPYC of the results (H = 8, batches of 64: about 21,000 threads a step, 8.5 s a step)
SIMULATED_THREADS_PER_SECOND = 2500


def simulated_threads_per_step(gemm: str, batch: int, hidden: int) -> int:
    """About how many CUDA threads one training step launches: the five GEMMs with their launch
    grids (nn_cuda.kernel_launch), the element-wise kernels of the hidden layer and the update."""
    products = [(batch, hidden), (batch, model.N_CLASSES), (model.N_CLASSES, hidden), (batch, hidden),
                (hidden, model.N_INPUTS)]
    block = math.prod(kernel_launch.block_of(f"gemm_{gemm}"))
    gemm_threads = sum(math.prod(kernel_launch.gemm_grid(gemm, M, N)) * block for M, N in products)
    n_parameters = model.parameter_count(hidden)
    return gemm_threads + 3 * batch * hidden + n_parameters


def simulator_cost_note(cfg: TrainConfig, backend, hidden: int, steps: int,
                        smaller: str = "-n 8 -b 32 --max-steps 2") -> str | None:
    """For Numba's simulator, how long this run will take when that is more than a minute (`smaller`:
    the flags of a run that takes seconds)."""
    if backend.name != "numba-sim":
        return None
    threads = simulated_threads_per_step(backend.gemm_algo, cfg.batch, hidden)
    seconds = threads * steps / SIMULATED_THREADS_PER_SECOND
    if seconds < 60:
        return None
    duration = f"{seconds / 3600:.0f} hours" if seconds >= 7200 else f"{seconds / 60:.0f} minutes"
    return (f"NOTE: numba-sim runs every CUDA thread as a Python thread, about {SIMULATED_THREADS_PER_SECOND:,} "
            f"a second on a 2-core machine: these {steps} steps launch about {threads:,} threads each, some "
            f"{duration} in all; {smaller} tries the kernels in seconds")


def emulation_note(cfg: TrainConfig, backend) -> str | None:
    """The line that says what an emulated backend chose by itself (cfg: the flags as given)."""
    if not backend.emulated:
        return None
    chosen = []
    if cfg.gemm is None:
        chosen.append(f"GEMM {backend.gemm_algo}, the cheapest to emulate (--gemm to choose)")
    if cfg.eval_limit is None:
        chosen.append(f"accuracies on the first {EMULATED_EVAL_LIMIT} validation and test images "
                      "(--eval-limit N to change)")
    if not chosen:
        return None
    return f"NOTE: backend {backend.name} emulates the GPU kernels on the CPU, slowly: " + "; ".join(chosen)


def evaluated_images(full: Splits, used: Splits) -> str:
    """'' when every image was evaluated, else what the accuracies are measured on."""
    counts = [(used.x_val.shape[0], full.x_val.shape[0], "validation"),
              (used.x_test.shape[0], full.x_test.shape[0], "test")]
    cut = [f"{n} of {total} {kind}" for n, total, kind in counts if n < total]
    return f" (on the first {' and '.join(cut)} images)" if cut else ""


def write_predictions(path, labels: np.ndarray) -> None:
    """The course's format: one digit per test image, no separator (written atomically)."""
    with atomic_file(path) as handle:
        handle.write("".join(str(int(d)) for d in labels).encode("ascii"))


OUTPUT_FLAGS = ("save", "predictions", "history", "profile")


def silent(*args, **kwargs) -> None:
    pass


def run(cfg: TrainConfig, log=print, splits: Splits | None = None) -> dict:
    """Train as `cfg` says; print the results on the root rank; return them as a dict.

    `splits`: the data, when the caller has already loaded it with load_splits(cfg) (a scan of many
    runs on one dataset reads the files once)."""
    prepared = prepare_run(cfg, log, splits)
    history = train_prepared(prepared)
    return report_run(prepared, history)


@dataclass
class PreparedRun:
    """Everything a run needs before its first step (prepare_run)."""

    cfg: TrainConfig  # as given, with the evaluation limit of its backend
    log: object  # print on the root rank, silent elsewhere
    strategy: object
    backend: object
    full_splits: Splits  # the data as loaded
    splits: Splits  # the rows trained on and evaluated
    hidden: int
    host: dict  # the initial parameters (float64, host)
    params: model.Parameters
    batches: object
    x_val: object
    y_val: object
    x_test: object  # on the device for --history, else None
    snapshot_every: int
    timer: PhaseTimer | None


def prepare_run(cfg: TrainConfig, log=print, splits: Splits | None = None) -> PreparedRun:
    """Check the outputs, load the data, draw or load the parameters, place them, say what will run."""
    strategy = make_strategy(cfg)
    if not strategy.is_root:
        log = silent  # rank 0 alone prints and writes files (model parallelism: all ranks evaluate)
    else:
        check_output_paths({f"--{flag}": getattr(cfg, flag) for flag in OUTPUT_FLAGS})
        if cfg.seq and cfg.debug:
            from .relative_errors import check_outputs

            check_outputs(Path("Outputs"))
    backend = get_backend(cfg.backend, cfg.gemm)
    check_kernels_written(backend)
    note = emulation_note(cfg, backend)
    cfg = cfg.replace(eval_limit=evaluation_limit(cfg, backend))
    if splits is None:
        splits = load_splits(cfg, log=log, progress=strategy.is_root and not cfg.quiet)
    check_ranks_share_the_data(strategy.comm, splits)
    full_splits = splits
    splits = first_rows(splits, cfg.limit_rows, cfg.eval_limit, None if cfg.predictions else cfg.eval_limit)
    hidden, host = initial_parameters(cfg, check_fits=lambda h: check_memory(cfg, h, splits), log=log)
    params = strategy.local_parameters(backend, host, cfg.dtype)
    strategy.broadcast_parameters(params)
    batches = strategy.make_batches(backend, splits.x_train, splits.y_train, cfg)
    x_val, y_val = (backend.to_device(splits.x_val), splits.y_val) if strategy.evaluates else (None, None)
    log(
        f"nn_cuda: {splits.dataset} ({splits.x_train.shape[0]} train / {splits.x_val.shape[0]} val / "
        f"{splits.x_test.shape[0]} test) H={hidden} batch={cfg.batch} lr={cfg.lr:g} reg={cfg.reg:g} "
        f"epochs={cfg.epochs} {cfg.dtype} backend={backend.name} gemm={backend.gemm_algo}"
    )
    steps = cfg.max_steps or cfg.epochs * batches.steps_per_epoch
    kernels = kernel_info.describe_kernel_dir() if backend.runs_kernel_files else None
    for line in (kernels, note, simulator_cost_note(cfg, backend, hidden, steps), strategy.describe()):
        if line:
            log(line)
    return PreparedRun(
        cfg=cfg, log=log, strategy=strategy, backend=backend, full_splits=full_splits, splits=splits,
        hidden=hidden, host=host, params=params, batches=batches, x_val=x_val, y_val=y_val,
        x_test=backend.to_device(splits.x_test) if (cfg.history and strategy.evaluates) else None,
        snapshot_every=snapshot_interval(cfg, batches.steps_per_epoch) if cfg.debug else 0,
        timer=PhaseTimer(backend) if cfg.profile else None,
    )


def train_prepared(run: PreparedRun) -> History:
    """The training loop of a prepared run; on divergence, --save gets the last sound parameters."""
    cfg, strategy = run.cfg, run.strategy
    try:
        return train_loop(run.backend, run.params, run.batches, cfg, strategy, x_val=run.x_val, y_val=run.y_val,
                          x_test=run.x_test, y_test=run.splits.y_test, snapshot_every=run.snapshot_every,
                          timer=run.timer)
    except Diverged as diverged:
        final = strategy.gather_parameters(run.params) if cfg.save else None  # every rank diverged
        if cfg.save and strategy.is_root:
            try:
                save_checkpoint(cfg.save, final, note="the last parameters before the divergence",
                                pixels=cfg.pixels)
            except OutputError as error:
                raise Diverged(f"{diverged}; {error}") from None
            run.log(f"saved the last parameters before the divergence to {cfg.save}")
        raise


def report_run(run: PreparedRun, history: History) -> dict:
    """Evaluate the trained parameters, print the results, write the outputs (each one even when
    another fails; the failures end the run together), and with -s compare with the reference."""
    cfg, strategy, backend, params, splits, log = run.cfg, run.strategy, run.backend, run.params, run.splits, run.log
    strategy.finish(params, log)
    final = strategy.gather_parameters(params) if (cfg.save or cfg.seq) else None
    if strategy.evaluates:
        workspace = model.Workspace(backend, cfg.batch, params.hidden, cfg.dtype)
        test_pred = model.predict(backend, params, workspace, backend.to_device(splits.x_test),
                                  strategy.reduce_logits)
    if not strategy.is_root:
        return {"rank": strategy.rank, "steps": history.steps, "epochs": len(history.epochs)}
    result = {
        "dataset": splits.dataset,
        "steps": history.steps,
        "epochs": len(history.epochs),
        "loss": history.epochs[-1]["loss"] if history.epochs else float("nan"),
        "val_acc": history.epochs[-1].get("val_acc", float("nan")) if history.epochs else float("nan"),
        "test_acc": float(np.mean(test_pred == splits.y_test)),
        "train_seconds": history.train_seconds,
        "load_seconds": history.load_seconds,
        "samples_per_second": history.samples / history.train_seconds if history.train_seconds else 0.0,
        "ranks": strategy.size,
        "history": history.epochs,
    }
    log(
        f"validation accuracy {result['val_acc']:.4f}  test accuracy {result['test_acc']:.4f}"
        f"{evaluated_images(run.full_splits, splits)}  training time {result['train_seconds']:.2f} s  "
        f"({result['samples_per_second']:,.0f} samples/s, {history.steps} steps"
        + (f"; kernels compiled and loaded before it in {history.load_seconds:.2f} s)"
           if backend.compiles_at_first_launch else ")")
    )
    def save() -> None:
        save_checkpoint(cfg.save, final, hidden=run.hidden, dataset=splits.dataset, dtype=cfg.dtype, lr=cfg.lr,
                        reg=cfg.reg, epochs=cfg.epochs, steps=history.steps, pixels=cfg.pixels)
        log(f"saved parameters to {cfg.save}")

    def predictions() -> None:
        write_predictions(cfg.predictions, test_pred)
        log(f"wrote {len(test_pred)} test predictions to {cfg.predictions}")

    write_each(save if cfg.save else None, predictions if cfg.predictions else None,
               (lambda: write_run_records(cfg.replace(hidden=run.hidden), result, run.timer, log))
               if cfg.history or cfg.profile else None)
    if cfg.seq:
        from .relative_errors import report_comparison

        log("-s: training the NumPy reference from the same weights")
        reference = train_with_snapshots(cfg.replace(quiet=True), "numpy", None, splits, run.host)
        tested = Run.from_history(final, history, result["val_acc"])
        result["matches_reference"] = report_comparison(cfg, tested, reference,
                                                        Path("Outputs") if cfg.debug else None, log)
    return result


def write_run_records(cfg: TrainConfig, result: dict, timer, log=print) -> None:
    """--history: the per-epoch loss and accuracies; --profile: the per-phase timings. Both JSON,
    with the machine, the date and the command, for python -m nn_cuda.report."""
    from dataclasses import asdict

    from .records import command_line, machine_info, write_json

    info = machine_info()
    launcher = ["mpirun", "-n", str(result["ranks"])] if result["ranks"] > 1 else []
    info["command"] = command_line([*launcher, "python", "-m", "nn_cuda.train", *sys.argv[1:]], cfg.backend)
    config = asdict(cfg)
    if cfg.history:
        write_json(cfg.history, {"benchmark": "history", "machine": info, "config": config,
                                 "dataset": result["dataset"],  # the data trained on (config: asked for)
                                 "epochs": result["history"], "steps": result["steps"],
                                 "val_acc": result["val_acc"], "test_acc": result["test_acc"],
                                 "train_seconds": result["train_seconds"],
                                 "samples_per_second": result["samples_per_second"],
                                 "ranks": result["ranks"]})
        log(f"wrote the learning curves to {cfg.history}")
    if cfg.profile:
        timer.write_json(cfg.profile, {"benchmark": "profile", "machine": info, "config": config})
        log(f"wrote the per-phase timings to {cfg.profile}")


#: the errors a user can cause (flags, data, checkpoints, divergence, MPI, GPU, output paths): the
#: commands report them in one line
USER_ERRORS = (DataError, CheckpointError, TrainingError, parallel.ParallelError, ValueError,
               BackendUnavailable, KernelFailure, OutputError)
