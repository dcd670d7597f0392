"""Starting and stopping the worker, the process that runs a learner's code (workshop/learner/worker.py).

Natively (NativeWorker), the lab's process starts it:
- in a fresh temporary folder as its cwd, HOME and TMPDIR, with an environment made from nothing (no path of
  the run or the workspace, no secret of the instructor's: only what Python, torch and Triton need); with a uid
  of its own, that folder lies where every uid can enter (scratch_root): the lab's own TMPDIR is a 0700 folder of
  the lab's user (harness/runner.py), where the worker could write nothing (on a GPU host as root,
  Triton's cache there failed every exercise of a correct workspace);
- with its argv free of paths (its stdin and stdout are the channel, its stderr goes to its log);
- as another user where the platform allows (when the lab's process runs as root: a uid of its own, which can
  neither write the run folder nor read this process's /proc entries);
- in a session of its own, with limits it sets on itself (`--rlimits`, setrlimit) before it reads a request, so
  before any of the learner's code runs: CPU seconds, memory written (RLIMIT_DATA), processes, file size, no core
  dumps. Not prlimit from here: a root without CAP_SYS_RESOURCE (the GPU hosts' containers) may not limit a
  process of another uid;
- with its stdout and stderr in a log capped at LOG_CAP bytes, which nothing parses.
Stopping it stops its whole process tree (proctree), and with a uid of its own every process of that uid.
With Docker, ContainerWorker (worker_container.py) runs the same worker in a container of its own instead.

`grade` without Docker runs it in a namespace sandbox where bubblewrap works (`hidden` given: namespace_argv): no
network, a pid namespace of its own (when the worker ends, every process it started ends with it), a private /tmp
holding only its scratch folder, the whole filesystem read-only (the venv too: no .pth planted for later labs),
the paths `grade` names hidden behind empty folders (the other hand-ins, the results, the instructor's package),
and the learner edition's code as its `root` (the references are stubs there).
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from workshop.foundations import lab_log, proctree
from workshop.foundations.device import use_triton_interpreter
from workshop.i18n import _

# As root, each worker runs as a uid no other process has (no account needed): its processes are then exactly
# that uid's, limited and stopped as one, and it can read or write only what is open to everyone.
UID_BASE, UID_SPAN = 200_000, 100_000
LOG_CAP = 2**20  # bytes of the worker's output kept in its log
TAIL_LINES = 40  # the last lines, kept for the message of a worker that died
GRACE_S = 2.0


# What one worker may use: its CPU seconds over its whole life (its exercises' own limits are shorter); its
# processes and threads, of its user (torch starts a thread per core); the bytes of any one file it writes; the
# bytes of memory it writes, in a container its cgroup's limit (no swap), natively RLIMIT_DATA, which counts the
# memory it writes and not what it only reserves: a CUDA build of torch reserves tens of GiB of address space, so a
# limit on the address space (RLIMIT_AS) left no room for the profiler's threads' stacks, and on the H200 host
# every worker watched for autograd died of SIGSEGV ("libgomp: Thread creation failed"); its CPUs (containers
# only).
CPU_S = 900
PROCESSES = 512
FILE_SIZE = 256 * 2**20
MEMORY = 4 * 2**30
CPUS = 2.0

# The native worker's resource limits by name (resource.RLIMIT_*): (soft, hard), which it sets on itself
RLIMITS = {
    # SIGXCPU at the soft limit, SIGKILL at the hard one
    "RLIMIT_CPU": (CPU_S, CPU_S + 5),
    "RLIMIT_DATA": (MEMORY,) * 2,
    "RLIMIT_FSIZE": (FILE_SIZE,) * 2,
    "RLIMIT_CORE": (0, 0),
    "RLIMIT_NPROC": (PROCESSES,) * 2,
}


def code_root() -> Path:
    """The folder that holds the `workshop` package the worker imports."""
    return Path(__file__).resolve().parents[2]


# OpenMP threads of the worker's torch (its intra-op pool), one per core by default: on the H200 host, which shows
# more cores than the processes limit allows threads, libgomp could not start them ("Thread creation failed") and
# the worker died of SIGSEGV in the learner's first multi-threaded op.
WORKER_THREADS = 16


def scratch_environment(scratch: str) -> dict[str, str]:
    """What the worker's environment says natively and in its container alike: its home, its temporary and cache
    folders all in its scratch folder, no .pyc written, unbuffered output, pictures without a display."""
    return {
        "HOME": scratch,
        "TMPDIR": scratch,
        "USER": "workshop-worker",
        # writes no .pyc beside the code (a pycache prefix of its own would recompile torch: 7 s a start)
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "MPLBACKEND": "Agg",
        "TRITON_CACHE_DIR": f"{scratch}/triton",
        "TORCHINDUCTOR_CACHE_DIR": f"{scratch}/inductor",
    }


def worker_environment(scratch: Path, device: str, root: Path) -> dict[str, str]:
    """The worker's whole environment: nothing inherited but the device's settings."""
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(root),
        "PYTHONNOUSERSITE": "1",
        **scratch_environment(str(scratch)),
        # the device's settings: all it inherits
        **{
            n: os.environ[n] for n in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS") if n in os.environ
        },
    }
    env.setdefault("OMP_NUM_THREADS", str(min(WORKER_THREADS, os.cpu_count() or 1)))
    use_triton_interpreter(env, device)
    return env


class OutputLog(threading.Thread):
    """A thread that copies a stream (bytes) into a file, up to `cap` bytes (LOG_CAP unless given), keeps its last
    lines, and hands each line, decoded, to on_line where given. A worker's output, and a lab's (harness.runner:
    its log.txt, uncapped: math.inf). A full disk stops only the copy into the file. Started when made; join it
    with a timeout (GRACE_S): a stray process may still hold the stream."""

    def __init__(self, stream, path: Path | None, cap: float | None = None, on_line=None):
        super().__init__(daemon=True)
        self.stream, self.path, self.cap, self.on_line = stream, path, cap or LOG_CAP, on_line
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.dropped = 0
        self.start()

    def run(self) -> None:
        kept, log = 0, None
        if self.path:
            # a full disk: the lines still reach tail and on_line
            with contextlib.suppress(OSError):
                # a check run before its run folder exists (a re-grade's out/, say) would lose the worker's log
                self.path.parent.mkdir(parents=True, exist_ok=True)
                log = open(self.path, "ab")  # noqa: SIM115 - closed below
        try:
            for line in self.stream:
                self.tail.append(line[:400].decode("utf-8", "replace").rstrip("\r\n"))
                if self.on_line:
                    self.on_line(line.decode("utf-8", "replace").rstrip("\r\n"))
                if log and kept + len(line) <= self.cap:
                    kept += len(line)
                    # flushed: the post-mortem reads a lab's log.txt even while a stray process holds the stream
                    with contextlib.suppress(OSError):
                        log.write(line)
                        log.flush()
                else:
                    self.dropped += len(line)
            if log and self.dropped:
                log.write(f"[... {self.dropped} more bytes of output, not kept]\n".encode())
        finally:
            if log:
                with contextlib.suppress(OSError):
                    log.close()


class Launched:
    """What a started worker's launcher tells of it: the end of its log, and how it ended. A worker natively and
    in a container alike talks over its stdin and stdout (the channel) and prints to its stderr (its log)."""

    proc: subprocess.Popen | None = None
    log: OutputLog

    def __init__(self, device: str, log_path: Path | None):
        self.device, self.log_path = device, log_path

    def launch(self, argv: list[str], **popen) -> tuple[int, int]:
        """Start `argv`; the channel's (read fd, write fd) on this side."""
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            **popen,
        )
        self.log = OutputLog(self.proc.stderr, self.log_path)
        return self.proc.stdout.fileno(), self.proc.stdin.fileno()

    def stop(self) -> None:
        """Close this side of the channel (a worker still reading ends), then end it and all it started."""
        if self.proc is None:
            return
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        self.end()
        self.log.join(GRACE_S)
        self.proc = None

    def tail(self) -> list[str]:
        """The last lines it printed (its log's end)."""
        self.log.join(GRACE_S)
        return list(self.log.tail)

    def ended(self, wait_s: float = 1.0) -> str | None:
        """How it ended ('killed by SIGSEGV'), or None while it runs (after waiting wait_s for it to end)."""
        if self.proc is None:
            return None
        try:
            code = self.proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            return None
        return lab_log.how_it_ended(self.returncode(code))

    def returncode(self, code: int) -> int:
        return code


class NativeWorker(Launched):
    """The worker as a process of this machine, or in a namespace sandbox (see the module's docstring)."""

    def __init__(
        self,
        device: str,
        log_path: Path | None,
        root=None,
        hidden: tuple[str, ...] | None = None,
    ):
        super().__init__(device, log_path)
        self.root = root or code_root()
        # None: a plain process; else the namespace sandbox, with these paths hidden (namespace_argv)
        self.hidden = hidden
        self.uid = free_uid() if os.geteuid() == 0 and others_can_run(self.root) else None

    def make_scratch(self, prefix: str) -> Path:
        """A fresh scratch folder, its own where the worker has a uid of its own (in a folder every uid can
        enter: scratch_root)."""
        where = None if self.uid is None else scratch_root()
        scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=where))
        if self.uid is not None:
            os.chown(scratch, self.uid, self.uid)
        return scratch

    def as_its_user(self) -> dict:
        """subprocess's keywords that start a process as the worker's user (this process's own: none)."""
        own = self.uid is None
        return {"user": self.uid, "group": self.uid, "extra_groups": None if own else []}

    def start(self) -> tuple[int, int]:
        """Start it; returns the channel's (read fd, write fd) on this side. WorkerFault where it cannot start
        (the workshop's failure, never the learner's)."""
        try:
            self.scratch = self.make_scratch("workshop-worker-")
        except OSError as e:
            raise WorkerFault(f"its scratch folder: {e}") from None
        argv = [sys.executable, "-m", "workshop.learner.worker", "--rlimits", json.dumps(RLIMITS)]
        if self.hidden is not None:
            argv = namespace_argv(self.scratch, self.root, self.device, self.hidden) + argv
        try:
            return self.launch(
                argv,
                cwd=self.scratch,
                env=worker_environment(self.scratch, self.device, self.root),
                **self.as_its_user(),
            )
        except OSError as e:  # no Python to start, a uid the system refuses
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise WorkerFault(f"{sys.executable}: {e}") from None

    def end(self) -> None:
        proctree.stop_tree(self.proc.pid, GRACE_S)
        # SIGKILL every process of its own uid: whatever its code left running, detached or not
        if self.uid is not None:
            owned = {
                pid
                for pid, (_ppid, uid, _zombie) in proctree.processes().items()
                if uid == self.uid
            }
            proctree.signal_each(owned, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(GRACE_S)
        shutil.rmtree(self.scratch, ignore_errors=True)


def namespace_argv(scratch: Path, root: Path, device: str, hidden: tuple[str, ...]) -> list[str]:
    """bubblewrap's command line around the worker: every namespace unshared (network, pids, IPC, users), the
    worker's end when its parent (the lab's process) ends, the filesystem read-only, a /proc of its own pid
    namespace, /dev (the GPU's device files too on CUDA), a private /tmp, each `hidden` folder an empty tmpfs, the
    code it imports (`root`, which may lie under /tmp) read-only, and the scratch folder the one place it writes."""
    devices = ("--dev-bind", "/dev", "/dev") if device == "cuda" else ("--dev", "/dev")
    return [
        *("bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/"),
        *("--proc", "/proc", *devices, "--tmpfs", "/tmp"),
        *(flag for folder in hidden for flag in ("--tmpfs", folder)),
        *("--ro-bind", str(root), str(root)),
        *("--bind", str(scratch), str(scratch), "--chdir", str(scratch), "--"),
    ]


def namespace_problem() -> str | None:
    """Why the namespace sandbox cannot run here (bubblewrap missing, or namespaces refused to the user the worker
    runs as), or None: a trial run of it, as the worker would be started."""
    if shutil.which("bwrap") is None:
        return _("bubblewrap (bwrap) is not installed")
    worker = NativeWorker("cpu", None, hidden=())
    scratch = worker.make_scratch("workshop-trial-")
    try:
        trial = subprocess.run(
            [*namespace_argv(scratch, worker.root, "cpu", ()), sys.executable, "-c", "pass"],
            capture_output=True,
            text=True,
            timeout=60,
            **worker.as_its_user(),
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return _("bwrap could not run: {error}").format(error=e)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if trial.returncode != 0:
        return _("bwrap could not make its namespaces: {error}").format(
            error=(trial.stderr.strip().splitlines() or ["?"])[-1]
        )
    return None


def others_can_run(root: Path) -> bool:
    """Whether another uid can run this Python with its packages and the workshop's code (pyenv's Python
    under /root, say, it cannot: then the worker keeps this process's uid). torch is looked up, not imported:
    the worker starts before the lab's process imports it, so that the two imports overlap."""
    torch = Path(importlib.util.find_spec("torch").origin)
    needed = [
        Path(os.path.realpath(p)) for p in (sys.executable, os.__file__, torch, root / "workshop")
    ]
    # readable by a user with no claim on it: its folders searchable by others, itself readable by others
    return all(searchable_by_others(p.parent) and p.stat().st_mode & stat.S_IROTH for p in needed)


class WorkerFault(Exception):
    """The workshop could not start or prepare the worker: its own failure, said as such (learner/failures.py),
    never as the learner's code failing to load."""


def searchable_by_others(folder: Path) -> bool:
    """Whether another uid can enter `folder`: it and every folder above it searchable by others."""
    folder = Path(os.path.realpath(folder))
    return all(f.stat().st_mode & stat.S_IXOTH for f in (folder, *folder.parents))


def scratch_root() -> Path:
    """Where a worker of its own uid gets its scratch folder: the first temporary folder every uid can enter. The
    lab's TMPDIR is not one (a 0700 folder of the lab's user); the system's /tmp usually is."""
    for folder in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        with contextlib.suppress(OSError):
            if searchable_by_others(Path(folder)):
                return Path(folder)
    raise WorkerFault(
        "no temporary folder that every user can enter (tried TMPDIR, /tmp, /var/tmp, /dev/shm), for the "
        "scratch folder of a worker of its own uid"
    )


def free_uid() -> int:
    """A uid no process has now, near UID_BASE + this process's pid (two labs at once get two)."""
    taken = {uid for _ppid, uid, _zombie in proctree.processes().values()}
    uid = UID_BASE + os.getpid() % UID_SPAN
    while uid in taken:
        uid += 1
    return uid
