"""`python -m nn_cuda.adversarial eval | train`: robustness of a checkpoint, adversarial training.

    python -m nn_cuda.adversarial eval --checkpoint M.npz --eps 0.05,0.1,0.2 --steps 20
    python -m nn_cuda.adversarial train --attack pgd --eps 0.1 --steps 3 --save robust.npz
    mpirun -n 3 python -m nn_cuda.adversarial train --async --eps 0.1 --steps 2
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import fields

import numpy as np

from .. import model, parallel
from ..backends import BACKENDS, get_backend
from ..records import command_line, machine_info, write_json
from ..checkpoint import for_pixels, load_checkpoint, save_checkpoint
from ..arguments import comma_separated, non_negative_int, pixel_radius, positive_float, positive_int
from ..config import (EMULATED_EVAL_LIMIT, HelpFormatter, TrainConfig, build_parser, default_lr, reword_help,
                      take_pixel_defaults)
from ..data import DATASETS
from ..divergence import likely_cause
from ..errors import failed
from ..interrupts import ends_in_one_line_when_interrupted
from ..outputs import write_each
from ..parallel.serial import SerialBatches
from ..training import (USER_ERRORS, Diverged, check_kernels_written, check_memory, check_output_paths,
                        check_ranks_share_the_data, emulation_note, evaluation_limit, first_rows,
                        initial_parameters, load_splits, silent, train_loop)
from .attacks import Attacker, check_pixels
from .evaluate import default_alpha, format_table, robustness

PROG = "python -m nn_cuda.adversarial"
DEFAULT_PGD_STEPS = 3
#: what the logs say of eps and alpha, which are in [0, 1] pixel units on either pixels
UNITS = "eps and alpha in units of the pixel range"
#: test images of the final robustness check of `train`, unless --eval-limit says otherwise
ROBUSTNESS_IMAGES = 1000


# ---- eval -----------------------------------------------------------------------------------


def eval_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"{PROG} eval", formatter_class=HelpFormatter,
                                description="Clean, FGSM and PGD accuracy of a checkpoint, per eps.")
    p.add_argument("--checkpoint", required=True, metavar="M.npz", help="weights to attack")
    p.add_argument("--eps", type=comma_separated(pixel_radius), default=[0.05, 0.1, 0.2],
                   help="L-infinity radii, comma-separated")
    p.add_argument("--steps", type=positive_int, default=20, help="PGD steps k")
    p.add_argument("--alpha", type=positive_float, default=None, help="PGD step (default 2.5 eps / k)")
    p.add_argument("--random-start", action="store_true", help="start PGD at a uniform point of the ball")
    p.add_argument("--dataset", choices=DATASETS, default="mnist", help="the images' dataset")
    p.add_argument("--data-dir", default=None, help="folder holding the four IDX files")
    p.add_argument("--split", choices=("test", "val"), default="test", help="the images attacked")
    p.add_argument("--limit", type=positive_int, default=None, help="attack only the first N images")
    p.add_argument("--backend", choices=BACKENDS, default="numpy", help="as for nn_cuda.train")
    p.add_argument("--gemm", default=None, help="as for nn_cuda.train")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                   help="floating-point type of the attack")
    p.add_argument("--batch", type=positive_int, default=500, help="images attacked at once")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of --random-start")
    p.add_argument("--json", metavar="PATH", help="also write the table as JSON")
    return p


def run_eval(args, log=print) -> list:
    check_output_paths({"--json": args.json})
    host, metadata = load_checkpoint(args.checkpoint)
    # attacked on the pixels it was trained on (eps stays in [0, 1] units); one older than that
    # record on [0, 1] pixels, with a NOTE (for_pixels)
    pixels = metadata.get("pixels", "unit")
    host, note = for_pixels(host, metadata, pixels, args.checkpoint)
    if note:
        log(note)
    cfg = TrainConfig(dataset=args.dataset, data_dir=args.data_dir, dtype=args.dtype, pixels=pixels)
    splits = load_splits(cfg, log=log)
    x, y = (splits.x_test, splits.y_test) if args.split == "test" else (splits.x_val, splits.y_val)
    backend = get_backend(args.backend, args.gemm)
    check_kernels_written(backend)
    limit = args.limit or (EMULATED_EVAL_LIMIT if backend.emulated else None)
    if limit:
        x, y = x[:limit], y[:limit]
    params = model.Parameters(backend, host["W1"].shape[0], args.dtype)
    params.load(host)
    x_dev, y_dev = backend.to_device(x), backend.to_device(y)
    log(f"nn_cuda.adversarial: {args.checkpoint} (H={params.hidden}) on {x.shape[0]} {splits.dataset} "
        f"{args.split} images ({pixels} pixels, as trained; {UNITS}), backend={backend.name} {args.dtype}")
    if backend.emulated and not args.limit:
        log(f"NOTE: backend {backend.name} emulates the GPU kernels on the CPU, slowly: attacking the first "
            f"{limit} images (--limit N to change)")
    rows = robustness(backend, params, x_dev, y_dev, args.eps, args.steps, args.alpha, args.batch,
                      args.random_start, args.seed, pixel_max=model.pixel_max(pixels))
    log(format_table(rows))
    for r in rows:
        if not r.pgd_at_least_as_strong:
            log(f"WARNING: at eps = {r.eps:g} PGD ({r.pgd:.4f}) is weaker than FGSM ({r.fgsm:.4f}); "
                "raise --steps or --alpha")
    if args.json:
        write_json(args.json, [r.__dict__ for r in rows])
    return rows


# ---- train ----------------------------------------------------------------------------------


ADVERSARIAL_FLAGS = ("attack", "eps", "alpha", "steps", "random_start", "async_", "check_interval",
                     "max_staleness", "eval_eps", "eval_steps", "staleness_log", "json")
_GRADING = "the course's grading modes: python -m nn_cuda.train runs them"
_NOT_WRITTEN = "files adversarial training does not write: --json writes its results, --save its weights"
_MPI = ("nn_cuda.train's MPI strategies: serial adversarial training runs on one process, --async splits "
        "the work its own way")
#: nn_cuda.train's flags that adversarial training refuses (dest: flag, reason); --help leaves them out
REFUSED_TRAIN_FLAGS = {
    "grade": ("-g/--grade", _GRADING), "seq": ("-s/--seq", _GRADING), "debug": ("-d/--debug", _GRADING),
    "predictions": ("--predictions", _NOT_WRITTEN), "history": ("--history", _NOT_WRITTEN),
    "profile": ("--profile", _NOT_WRITTEN),
    "parallel": ("--parallel", _MPI), "model_ranks": ("--model-ranks", _MPI), "comm": ("--comm", _MPI),
    "overlap": ("--overlap", _MPI), "mpi_task": ("--mpi-task", _MPI),
}
#: the help of nn_cuda.train's flags that do a little more, or less, here
TRAIN_FLAGS_HELP = {
    "--print-every": "steps between loss read-backs (0: about 10 per epoch; not with --async)",
    "--eval-limit": ("validation accuracy on the first N validation images and the final robustness check "
                     f"on the first N test images (default: all validation and {ROBUSTNESS_IMAGES} test "
                     f"images; {EMULATED_EVAL_LIMIT} of each on an emulated backend)"),
}


def train_parser() -> argparse.ArgumentParser:
    p = build_parser(f"{PROG} train")
    p.description = ("Adversarial training (each mini-batch replaced by its adversaries), serial or, "
                     "under mpirun with --async, with ranks 1..P-1 generating adversaries for rank 0.")
    a = p.add_argument_group("adversarial training")
    a.add_argument("--attack", choices=("pgd", "fgsm"), default="pgd")
    a.add_argument("--eps", type=pixel_radius, default=0.1,
                   help="L-infinity radius of the attack, in [0, 1] pixel units whatever --pixels")
    a.add_argument("--alpha", type=positive_float, default=None, help="PGD step size (default 2.5 eps / k)")
    a.add_argument("--steps", type=positive_int, default=None,
                   help=f"PGD steps k (default {DEFAULT_PGD_STEPS})")
    a.add_argument("--random-start", action="store_true", help="start PGD at a uniform point of the ball")
    a.add_argument("--async", dest="async_", action="store_true",
                   help="under mpirun -n P (P >= 2): rank 0 updates, ranks 1..P-1 generate adversaries")
    a.add_argument("--check-interval", type=positive_int, default=1,
                   help="--async: PGD steps between a generator's checks for new weights")
    a.add_argument("--max-staleness", type=positive_int, default=None,
                   help="--async: bound on a batch's staleness, >= P - 1 (default 2 (P - 1))")
    a.add_argument("--eval-eps", type=comma_separated(pixel_radius), default=None,
                   help="radii of the final robustness check on the test set (default: --eps)")
    a.add_argument("--eval-steps", type=positive_int, default=20, help="PGD steps of the final check")
    a.add_argument("--staleness-log", metavar="PATH",
                   help="--async: write every consumed batch's record (JSON)")
    a.add_argument("--json", metavar="PATH", help="write the results as JSON")
    left_out = {flag.split("/")[-1]: argparse.SUPPRESS for flag, _ in REFUSED_TRAIN_FLAGS.values()}
    reword_help(p, {**left_out, **TRAIN_FLAGS_HELP})
    return p


def refuse(parser: argparse.ArgumentParser, message: str) -> None:
    """A usage error in one line, without the long usage: exit status 2."""
    parser.exit(2, f"{parser.prog}: error: {message}\n")


def refused_flags(cfg: TrainConfig, adversarial_args) -> str | None:
    """The flags given that adversarial training would ignore, with the reasons, or None."""
    reasons: dict = {}
    for dest, (flag, reason) in REFUSED_TRAIN_FLAGS.items():
        value = getattr(cfg, dest)
        if value != getattr(TrainConfig, dest):
            reasons.setdefault(reason, []).append(flag if isinstance(value, bool) else f"{flag} {value}")
    if adversarial_args.async_ and cfg.print_every:
        reasons.setdefault("--async splits the work its own way: rank 0 updates, the other ranks attack",
                           []).append(f"-p/--print-every {cfg.print_every}")
    if not adversarial_args.async_:
        async_only = [flag for flag, given in (("--check-interval", adversarial_args.check_interval != 1),
                                               ("--max-staleness", adversarial_args.max_staleness is not None),
                                               ("--staleness-log", adversarial_args.staleness_log is not None))
                      if given]
        if async_only:
            reasons["settings of --async, whose generator ranks a serial run does not have"] = async_only
    if adversarial_args.attack == "fgsm":
        pgd_only = [flag for flag, given in (("--alpha", adversarial_args.alpha is not None),
                                             ("--steps", adversarial_args.steps is not None),
                                             ("--random-start", adversarial_args.random_start)) if given]
        if pgd_only:
            reasons["PGD's settings: FGSM is one step of eps from the clean image"] = pgd_only
    if not reasons:
        return None
    return "; ".join(f"{', '.join(flags)} ({reason})" for reason, flags in reasons.items()) + ": drop them"


def parse_train_args(argv):
    parser = train_parser()
    namespace = parser.parse_args(argv)
    take_pixel_defaults(namespace, argv, train_parser)
    args = vars(namespace)
    adversarial_args = argparse.Namespace(**{k: args.pop(k) for k in ADVERSARIAL_FLAGS}, argv=list(argv or ()))
    names = {f.name for f in fields(TrainConfig)}
    cfg = TrainConfig(**{k: v for k, v in args.items() if k in names})
    refusal = refused_flags(cfg, adversarial_args)
    if refusal:
        refuse(parser, refusal)
    if adversarial_args.attack == "fgsm":
        # what FGSM does, as the log and the checkpoint record it
        adversarial_args.steps, adversarial_args.alpha = 1, adversarial_args.eps
    else:
        adversarial_args.steps = adversarial_args.steps or DEFAULT_PGD_STEPS
        adversarial_args.alpha = (adversarial_args.alpha
                                  or default_alpha(adversarial_args.eps, adversarial_args.steps))
    if adversarial_args.eval_eps is None:
        adversarial_args.eval_eps = [adversarial_args.eps]
    return cfg, adversarial_args


def training_splits(cfg: TrainConfig, backend, log, comm=None):
    """The data of adversarial training: the first --limit-rows training images, the first --eval-limit
    validation images (all by default) and test images for the robustness check (ROBUSTNESS_IMAGES by
    default). `comm`: the ranks of --async, which must all have loaded the same data."""
    splits = load_splits(cfg, log=log, progress=log is not silent and not cfg.quiet)
    check_ranks_share_the_data(comm, splits)
    limit = evaluation_limit(cfg, backend)
    return first_rows(splits, cfg.limit_rows, limit, limit or ROBUSTNESS_IMAGES)


def nothing_saved(diverged: Diverged, cfg: TrainConfig) -> Diverged:
    """The divergence, saying that --save was not written (only a finished run saves its weights)."""
    return Diverged(f"{diverged}; nothing was written to --save {cfg.save}") if cfg.save else diverged


def _final_report(backend, params, cfg, adversarial_args, splits, result: dict, log, staleness_log=None) -> dict:
    """The robustness table, then every output (`staleness_log`: --async's record), each written also
    when another cannot be."""
    x, y = splits.x_test, splits.y_test
    rows = robustness(backend, params, backend.to_device(x), backend.to_device(y), adversarial_args.eval_eps,
                      adversarial_args.eval_steps, batch=cfg.batch, pixel_max=model.pixel_max(cfg.pixels))
    log(f"robustness on {x.shape[0]} test images (PGD k={adversarial_args.eval_steps}, alpha = 2.5 eps / k):")
    log(format_table(rows))
    result["robustness"] = [r.__dict__ for r in rows]

    def save() -> None:
        save_checkpoint(cfg.save, params.to_host(), hidden=params.hidden, dataset=splits.dataset,
                        dtype=cfg.dtype, lr=cfg.lr, reg=cfg.reg, epochs=cfg.epochs, pixels=cfg.pixels,
                        attack=adversarial_args.attack, eps=adversarial_args.eps,
                        alpha=adversarial_args.alpha, steps=adversarial_args.steps,
                        asynchronous=adversarial_args.async_)
        log(f"saved parameters to {cfg.save}")

    def report() -> None:
        write_json(adversarial_args.json, {**result, "machine": run_machine(cfg, adversarial_args, result)})

    write_each(save if cfg.save else None, report if adversarial_args.json else None,
               (lambda: write_json(adversarial_args.staleness_log, staleness_log)) if staleness_log else None)
    return result


def run_machine(cfg, adversarial_args, result: dict) -> dict:
    """The machine, date and command line of this run, for --json (as nn_cuda.train's --history has)."""
    info = machine_info()
    launcher = ["mpirun", "-n", str(result["ranks"])] if result.get("ranks", 1) > 1 else []
    words = ["python", "-m", "nn_cuda.adversarial", "train", *adversarial_args.argv]
    info["command"] = command_line([*launcher, *words], cfg.backend)
    return info


def run_train_serial(cfg, adversarial_args, log=print) -> dict:
    from .train_serial import AdversarialBatches

    check_output_paths({"--save": cfg.save, "--json": adversarial_args.json})
    backend = get_backend(cfg.backend, cfg.gemm)
    check_kernels_written(backend)
    splits = training_splits(cfg, backend, log)
    hidden, host = initial_parameters(cfg, check_fits=lambda h: check_memory(cfg, h, splits), log=log)
    params = model.Parameters(backend, hidden, cfg.dtype)
    params.load(host)
    check_pixels(splits.x_train, model.pixel_max(cfg.pixels), "the training images")
    batches = SerialBatches(backend, splits.x_train, splits.y_train, cfg.batch, cfg.shuffle, cfg.seed)
    attacker = Attacker(backend, params, cfg.batch, seed=cfg.seed, pixel_max=model.pixel_max(cfg.pixels))
    adversarial_batches = AdversarialBatches(batches, attacker, adversarial_args.attack, adversarial_args.eps,
                                             adversarial_args.alpha, adversarial_args.steps,
                                             adversarial_args.random_start)
    log(f"nn_cuda.adversarial: serial {adversarial_args.attack} training eps={adversarial_args.eps:g} "
        f"alpha={adversarial_args.alpha:.4g} k={adversarial_args.steps} on {splits.dataset} "
        f"({splits.x_train.shape[0]} train, {cfg.pixels} pixels; {UNITS}) H={hidden} batch={cfg.batch} "
        f"lr={cfg.lr:g} epochs={cfg.epochs} backend={backend.name} {cfg.dtype}")
    note = emulation_note(cfg, backend)
    if note:
        log(note)
    try:
        history = train_loop(backend, params, adversarial_batches, cfg,
                             x_val=backend.to_device(splits.x_val), y_val=splits.y_val)
    except Diverged as diverged:
        raise nothing_saved(diverged, cfg) from None
    log(f"training time {history.train_seconds:.2f} s ({history.steps} updates, "
        f"{history.samples / max(history.train_seconds, 1e-9):,.0f} samples/s)")
    result = {"mode": "serial", "updates": history.steps, "train_seconds": history.train_seconds,
              "history": history.epochs}
    return _final_report(backend, params, cfg, adversarial_args, splits, result, log)


def run_train_async(cfg, adversarial_args, log=print) -> dict | None:
    from ..parallel.mpi import Communicator, ParallelError, launched_by_mpi
    from .async_pipeline import (AttackSettings, default_max_staleness, force_threshold, run_generator,
                                 run_updater)

    if not launched_by_mpi():
        raise ParallelError(f"--async needs MPI ranks: mpirun -n 3 {PROG} train --async ...")
    comm = Communicator.world(cfg.mpi_timeout).comm
    rank, size = comm.Get_rank(), comm.Get_size()
    if size < 2:
        raise ParallelError(f"--async needs at least 2 ranks (one updater, one generator), got {size}: "
                            f"mpirun -n 3 {PROG} train --async ...")
    generators = size - 1
    max_staleness = adversarial_args.max_staleness or default_max_staleness(generators)
    force_threshold(max_staleness, generators)  # a clear error on every rank before any message
    if rank != 0:
        log = silent
    else:
        check_output_paths({"--save": cfg.save, "--json": adversarial_args.json,
                            "--staleness-log": adversarial_args.staleness_log})
    backend = get_backend(cfg.backend, cfg.gemm)
    check_kernels_written(backend)
    splits = training_splits(cfg, backend, log, comm)
    hidden, host = initial_parameters(cfg, check_fits=lambda h: check_memory(cfg, h, splits), log=log)
    check_pixels(splits.x_train, model.pixel_max(cfg.pixels), "the training images")
    params = model.Parameters(backend, hidden, cfg.dtype)
    flat = np.empty(params.size, dtype=params.dtype)
    if rank == 0:
        params.load(host)
        flat[:] = backend.to_host(params.flat)
    comm.Bcast(flat, root=0)  # every rank starts from rank 0's weights (version 0)
    backend.copy(backend.to_device(flat), params.flat)
    n = splits.x_train.shape[0]
    n_batches = -(-n // cfg.batch)
    epochs = cfg.epochs
    if cfg.max_steps:
        raise ParallelError("--max-steps is not supported with --async; use --epochs")
    settings = AttackSettings(adversarial_args.attack, adversarial_args.eps, adversarial_args.alpha,
                              adversarial_args.steps, adversarial_args.random_start,
                              adversarial_args.check_interval, model.pixel_max(cfg.pixels))
    if rank != 0:
        batches = SerialBatches(backend, splits.x_train, splits.y_train, cfg.batch, cfg.shuffle, cfg.seed)
        run_generator(comm, backend, params, batches, settings, epochs, cfg.batch, seed=cfg.seed)
        comm.Barrier()
        return None

    log(f"nn_cuda.adversarial: asynchronous {adversarial_args.attack} training on {size} ranks (1 updater, "
        f"{generators} generators) eps={adversarial_args.eps:g} alpha={adversarial_args.alpha:.4g} "
        f"k={adversarial_args.steps} check-interval={adversarial_args.check_interval} "
        f"max-staleness={max_staleness} on {splits.dataset} "
        f"({n} train, {n_batches} batches/epoch, {cfg.pixels} pixels; {UNITS}) H={hidden} batch={cfg.batch} "
        f"lr={cfg.lr:g} epochs={epochs} backend={backend.name} {cfg.dtype}")
    note = emulation_note(cfg, backend)
    if note:
        log(note)
    x_val, y_val = backend.to_device(splits.x_val), splits.y_val
    workspace = model.Workspace(backend, cfg.batch, hidden, cfg.dtype)
    from tqdm.auto import tqdm

    bar = tqdm(total=epochs * n_batches, unit="batch", disable=cfg.quiet, desc="updates")
    epoch_records = []

    def after_update(result) -> None:
        bar.update(1)
        if result.updates % n_batches == 0:
            acc = float(np.mean(model.predict(backend, params, workspace, x_val) == y_val))
            epoch_records.append({"epoch": result.updates // n_batches, "val_acc": acc})
            bar.set_postfix(val_acc=f"{acc:.4f}", staleness=result.log[-1]["staleness"])

    result = run_updater(comm, backend, params, n_batches, epochs, cfg.batch, cfg.lr, cfg.reg, max_staleness,
                         on_update=after_update)
    bar.close()
    comm.Barrier()
    if not math.isfinite(backend.sum_squares(params.flat)):
        cause = likely_cause(cfg.lr, cfg.reg, default_lr=default_lr(cfg.pixels))
        diverged = Diverged(f"training diverged (non-finite weights); {cause}")
        raise nothing_saved(diverged, cfg)
    histogram = result.staleness_histogram()
    worst = max(histogram) if histogram else 0
    log(f"training time {result.train_seconds:.2f} s ({result.updates} updates, "
        f"{result.samples / max(result.train_seconds, 1e-9):,.0f} samples/s); rank 0 waited "
        f"{result.wait_seconds:.2f} s for batches and {result.send_seconds:.2f} s sending weights")
    log("staleness (updates between the weights an adversary was made with and its use): "
        + ", ".join(f"{s}: {c}" for s, c in histogram.items()) + f"  (max {worst}, bound {max_staleness})")
    summary = {"mode": "async", "ranks": size, "updates": result.updates,
               "train_seconds": result.train_seconds, "wait_seconds": result.wait_seconds,
               "send_seconds": result.send_seconds, "history": epoch_records,
               "staleness_histogram": {str(k): v for k, v in histogram.items()},
               "max_staleness": max_staleness}
    staleness_log = {"ranks": size, "max_staleness": max_staleness, "n_batches": n_batches, "epochs": epochs,
                     "log": result.log} if adversarial_args.staleness_log else None
    return _final_report(backend, params, cfg, adversarial_args, splits, summary, log, staleness_log)


# ---- the command ----------------------------------------------------------------------------

USAGE = f"""usage: {PROG} {{eval,train}} ...

  eval   clean, FGSM and PGD accuracy of a checkpoint (--checkpoint M.npz --eps 0.05,0.1,0.2 --steps 20)
  train  adversarial training, serial or (under mpirun, with --async) pipelined over P ranks

{PROG} eval --help and {PROG} train --help list the flags."""


@ends_in_one_line_when_interrupted(PROG)
def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command, rest = (argv[0], argv[1:]) if argv else (None, [])
    if command not in ("eval", "train"):
        with parallel.output_on_root_only():  # under mpirun: once, not once a rank
            if command in (None, "-h", "--help"):
                print(USAGE)
                return 0 if argv else 2
            print(f"{PROG}: error: unknown command {command!r}; choose eval or train ({PROG} --help)",
                  file=sys.stderr)
            return 2
    parallel.share_cores_between_ranks()  # under mpirun: each rank's BLAS gets its share of the cores
    with parallel.output_on_root_only():
        if command == "eval":
            args = eval_parser().parse_args(rest)
        else:
            cfg, adversarial_args = parse_train_args(rest)
    if command == "eval" and parallel.refuse_extra_ranks(PROG, "eval"):
        return 1
    if command == "train" and not adversarial_args.async_ and parallel.refuse_extra_ranks(
            PROG, "serial adversarial training", ", or add --async to pipeline it over the ranks"):
        return 1
    try:
        with parallel.abort_on_error(PROG, USER_ERRORS):
            if command == "train" and adversarial_args.async_:
                run_train_async(cfg, adversarial_args)
                return 0
            if command == "eval":
                run_eval(args)
            else:
                run_train_serial(cfg, adversarial_args)
    except USER_ERRORS as exc:
        return failed(PROG, exc)
    return 0
