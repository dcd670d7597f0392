"""What a demo's training loop runs inside, so that the loop itself shows only the training:

    with Instruments(args, rank, "gpipe", opt, stages) as measure:
        for s in measure.steps():
            ...  # one training step
            measure.losses.append(loss.item())
    return measure.result(params, named, chunks, stages_per_rank=v, microbatches=m)

The pipeline's loop is its own (pp.py); DDP, FSDP and tensor parallel run one, the plain training step, which
their wrapping of the model leaves as it was: train_whole_model, which names at each of its lines what each of
them communicates there.

- barriers: every step starts when every rank is there, so a step's time is the slowest rank's;
- timing: each step from that barrier to the end of its work (the device synchronized), the median of the steps
  between the first (it also sets up) and the last (instrumented);
- the last step's collectives, logged with their sizes and phases, and profiled into a trace, from which
  their times and their overlap with backward are read (collectives.py);
- PyTorch's Flight Recorder, dumped when a step raises or torchrun stops the rank (flight_recorder.py);
- an injected failure on --fail-rank at step 1 (--fail-mode raise or hang), to see what a job does then;
- for a pipeline, each rank's forward and backward chunks, timed (PipelineTimeline).

And what a training run ends with: this rank's record (what it measured, what it holds, how far it is from the
reference), every rank's records gathered into the run's (Instruments.result), and rank 0 writing the demo's
measurements.json (measurements.py), which the lab reads back and checks.

What a rank holds in memory: the local part of a (possibly sharded) tensor, the bytes of the storages behind
its tensors, and a digest of its parameters that tells replicas apart.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import statistics
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from workshop.i18n import _, set_language
from workshop.labs.distributed import (
    collectives,
    flight_recorder,
    launch,
    measurements,
    process_group,
    training,
)
from workshop.minigpt.grammar import MAX_SENTENCE_LEN
from workshop.minigpt.model import lm_loss


def inject_failure(args, rank: process_group.Rank, step: int) -> None:
    """--fail-rank R: rank R raises at step 1, or hangs there (--fail-mode hang) until torchrun stops it."""
    if args.fail_rank != rank.rank or step != 1:
        return
    if args.fail_mode == "hang":
        print(
            _("rank {rank}: injected hang at step {step} (--fail-rank {rank})").format(
                rank=rank.rank, step=step
            ),
            flush=True,
        )
        time.sleep(3600)
    raise RuntimeError(
        _("injected failure on rank {rank} at step {step} (--fail-rank {rank})").format(
            rank=rank.rank, step=step
        )
    )


class Instruments(contextlib.ExitStack):
    """The measurements, barriers, trace, Flight Recorder and fault injection of one training run (`run`: its
    name, e.g. "ddp", "gpipe") of args.steps steps with optimizer `opt`; a pipeline's `stages` timed chunk by
    chunk (PipelineTimeline). Its `with` block is an ExitStack's: what it enters ends with the block, last in,
    first out."""

    def __init__(
        self, args, rank: process_group.Rank, run: str, opt: torch.optim.Optimizer, stages=()
    ):
        super().__init__()
        self.args, self.rank, self.opt = args, rank, opt
        self.timeline = PipelineTimeline(rank.device, stages) if stages else None
        self.trace = f"trace_{run}_rank{rank.rank}.json.gz"
        self.log = collectives.CollectiveLog()
        # each step's loss on this rank (None where the rank computes none: a pipeline's first stage)
        self.losses: list[float | None] = []
        self.times: list[float] = []

    def steps(self):
        """Step numbers 0 .. args.steps-1, each begun after a barrier and timed; the last one logged and profiled.
        From here to the `with` block's end the CUDA peak memory is this run's, and a step that raises dumps the
        Flight Recorder, after its trace and log have stopped."""
        if self.rank.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.rank.device)
        self.enter_context(
            flight_recorder.dump_on_failure(self.args.out, self.rank.rank, self.rank.backend)
        )
        # closed before the Flight Recorder's dump: last in, first out
        return self.enter_context(contextlib.closing(self._steps()))

    def _steps(self):
        last = self.args.steps - 1
        for s in range(self.args.steps):
            inject_failure(self.args, self.rank, s)
            dist.barrier()
            with self._instrumented() if s == last else contextlib.nullcontext():
                start = time.perf_counter()
                if self.timeline:
                    self.timeline.begin_step()
                yield s
                training.sync(self.rank.device)
                self.times.append(time.perf_counter() - start)

    @contextlib.contextmanager
    def _instrumented(self):
        # the optimizer's step hooks (the log's phase "optimizer"), removed as the block ends
        before, after = self.log.watch(self.opt)
        with (
            before,
            after,
            collectives.profiled(self.args.out / self.trace, self.rank.device),
            self.log,
        ):
            yield

    def record(
        self, params: list[torch.Tensor], named: dict[str, torch.Tensor], chunks: int
    ) -> measurements.RankRecord:
        """This rank's record of the run: what it measured, the bytes it holds (`params`: its parameters as it
        keeps them, sharded or not) and its distance from the one-process reference of the same steps of `chunks`
        chunks (`named`: name -> the whole parameter, as the reference has it): its parameters' largest error
        against the reference's, and their digest. Every rank calls it at the same point, after its training."""
        path, device, timeline = self.args.out / self.trace, self.rank.device, self.timeline
        reference = training.shared_reference(self.args.steps, chunks, device)
        backward_ops, issued_in_backward = collectives.backward_overlap(path)
        errors = {n: (named[n] - reference["params"][n]).abs().max().item() for n in named}
        worst = max(errors, key=errors.get)
        return dict(
            rank=self.rank.rank,
            losses=self.losses,
            step_time_s=statistics.median(measurements.timed_steps(self.times)),
            collectives=self.log.summary(),
            held=held(params, self.opt),
            params_digest=digest(named),
            collective_seconds=collectives.collective_seconds(path),
            trace=self.trace,
            backward_ops=backward_ops,
            issued_in_backward=issued_in_backward,
            cuda_peak_bytes=torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0,
            reference_losses=reference["losses"],
            reference_compute_s=reference["compute_s"],
            reference_compute_cpu_s=reference["compute_cpu_s"],
            max_param_error=errors[worst],
            worst_param=worst,
            params_compared=len(named),
            # a pipeline's: its chunks, the cost of one timestamp, the CPU seconds inside its chunks
            intervals=timeline.steps if timeline else [],
            timer_resolution_s=timeline.resolution() if timeline else 0.0,
            busy_cpu_s=timeline.cpu_s if timeline else [],
        )

    def result(
        self,
        params: list[torch.Tensor],
        named: dict[str, torch.Tensor],
        chunks: int,
        **pipeline,
    ) -> measurements.Run:
        """The run's result, on every rank: every rank's record (`record`'s arguments), gathered in rank order, and
        the losses the run reports, one per step: the ranks' mean (each rank's chunk of the batch; tensor
        parallel: all the same), or a pipeline's (`pipeline`: its stages_per_rank and microbatches) its last
        stage's, the only one that computes them."""
        records = [None] * dist.get_world_size()
        dist.all_gather_object(records, self.record(params, named, chunks))
        losses = (
            records[-1]["losses"]
            if pipeline
            else [
                sum(step) / len(step) for step in zip(*(r["losses"] for r in records), strict=True)
            ]
        )
        ref = records[0]["reference_losses"]
        return dict(
            chunks=chunks,
            losses=losses,
            reference_losses=ref,
            max_loss_error=max(abs(a - b) / abs(b) for a, b in zip(losses, ref, strict=True)),
            max_param_error=max(r["max_param_error"] for r in records),
            per_rank=records,
            **{"stages_per_rank": 0, "microbatches": 0, **pipeline},
        )


class PipelineTimeline:
    """What each pipeline rank did when: its forward and backward chunks, timed.

    A pipeline schedule runs a stage's work through `stage.forward_one_chunk(i, ...)` and
    `stage.backward_one_chunk(i, ...)`, one call per micro-batch i. PipelineTimeline.watch wraps those two methods
    of a stage so each call is recorded as (kind, stage, micro-batch, start, end), in seconds since this rank's step
    began. Steps begin right after a barrier, so the ranks' clocks line up to well under a millisecond.
    On a GPU every timestamp synchronizes first (the work, not its launch, is timed); what one timestamp costs
    is the timer's resolution, measured here and used by the lab as the margin of its idle-time check.
    Each step also sums the CPU seconds its chunks took (the process's, every thread's): the work itself, which a
    loaded machine does not stretch as it stretches wall time.
    """

    def __init__(self, device: torch.device, stages):
        self.device = device
        self.steps: list[list[measurements.Interval]] = []
        self.cpu_s: list[float] = []  # per step: CPU seconds inside its chunks
        self.t0 = 0.0
        for stage in stages:
            self.watch(stage)

    def begin_step(self) -> None:
        self.steps.append([])
        self.cpu_s.append(0.0)
        self.t0 = time.perf_counter()

    def _now(self) -> float:
        training.sync(self.device)  # on a GPU: time its work, not the launch
        return time.perf_counter() - self.t0

    def resolution(self, samples: int = 101) -> float:
        """Seconds one timestamp takes (median of back-to-back pairs): the smallest interval it can resolve."""
        stamps = [self._now() for _ in range(samples)]
        return statistics.median(b - a for a, b in zip(stamps, stamps[1:], strict=False))

    def watch(self, stage) -> None:
        for kind, method in (("F", "forward_one_chunk"), ("B", "backward_one_chunk")):
            original = getattr(stage, method)

            def timed(chunk, *args, _original=original, _kind=kind, _stage=stage.stage_index, **kw):
                start, cpu = self._now(), time.process_time()
                out = _original(chunk, *args, **kw)
                self.steps[-1].append((_kind, _stage, chunk, start, self._now()))
                self.cpu_s[-1] += time.process_time() - cpu
                return out

            # the schedule calls stage.<method>: the instance attribute wins
            setattr(stage, method, timed)


def local(t: torch.Tensor) -> torch.Tensor:
    """The part of a (possibly sharded) tensor that lives on this rank."""
    return t.to_local() if hasattr(t, "to_local") else t


def full(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor (a collective for a DTensor: every rank must call it)."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def storage_bytes(tensors) -> int:
    """Bytes of the distinct storages behind these tensors (a DTensor's: its local shard's), views counted once:
    the memory they occupy on this rank, padding included."""
    storages = {
        storage.data_ptr(): storage.nbytes()
        for t in tensors
        if t is not None
        for storage in (local(t).untyped_storage(),)
    }
    return sum(storages.values())


def held(params: list[torch.Tensor], opt: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes this rank holds for parameters, gradients and optimizer state (SGD: momentum buffers)."""
    state = [v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    return {
        "params": storage_bytes(params),
        "grads": storage_bytes(p.grad for p in params),
        "optimizer": storage_bytes(state),
    }


def digest(params: dict[str, torch.Tensor]) -> str:
    """A hash of the tensors' names and bytes: two ranks holding the same replica have the same digest."""
    h = hashlib.sha256()
    for name in sorted(params):
        h.update(name.encode())
        h.update(
            params[name].detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
        )
    return h.hexdigest()[:16]


def train_whole_model(
    args,
    rank: process_group.Rank,
    run: str,
    model: torch.nn.Module,
    chunks: int,
    forward: torch.nn.Module | None = None,
    loss_context=contextlib.nullcontext,
) -> measurements.Run:
    """DDP's, FSDP's and tensor parallel's training run, measured: the plain training step, which their wrapping of
    `model` leaves as it was (it changes what forward and backward communicate, not the loop), args.steps steps
    of `chunks` chunks each, this rank training on its own (DDP, FSDP: chunks=N; tensor parallel: chunks=1, the
    whole batch on every rank). `forward`: the module that wraps `model` (DDP's), where it is another;
    `loss_context`: entered around forward and backward (tensor parallel's loss_parallel). Every rank holds (a
    part of) the whole model and computes a loss; the run's loss is the ranks' mean."""
    opt = training.optimizer(model.parameters())
    x, y = training.batches(args.steps, chunks, rank.device)  # (steps, chunks, ROWS, T)
    mine = rank.rank % chunks  # the chunk of each step's batch this rank trains on
    with Instruments(args, rank, run, opt) as measure:
        for s in measure.steps():
            opt.zero_grad()
            with loss_context():
                # forward: DDP first broadcasts rank 0's buffers (the causal masks) to every replica. FSDP
                # all-gathers each unit's parameters before it runs and frees the gathered copy after it (the
                # root's stays: backward needs it first). Tensor parallel all-reduces each block's two
                # row-parallel outputs, and loss_parallel a max and two sums over the vocabulary (one number per
                # token each)
                loss = lm_loss((forward or model)(x[s, mine]), y[s, mine])
                # backward: DDP all-reduces (averages) each bucket as its last gradient arrives. FSDP all-gathers
                # each block's parameters again, then reduce-scatters its gradients: each rank receives the
                # average of its own shard. Tensor parallel all-reduces the column-parallel layers' input
                # gradients (q, k, v and fc in every block, and the LM head's)
                loss.backward()
            # every rank steps what it holds: DDP's replicas the same step (their gradients are now the average of
            # all ranks'); FSDP's ranks their own shards (parameters, gradients and momentum 1/N each); tensor
            # parallel's their own slices, and their copies of the replicated parameters
            opt.step()
            measure.losses.append(full(loss).item())
    # full() all-gathers a sharded parameter: every rank must call it
    named = {n: full(p.detach()) for n, p in model.named_parameters()}
    return measure.result(list(model.parameters()), named, chunks)


def write(
    args, rank: process_group.Rank, strategy: str, runs: dict[str, measurements.Run], **extra
) -> None:
    """measurements.json (rank 0 writes it: run_demos)."""
    from torch.distributed import constants

    defaults = {"gloo": constants.default_pg_timeout, "nccl": constants.default_pg_nccl_timeout}
    measurements.write(
        args.out,
        dict(
            strategy=strategy,
            world_size=rank.world,
            device=rank.device.type,
            backend=rank.backend,
            steps=args.steps,
            rows_per_chunk=training.ROWS,
            seq_len=MAX_SENTENCE_LEN - 1,  # every sentence padded to this (data.to_tensors)
            lr=training.LR,
            tolerance=training.TOLERANCE[rank.device.type],
            torch=torch.__version__,
            timeout_s=args.pg_timeout,
            default_timeouts_s={k: v.total_seconds() if v else None for k, v in defaults.items()},
            runs=runs,
            **{"lm_head_local_shape": [], "skipped_schedules": {}, **extra},
        ),
    )


@record  # a rank's traceback goes into torchrun's failure summary
def run_demos(description: str, demos: dict, options=(), together: bool = False) -> None:
    """A demo module's process under torchrun (its `__main__`): parse the demos' options and its own
    (`options`, (flags, keywords) pairs), join the process group, run each demo (strategy -> its `run(args,
    rank)`, returning its runs and the rest of its measurements; one that cannot split the model over these
    ranks stops the job, saying why: launch.strategy_problem), and rank 0 writes each one's measurements.json
    in args.out; `together` (together.py): the demos that --strategies names, one after another in one launch, each
    in args.out/<strategy>. Then leave."""
    # a rank speaks the lab's language (WORKSHOP_LANG in its environment: launch.environment); the options'
    # texts are marked N_() until now
    set_language(None)
    parser = argparse.ArgumentParser(description=_(description))
    for flags, keywords in (*process_group.OPTIONS, *options):
        parser.add_argument(*flags, **{k: _(v) if k == "help" else v for k, v in keywords.items()})
    args = parser.parse_args()
    rank = process_group.join(args)
    for strategy in args.strategies if together else demos:
        if why := launch.strategy_problem(strategy, rank.world):
            raise SystemExit(why)
        out = args.out / strategy if together else args.out
        own = argparse.Namespace(**{**vars(args), "out": out})  # its traces and dumps go there too
        runs, extra = demos[strategy](own, rank)
        if rank.rank == 0:
            write(own, rank, strategy, runs, **extra)
    process_group.leave()
