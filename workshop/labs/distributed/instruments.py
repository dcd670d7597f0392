"""What a demo's training loop runs inside, so that the loop itself shows only the training:

    with Instruments(args, rank, "ddp", opt) as measure:
        for s in measure.steps():
            ...  # one training step
            measure.loss(loss.item())
    record = measure.record()

- barriers: every step starts when every rank is there, so a step's time is the slowest rank's;
- timing: each step from that barrier to the end of its work (the device synchronized), the median of the steps
  between the first (it also sets up) and the last (instrumented);
- the last step's collectives, logged with their sizes and phases (collective_log.py), and profiled into a trace
  (traces.py), from which their times and their overlap with backward are read;
- PyTorch's Flight Recorder, dumped when a step raises or torchrun stops the rank (flight_recorder.py);
- an injected failure on --fail-rank at step 1 (--fail-mode raise or hang), to see what a job does then;
- for a pipeline, each rank's forward and backward chunks, timed (PipelineTimeline).
"""

from __future__ import annotations

import contextlib
import statistics
import time

import torch
import torch.distributed as dist

from workshop.i18n import _
from workshop.labs.distributed import flight_recorder, traces
from workshop.labs.distributed.collective_log import CollectiveLog
from workshop.labs.distributed.measurements import Interval, RankRecord, timed_steps
from workshop.labs.distributed.process_group import Rank
from workshop.labs.distributed.training import sync


def inject_failure(args, rank: Rank, step: int) -> None:
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
    name, e.g. "ddp", "gpipe") of args.steps steps with optimizer `opt`. Its `with` block is an ExitStack's:
    what it enters ends with the block, last in, first out."""

    def __init__(self, args, rank: Rank, run: str, opt: torch.optim.Optimizer):
        super().__init__()
        self.args, self.rank, self.opt = args, rank, opt
        self.trace = f"trace_{run}_rank{rank.rank}.json.gz"
        self.log = CollectiveLog()
        self.losses: list[float | None] = []
        self.times: list[float] = []

    def __enter__(self) -> Instruments:
        if self.rank.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.rank.device)
        self.enter_context(
            flight_recorder.dump_on_failure(self.args.out, self.rank.rank, self.rank.backend)
        )
        return self

    def steps(self):
        """Step numbers 0 .. args.steps-1, each begun after a barrier and timed; the last one logged and profiled.
        A step that raises stops its trace and log when the `with` block ends."""
        steps = self._steps()
        # runs before the Flight Recorder's dump: last in, first out
        self.callback(steps.close)
        return steps

    def _steps(self):
        last = self.args.steps - 1
        for s in range(self.args.steps):
            inject_failure(self.args, self.rank, s)
            dist.barrier()
            with self._instrumented() if s == last else contextlib.nullcontext():
                start = time.perf_counter()
                yield s
                sync(self.rank.device)
                self.times.append(time.perf_counter() - start)

    @contextlib.contextmanager
    def _instrumented(self):
        handles = self.log.watch(self.opt)
        try:
            with traces.profiled(self.args.out / self.trace, self.rank.device), self.log:
                yield
        finally:
            for handle in handles:
                handle.remove()

    def loss(self, value: float | None) -> None:
        """This step's loss on this rank (None where the rank computes none: a pipeline's first stage)."""
        self.losses.append(value)

    def record(self) -> RankRecord:
        """This rank's record of the run, to be completed by run_ending.py."""
        path, device = self.args.out / self.trace, self.rank.device
        backward_ops, issued_in_backward = traces.backward_overlap(path)
        return RankRecord(
            rank=self.rank.rank,
            losses=self.losses,
            step_time_s=statistics.median(timed_steps(self.times)),
            collectives=self.log.summary(),
            held={},
            params_digest="",
            collective_seconds=traces.collective_seconds(path),
            backward_ops=backward_ops,
            issued_in_backward=issued_in_backward,
            trace=self.trace,
            cuda_peak_bytes=torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0,
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

    def __init__(self, device: torch.device):
        self.device = device
        self.steps: list[list[Interval]] = []
        self.cpu_s: list[float] = []  # per step: CPU seconds inside its chunks
        self.t0 = 0.0

    def begin_step(self) -> None:
        self.steps.append([])
        self.cpu_s.append(0.0)
        self.t0 = time.perf_counter()

    def _now(self) -> float:
        sync(self.device)  # on a GPU: time its work, not the launch
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
