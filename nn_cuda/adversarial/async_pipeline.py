"""The asynchronous adversarial-training pipeline: `mpirun -n P python -m nn_cuda.adversarial train --async`.

Rank 0 updates the weights; ranks 1 .. P-1 ("generators") attack the mini-batches and send their
adversaries to rank 0, so that the k PGD steps of one batch overlap with the updates on others.

    generator g (1 .. G, G = P - 1)                  rank 0
    owns batches b with b % G == g - 1               loop until every batch of every epoch is used:
    for each of its batches:                           pick a generator (fair, see below)
      wait for weights >= the ack of its last batch    Recv its batch; Isend it an ack (the update count u)
      k PGD steps; every --check-interval steps        SGD step on the adversaries; u += 1
        take the newest weights that have arrived      Isend weights version u to every generator
      Issend (adversaries, labels, version) to 0,        that still has batches to send
        wait for it to be received, then for the ack

- At most one batch per generator is in flight: the send is synchronous (it completes only when
  rank 0 has received it), and a generator starts its next batch only after that.
- Weights: every generator keeps a nonblocking receive posted and tests it every --check-interval
  PGD steps; when it has completed, any further waiting weight messages are received too and only
  the newest is kept. A message carries its version (the number of updates it includes).
- Fairness: rank 0 probes the generators round robin, starting after the one it served last, and
  receives the first batch that is ready.
- Staleness of a batch = updates applied when it is consumed - the version of the oldest weights
  its attack used (the paper's definition). Before starting a batch a generator waits until it holds
  weights at least as new as those rank 0 held when it received the generator's previous batch (the
  ack says which; they were sent before that receive, so the wait is only their delivery). Rank 0 then
  knows a bound for every generator's batch in progress, u - last[g], and bounds the staleness by
  --max-staleness S: once a generator's bound reaches S - (G - 1), rank 0 serves the most overdue
  such generator next (a generator not served yet before one served at update 0), waiting for it
  if needed. Every generator ahead of it in that order is served at most once first, so no batch is
  consumed with a staleness above S (S >= G required; S = G is strict round robin). The default,
  2 G, rarely has to wait.
- Timing: every rank meets at a barrier before the generators' first attack and rank 0's clock,
  so the training time includes all of the generators' work.
- The run ends cleanly: rank 0 sends weights to a generator only while that generator has batches
  left, so after its last ack a generator receives exactly the messages still due to it, cancels its
  posted receive, and every rank leaves through a final barrier.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import model
from ..parallel.mpi import ParallelError, import_mpi, waiting_in
from .attacks import Attacker

TAG_BATCH, TAG_ACK, TAG_WEIGHTS = 11, 12, 13
#: seconds a rank sleeps after a round of probes found nothing (busy polling would starve the
#: generators of cores on an oversubscribed node)
POLL_SECONDS = 1e-4
#: entries after the images and labels of a batch message: epoch, batch index, weights version
HEADER = 3


def default_max_staleness(generators: int) -> int:
    return 2 * generators


def force_threshold(max_staleness: int, generators: int) -> int:
    """The bound u - last[g] at which rank 0 serves generator g next (see the module docstring)."""
    if max_staleness < generators:
        raise ParallelError(
            f"--max-staleness {max_staleness} is below the {generators} generator rank(s); it must be "
            f">= P - 1 = {generators} (P - 1 is strict round robin); raise it or use fewer ranks"
        )
    return max_staleness - (generators - 1)


def owned_batches(n_batches: int, generators: int, g: int) -> list[int]:
    """The static share of generator g (1-based): batch indices b with b % G == g - 1."""
    return [b for b in range(n_batches) if b % generators == g - 1]


@dataclass
class AttackSettings:
    attack: str  # "pgd" or "fgsm"
    eps: float
    alpha: float
    steps: int
    random_start: bool = False
    check_interval: int = 1
    pixel_max: float = 1.0  # the largest pixel value of the network's input (model.pixel_max)


@dataclass
class PipelineResult:
    updates: int = 0
    samples: int = 0
    train_seconds: float = 0.0
    #: rank 0's time waiting for batches (probing, receiving) and sending weights; the rest is updates
    wait_seconds: float = 0.0
    send_seconds: float = 0.0
    #: one dict per consumed batch: epoch, batch, generator, version, update, staleness
    log: list = field(default_factory=list)
    epochs: list = field(default_factory=list)  # rank 0: {"epoch", "val_acc"} per epoch's worth

    def staleness_histogram(self) -> dict:
        counts: dict = {}
        for record in self.log:
            counts[record["staleness"]] = counts.get(record["staleness"], 0) + 1
        return dict(sorted(counts.items()))


def _mpi_float(MPI, dtype):
    return MPI.DOUBLE if np.dtype(dtype) == np.float64 else MPI.FLOAT


class WeightsReceiver:
    """A generator's side of the weight messages: one nonblocking receive always posted."""

    def __init__(self, comm, backend, params: model.Parameters):
        self.MPI = import_mpi()
        self.comm, self.backend, self.params = comm, backend, params
        self.buffer = np.empty(params.size + 1, dtype=params.dtype)  # [flat parameters | version]
        self.version = 0
        self.request = self.comm.Irecv(self.buffer, source=0, tag=TAG_WEIGHTS)

    def _take(self) -> None:
        """The posted receive has completed: receive any newer waiting messages, keep the newest."""
        while self.comm.Iprobe(source=0, tag=TAG_WEIGHTS):
            self.comm.Recv(self.buffer, source=0, tag=TAG_WEIGHTS)
        self.version = int(self.buffer[-1])
        self.backend.copy(self.backend.to_device(self.buffer[:-1]), self.params.flat)
        self.request = self.comm.Irecv(self.buffer, source=0, tag=TAG_WEIGHTS)

    def poll(self) -> None:
        """Take new weights if any have arrived (never waits)."""
        if self.request.Test():
            self._take()

    def wait_for(self, version: int) -> None:
        """Block until the weights held are at least `version` (already sent by rank 0)."""
        while self.version < version:
            self.request.Wait()
            self._take()

    def close(self) -> None:
        """No more messages are due: withdraw the posted receive."""
        self.request.Cancel()
        self.request.Wait()


def run_generator(comm, backend, params: model.Parameters, batches, settings: AttackSettings, epochs: int,
                  max_batch: int, seed: int = 0) -> int:
    """Generator rank: attack this rank's share of every epoch, send each batch to rank 0.

    `batches` is a SerialBatches of the whole training set (every generator holds it and walks the
    same order). Returns the number of batches sent.
    """
    MPI = import_mpi()
    rank, generators = comm.Get_rank(), comm.Get_size() - 1
    attacker = Attacker(backend, params, max_batch, seed=seed + rank, pixel_max=settings.pixel_max)
    weights = WeightsReceiver(comm, backend, params)
    send_buffer = np.empty(max_batch * (params.n_in + 1) + HEADER, dtype=params.dtype)
    ack = np.zeros(1, dtype=np.int64)
    interval = max(1, settings.check_interval)

    def check_weights(step: int) -> None:
        if step and step % interval == 0:
            weights.poll()

    with waiting_in("the start barrier"):
        comm.Barrier()  # start with rank 0's clock (run_updater), not while rank 0 is still setting up
    sent = 0
    for epoch in range(epochs):
        for b, (X, labels, _) in enumerate(batches.batches(epoch)):
            if b % generators != rank - 1:
                continue
            with waiting_in("the receive of rank 0's weights"):
                weights.wait_for(int(ack[0]))  # no older than rank 0's weights at my last receipt
            version = weights.version  # the oldest weights this attack uses
            if settings.attack == "fgsm":
                adversaries = attacker.fgsm(X, labels, settings.eps)
            else:
                adversaries = attacker.pgd(X, labels, settings.eps, settings.alpha, settings.steps,
                                           settings.random_start, on_step=check_weights)
            n = X.shape[0]
            images = n * params.n_in
            send_buffer[:images] = backend.to_host(adversaries).ravel()
            send_buffer[images:images + n] = backend.to_host(labels)
            send_buffer[images + n:images + n + HEADER] = (epoch, b, version)
            request = comm.Issend([send_buffer[:images + n + HEADER], _mpi_float(MPI, params.dtype)],
                                  dest=0, tag=TAG_BATCH)
            with waiting_in("the send of a batch to rank 0"):
                while not request.Test():  # received by rank 0 when this completes
                    weights.poll()
                    time.sleep(POLL_SECONDS)
                comm.Recv(ack, source=0, tag=TAG_ACK)
            sent += 1
    weights.wait_for(int(ack[0]))  # the messages sent to this rank before its last batch was received
    weights.close()
    return sent


def most_overdue(candidates, last: dict, never_served: set) -> int:
    """The generator to serve first among `candidates` (all at the staleness bound): the one whose
    previous batch is oldest. A generator never served and one served at update 0 both have last = 0;
    the one never served counts as older (serving the other again would break round robin), then the
    lower rank."""
    return min(candidates, key=lambda h: (last[h], h not in never_served, h))


def run_updater(comm, backend, params: model.Parameters, n_batches: int, epochs: int, max_batch: int,
                lr: float, reg: float, max_staleness: int | None = None, on_update=None) -> PipelineResult:
    """Rank 0: receive the generators' batches fairly and apply one SGD step per batch.

    `on_update(result)` is called after every update (rank 0's progress and per-epoch validation).
    """
    MPI = import_mpi()
    generators = comm.Get_size() - 1
    gens = list(range(1, generators + 1))
    max_staleness = default_max_staleness(generators) if max_staleness is None else max_staleness
    force_at = force_threshold(max_staleness, generators)
    remaining = {g: epochs * len(owned_batches(n_batches, generators, g)) for g in gens}
    total = sum(remaining.values())
    last = {g: 0 for g in gens}  # update count when g's previous batch was received (0: none yet)
    never_served = set(gens)
    grads = model.Parameters(backend, params.hidden, params.dtype, params.n_in, params.n_out)
    workspace = model.Workspace(backend, max_batch, params.hidden, params.dtype, params.n_out)
    X_dev = backend.empty((max_batch, params.n_in), params.dtype)
    receive_buffer = np.empty(max_batch * (params.n_in + 1) + HEADER, dtype=params.dtype)
    ack_buffers = {g: np.zeros(1, dtype=np.int64) for g in gens}
    ack_requests: dict = {}
    sends_to = {g: [] for g in gens}  # weight sends to each generator not yet known complete
    weight_sends: list = []  # (requests, buffer): a buffer stays alive until its sends complete
    status = MPI.Status()
    result = PipelineResult()
    last_served = 0

    def ready(g: int) -> bool:
        return comm.Iprobe(source=g, tag=TAG_BATCH)

    def choose(u: int) -> int:
        nonlocal last_served
        waiting = [g for g in gens if remaining[g] > 0]
        overdue = [g for g in waiting if u - last[g] >= force_at]
        if overdue:  # the staleness bound: serve the most overdue generator, waiting if need be
            g = most_overdue(overdue, last, never_served)
            while not ready(g):
                time.sleep(POLL_SECONDS)
            last_served = g
            return g
        order = [gens[(last_served + i) % generators] for i in range(generators)]  # after last_served
        while True:
            for g in order:
                if remaining[g] > 0 and ready(g):
                    last_served = g
                    return g
            time.sleep(POLL_SECONDS)

    model.load_step_kernels(backend, params)  # compiled before the clock, as in nn_cuda.training
    backend.synchronize()
    with waiting_in("the start barrier"):
        comm.Barrier()  # the generators start their first attacks now: the clock sees all of their work
    started = time.perf_counter()
    u = 0
    while u < total:
        waiting_since = time.perf_counter()
        with waiting_in("the receive of a generator's batch"):
            g = choose(u)
        comm.Recv([receive_buffer, _mpi_float(MPI, params.dtype)], source=g, tag=TAG_BATCH, status=status)
        count = status.Get_count(_mpi_float(MPI, params.dtype))
        n = (count - HEADER) // (params.n_in + 1)
        # waits on g too: the watchdog names them (a generator stopped here read as rank 0 "stuck computing")
        with waiting_in(f"the messages to generator {g}"):
            if g in ack_requests:
                ack_requests[g].Wait()
            ack_buffers[g][0] = u
            ack_requests[g] = comm.Isend(ack_buffers[g], dest=g, tag=TAG_ACK)
            # Finish the weight messages to g now, while g is inside MPI waiting for them: a large
            # message moves only while both ranks make MPI progress, and otherwise g would wait
            # until this update is done (which would serialise the pipeline).
            MPI.Request.Waitall(sends_to[g])
        sends_to[g] = []
        result.wait_seconds += time.perf_counter() - waiting_since
        images = n * params.n_in
        epoch, b, version = (int(v) for v in receive_buffer[images + n:images + n + HEADER])
        result.log.append({"epoch": epoch, "batch": b, "generator": g, "version": version, "update": u,
                           "staleness": u - version})
        remaining[g] -= 1
        last[g] = u
        never_served.discard(g)

        X = X_dev[:n]
        backend.copy(backend.to_device(receive_buffer[:images].reshape(n, params.n_in)), X)
        labels = backend.to_device(receive_buffer[images:images + n].astype(np.int32))
        model.training_step(backend, params, grads, workspace, X, labels, 1.0 / n, lr, reg)
        u += 1
        result.samples += n

        sending_since = time.perf_counter()
        outgoing = np.empty(params.size + 1, dtype=params.dtype)
        outgoing[:-1] = backend.to_host(params.flat)
        outgoing[-1] = u
        requests = []
        for h in gens:
            if remaining[h] > 0:
                requests.append(comm.Isend(outgoing, dest=h, tag=TAG_WEIGHTS))
                sends_to[h].append(requests[-1])
        weight_sends.append((requests, outgoing))
        weight_sends = [(r, buf) for r, buf in weight_sends if not MPI.Request.Testall(r)]
        result.send_seconds += time.perf_counter() - sending_since
        result.updates = u
        if on_update is not None:
            on_update(result)
    backend.synchronize()
    result.train_seconds = time.perf_counter() - started
    for requests, _ in weight_sends:
        MPI.Request.Waitall(requests)
    for request in ack_requests.values():
        request.Wait()
    return result
