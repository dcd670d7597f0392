"""Build and run the torchrun command of a demo, after checking that N can work at all.

torchrun (`python -m torch.distributed.run`) starts N processes per node, runs the rendezvous (which rank is
who, where the store is) and sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT for each; if any process
fails it stops the others and exits non-zero. One machine: `--standalone` (a private rendezvous on a free
port). Several: the same command on every machine with --nnodes, --rdzv-backend c10d, --rdzv-endpoint host:port
and --rdzv-id; the README shows it. In a Slurm job (slurm/distributed.sbatch) the lab starts one torchrun agent
per task of the job with srun, and the agents meet at the endpoint the script sets (`Agents`).

    python -m workshop.labs.distributed.launch ddp --n 2 --device cpu --out /tmp/ddp [-- --fail-rank 1]
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from workshop.foundations import proctree
from workshop.i18n import _, ngettext, set_language

STRATEGIES = ("ddp", "fsdp", "tp", "pp")
STOP_GRACE_S = 3.0  # torchrun's and the ranks' time to exit on SIGTERM before they are killed


# The CPU's capacity for ranks (gloo, one thread each): past 4 ranks per core a step's collectives mostly wait
# for the scheduler; and one rank's peak resident memory, measured at 420 MB (DDP and FSDP, 2 ranks, torch 2.13
# on the CPU), with a margin for torchrun's agent and the allocator.
RANKS_PER_CORE = 4
RANK_BYTES = 600e6


def capacity_problem(n_per_node: int, device: str) -> str | None:
    """Why this machine cannot hold n_per_node ranks (None if it can): one GPU each on CUDA; on the CPU, what
    its cores and memory hold. Checked before anything starts, for every demo alike."""
    if device == "cuda":
        import torch

        visible = torch.cuda.device_count()
        return (
            ngettext(
                "--n {n} asks for {n} processes, one GPU each, but {visible} GPU is visible; use --n <= "
                "the GPU count, or --device cpu to run them as CPU processes (gloo)",
                "--n {n} asks for {n} processes, one GPU each, but {visible} GPUs are visible; use --n <= "
                "the GPU count, or --device cpu to run them as CPU processes (gloo)",
                visible,
            ).format(n=n_per_node, visible=visible)
            if n_per_node > visible
            else None
        )
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = available_memory()
    limit = RANKS_PER_CORE * cores
    if memory is not None:
        limit = max(1, min(limit, int(memory // RANK_BYTES)))
    if n_per_node <= limit:
        return None
    held = ngettext(
        "{per_core} per core on {cores} core", "{per_core} per core on {cores} cores", cores
    ).format(per_core=RANKS_PER_CORE, cores=cores)
    if memory is not None:
        held += _(", {free:.1f} GB of free memory at {per_rank:.1f} GB per rank").format(
            free=memory / 1e9, per_rank=RANK_BYTES / 1e9
        )
    return _(
        "--n {n} asks for {n} CPU processes, but this machine holds {limit} ({held}); use --n {limit} or less"
    ).format(n=n_per_node, limit=limit, held=held)


def available_memory() -> float | None:
    """Bytes of memory a new process may still use: Linux's MemAvailable, within the container's cgroup limit."""
    try:
        meminfo = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    available = next(
        (
            int(line.split()[1]) * 1024
            for line in meminfo.splitlines()
            if line.startswith("MemAvailable:")
        ),
        None,
    )
    cgroup = Path("/sys/fs/cgroup")
    try:
        limit = (cgroup / "memory.max").read_text().strip()
        if available is not None and limit != "max":
            available = min(available, int(limit) - int((cgroup / "memory.current").read_text()))
    except (OSError, ValueError):
        pass
    return available


def strategy_problem(strategy: str, world: int) -> str | None:
    """Why `world` ranks cannot run this strategy (one of STRATEGIES: the CLI's choices, the lab's demos) on the
    MiniGPT (None if they can). Checked before starting."""
    from workshop.labs.distributed import (
        plans,
    )  # the model's config imports torch: not at the CLI's start

    usable = {"tp": plans.tp_usable, "pp": plans.pp_usable}.get(strategy)
    return usable(world) if usable else None


def command(
    strategy: str,
    n: int,
    device: str,
    out: Path,
    nnodes: int = 1,
    node_rank: int | None = None,
    rdzv_endpoint: str | None = None,
    rdzv_id: str = "workshop",
    demo_args=(),
) -> list[str]:
    # several agents (machines) meet at the endpoint, where the c10d backend hosts the store; one alone:
    # --standalone, a private rendezvous
    rendezvous = (
        ["--nnodes", str(nnodes), "--rdzv-backend", "c10d", "--rdzv-endpoint", rdzv_endpoint]
        + ["--rdzv-id", rdzv_id]
        + (["--node-rank", str(node_rank)] if node_rank is not None else [])
        if rdzv_endpoint
        else ["--standalone"]
    )
    return [
        *(sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(n), *rendezvous),
        *("-m", f"workshop.labs.distributed.{strategy}", "--out", str(out), "--device", device),
        *demo_args,
    ]


@dataclass(frozen=True)
class Agents:
    """Who starts the demos' processes: one torchrun on this machine with a private rendezvous (the default), or
    one torchrun agent per task of the Slurm job this runs in, started together by srun and meeting over the c10d
    rendezvous at `endpoint` (host:port of the job's first node). --n is always the world size: each agent
    starts n / count processes."""

    count: int = 1
    endpoint: str | None = None  # None: --standalone on this machine
    job_id: str = "workshop"

    def problem(self, world: int) -> str | None:
        if world % self.count:
            return _(
                "--n {world} processes cannot be split evenly over the job's {tasks} tasks "
                "(one torchrun agent each); use a multiple of {tasks}"
            ).format(world=world, tasks=self.count)
        return None

    def command(self, strategy: str, world: int, device: str, out: Path, demo_args=()) -> list[str]:
        # No endpoint: one torchrun, --standalone. Else srun starts one agent per task; --kill-on-bad-exit: an
        # agent that fails takes the others down at once instead of leaving them waiting.
        srun = (
            []
            if self.endpoint is None
            else ["srun", "--ntasks", str(self.count), "--kill-on-bad-exit=1"]
        )
        return srun + command(
            strategy,
            world // self.count,
            device,
            out,
            nnodes=self.count,
            rdzv_endpoint=self.endpoint,
            # one rendezvous id per demo: an agent late for one demo never joins the next one's
            rdzv_id=f"{self.job_id}-{strategy}",
            demo_args=demo_args,
        )


def agents(environ: Mapping[str, str] = os.environ) -> Agents:
    """The Agents this process's environment asks for: WORKSHOP_RDZV_ENDPOINT (set by slurm/distributed.sbatch)
    inside a Slurm job means one agent per task of the job; otherwise one standalone torchrun."""
    endpoint = environ.get("WORKSHOP_RDZV_ENDPOINT")
    if not endpoint:
        return Agents()
    if "SLURM_NTASKS" not in environ:
        raise ValueError(
            _(
                "WORKSHOP_RDZV_ENDPOINT={endpoint} asks for one torchrun agent per Slurm task, but this is "
                "not a Slurm job (no SLURM_NTASKS): submit slurm/distributed.sbatch with sbatch, or unset it"
            ).format(endpoint=endpoint)
        )
    return Agents(int(environ["SLURM_NTASKS"]), endpoint, environ.get("SLURM_JOB_ID", "workshop"))


def environment() -> dict[str, str]:
    # The caller's environment, passed through (on the GPU machine it carries NCCL settings that must stay; the
    # runner's WORKSHOP_LANG, the language the ranks speak), plus one CPU thread per rank: N ranks share the cores.
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def run(cmd: list[str], log: Path, timeout_s: float = 300.0) -> tuple[int, float]:
    """Run torchrun with its output in `log`; (exit code, seconds).

    torchrun runs in a session of its own and starts each rank in another (torchelastic's choice), so a timeout,
    a signal or any error here stops the whole tree (proctree.stop_tree: torchrun and every rank), not a group."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "w") as f:
        f.write("$ " + shlex.join(cmd) + "\n")
        f.flush()
        proc = subprocess.Popen(
            cmd, stdout=f, stderr=subprocess.STDOUT, env=environment(), start_new_session=True
        )
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            # buffered: written after what the stopped ranks print, at the log's end
            f.write(_("\nkilled after {seconds:.0f} s\n").format(seconds=timeout_s))
        finally:  # the timeout, a signal (interrupt.Stopped) or an error: no rank outlives the lab
            if proc.poll() is None:
                proctree.stop_tree(proc.pid, STOP_GRACE_S)
                rc = proc.wait()
    return rc, time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    set_language(None)  # WORKSHOP_LANG, else the locale
    p = argparse.ArgumentParser(
        prog="python -m workshop.labs.distributed.launch",
        description=_(
            "Build and run the torchrun command of a demo, after checking that N can work at all."
        ),
    )
    for flags, keywords in (
        (("strategy",), {"choices": STRATEGIES}),
        (("--n",), {"type": int, "default": 2, "help": _("processes per node")}),
        (("--device",), {"choices": ("cpu", "cuda"), "default": "cpu"}),
        (("--out",), {"type": Path, "required": True}),
        (("--nnodes",), {"type": int, "default": 1}),
        (("--node-rank",), {"type": int, "default": None}),
        (
            ("--rdzv-endpoint",),
            {"default": None, "help": _("host:port of the rendezvous (several nodes)")},
        ),
        (("--rdzv-id",), {"default": "workshop"}),
    ):
        p.add_argument(*flags, **keywords)
    argv = sys.argv[1:] if argv is None else argv
    # after --: the demo's own options, e.g. --fail-rank 1
    cut = argv.index("--") if "--" in argv else len(argv)
    a, demo_args = p.parse_args(argv[:cut]), argv[cut + 1 :]
    if a.nnodes > 1 and not a.rdzv_endpoint:
        p.error(_("--nnodes > 1 needs --rdzv-endpoint host:port (the same on every node)"))
    if why := capacity_problem(a.n, a.device) or strategy_problem(a.strategy, a.n * a.nnodes):
        p.error(why)
    cmd = command(
        a.strategy,
        a.n,
        a.device,
        a.out,
        a.nnodes,
        a.node_rank,
        a.rdzv_endpoint,
        a.rdzv_id,
        demo_args,
    )
    print("$ " + shlex.join(cmd), flush=True)
    return subprocess.call(cmd, env=environment())


if __name__ == "__main__":
    sys.exit(main())
