"""Invoke tasks for the workshop: thin wrappers around `docker compose` and `python -m workshop` / pytest.

    invoke --list                  the tasks;  invoke --help lab  one task's options
    invoke lab --n 2 --dry-run     print the commands instead of running them (or: invoke --dry lab --n 2)
    invoke exercises init; invoke check autograd     a learner's workspace (./my-work), graded in the image
    invoke lab --lang es           in Spanish (summaries, REPORT.md, messages); default: the host's locale

Docker is the default path: the image (docker/Dockerfile) holds the exact pin set, compose.yaml the services.
`--native` runs the same commands with the Python that runs invoke (the README's native venv). All behaviour
lives in the package (`python -m workshop`) and in docker/session.sh; this file only picks and spells commands.
Its messages and its tasks' help are translated like the package's (workshop/i18n: their Spanish is in the core's
catalog): help in the language of the environment (WORKSHOP_LANG, the locale), a task's messages in its --lang's.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from invoke import Collection, Exit, task
from invoke.parser import ParserContext

# standard library only: importable without the workshop's packages
from workshop import i18n
from workshop.i18n import LANGUAGES, N_, _, ngettext

ROOT = Path(__file__).resolve().parent
SESSION = "docker/session.sh"  # the labs (REPORT.md), then the tests on that run: one script in and out of Docker
DEFAULT_ARCHIVE = "pytorch-internals-workshop-image.tar.gz"
DEFAULT_WORK = "my-work"  # the learner's workspace (workshop/learner/workspace.py: DEFAULT_DIR)
# compose's service that builds each edition's image
EDITIONS = {"instructor": "workshop-cpu", "learner": "learner-edition"}
INSTALL_DOCKER = "https://docs.docker.com/engine/install/"
INSTALL_TOOLKIT = (
    "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
)
LANG_HELP = N_(
    "es or en: the language of messages, summaries and reports (default: WORKSHOP_LANG, else the locale, "
    "LANG=es_ES.UTF-8 gives Spanish; compose passes both into the container)"
)
NATIVE_HELP = N_("run here, without Docker, with the Python that runs invoke")
CPU_HELP = N_("use the CPU even where there are GPUs")
WORK_HELP = N_("your workspace (default {work})")
i18n.set_language(
    None
)  # the help invoke shows: in the environment's language (a task's --lang comes later)


def _probe(*cmd: str) -> subprocess.CompletedProcess | None:
    """Run a read-only probe; None when the program is not installed."""
    if not shutil.which(cmd[0]):
        return None
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(
            cmd, 1, "", _("{command} did not answer within 60 s").format(command=" ".join(cmd))
        )


def _docker_problem() -> str | None:
    """Why Docker cannot be used here, with the fix; None when it can."""
    info = _probe("docker", "info", "--format", "{{.ServerVersion}}")
    if info is None:
        return _(
            "Docker is not installed. Install Docker Engine with its Compose plugin ({url}), "
            "or run without Docker: add --native (after the README's native setup)."
        ).format(url=INSTALL_DOCKER)
    if info.returncode != 0:
        error = (info.stderr.strip().splitlines() or [_("(no message)")])[-1]
        if "permission denied" in error.lower():
            return _(
                "You may not use the Docker daemon ({error}). Add yourself to the docker group: "
                "`sudo usermod -aG docker $USER`, then log in again."
            ).format(error=error)
        return _(
            "The Docker daemon is not running ({error}). Start it: `sudo systemctl start docker` "
            "(Docker Desktop: start the app)."
        ).format(error=error)
    if _probe("docker", "compose", "version").returncode != 0:
        return _(
            "Docker Compose v2 is missing (`docker compose version` failed). Install the plugin: "
            "`sudo apt-get install docker-compose-plugin` or see {url}."
        ).format(url=INSTALL_DOCKER)
    return None


def _gpu_service() -> tuple[str, str]:
    """('workshop', why) when the NVIDIA GPUs can be given to containers, else ('workshop-cpu', why)."""
    smi = _probe("nvidia-smi", "-L")
    gpus = [
        line
        for line in (smi.stdout if smi and smi.returncode == 0 else "").splitlines()
        if line.startswith("GPU ")
    ]
    if not gpus:
        return "workshop-cpu", _("no NVIDIA GPU found (nvidia-smi): running on the CPU")
    runtimes = _probe("docker", "info", "--format", "{{json .Runtimes}}")
    if "nvidia" in (runtimes.stdout if runtimes else "") or shutil.which(
        "nvidia-container-runtime-hook"
    ):
        return "workshop", ngettext(
            "{n} NVIDIA GPU and the NVIDIA container runtime found: running on the GPU",
            "{n} NVIDIA GPUs and the NVIDIA container runtime found: running on the GPUs",
            len(gpus),
        ).format(n=len(gpus))
    return "workshop-cpu", ngettext(
        "{n} NVIDIA GPU found, but Docker has no NVIDIA runtime, so containers cannot use it "
        '(`docker compose up workshop` stops with: could not select device driver "nvidia"): '
        "running on the CPU. To use the GPU, install the NVIDIA Container Toolkit ({url}), then "
        "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`.",
        "{n} NVIDIA GPUs found, but Docker has no NVIDIA runtime, so containers cannot use them "
        '(`docker compose up workshop` stops with: could not select device driver "nvidia"): '
        "running on the CPU. To use the GPUs, install the NVIDIA Container Toolkit ({url}), then "
        "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`.",
        len(gpus),
    ).format(n=len(gpus), url=INSTALL_TOOLKIT)


def _say(message: str) -> None:
    print(f"invoke: {message}", file=sys.stderr, flush=True)


def _need_docker(c) -> None:
    """Stop with the fix when Docker is unusable; under --dry-run only say so and go on printing."""
    problem = _docker_problem()
    if problem and c.config.run.dry:
        _say(_("note: {line}").format(line=problem))
    elif problem:
        raise Exit(f"invoke: {problem}", code=1)
    (ROOT / "results").mkdir(
        exist_ok=True
    )  # made by you, so owned by you: the container writes as its owner


def _service(c, cpu: bool) -> str:
    if cpu:
        _say(_("--cpu: running on the CPU"))
        return "workshop-cpu"
    service, why = _gpu_service()
    _say(why)
    return service


def _native_python() -> str:
    """The Python that runs invoke, when it has the workshop's packages; otherwise stop with the fix."""
    missing = [
        name for name in ("torch", "workshop", "pytest") if importlib.util.find_spec(name) is None
    ]
    if missing:
        raise Exit(
            "invoke: "
            + _(
                "--native needs {missing} in {python}: activate the venv of the README's native setup "
                "(`. .venv/bin/activate`) and run invoke from there."
            ).format(missing=", ".join(missing), python=sys.executable),
            code=1,
        )
    return sys.executable


def _run(c, *words: str, env: dict[str, str] | None = None, interactive: bool = False):
    """Run one command from the repository root; the environment is spelled out so --dry-run shows it."""
    assignments = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()]
    command = " ".join(assignments + [shlex.quote(w) for w in words])
    with c.cd(str(ROOT)):
        return c.run(command, pty=interactive and sys.stdin.isatty())


def _git_revision() -> str:
    """HEAD, '+dirty' when the tree has changes (the image copies the tree as it is), as results.py writes it."""
    rev = _probe("git", "-C", str(ROOT), "rev-parse", "HEAD")
    if not rev or rev.returncode != 0:
        return "unknown"
    dirty = _probe("git", "-C", str(ROOT), "status", "--porcelain")
    return rev.stdout.strip() + ("+dirty" if dirty and dirty.stdout.strip() else "")


def _language(lang: str) -> list[str]:
    """`--lang LANG` for a workshop command ([] when not asked: the command follows the locale); this task's own
    messages follow it too."""
    if lang and lang not in LANGUAGES:
        raise Exit(
            "invoke: "
            + _("--lang takes {choices}, not {lang!r}").format(
                choices=_(" or ").join(LANGUAGES), lang=lang
            ),
            code=1,
        )
    if lang:
        i18n.set_language(lang)
    return ["--lang", lang] if lang else []


def workshop_task(doc: str, **options):
    """@task, plus a --dry-run option that prints the commands instead of running them (invoke's own --dry).
    `doc` is what `invoke --list` and `invoke --help TASK` show (the task's docstring), translated with its help."""

    def decorate(fn):
        @functools.wraps(fn)
        def body(c, *args, dry_run=False, **kwargs):
            if dry_run:
                c.config.run.dry = True
            return fn(c, *args, **kwargs)

        body.__doc__ = doc

        signature = inspect.signature(fn)
        dry_run = inspect.Parameter(
            "dry_run", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=False
        )
        body.__signature__ = signature.replace(parameters=[*signature.parameters.values(), dry_run])
        options["help"] = {
            **options.get("help", {}),
            "dry-run": _("print the commands instead of running them"),
        }
        return task(**options)(body)

    return decorate


@workshop_task(
    doc=_(
        "Build the image (docker/Dockerfile): the pinned torch, a compiler, the workshop (or its learner "
        "edition)."
    ),
    help={
        "torch-index": _(
            "take torch from this wheel index instead of PyPI (GPUs whose driver predates CUDA 13), "
            "e.g. https://download.pytorch.org/whl/cu126"
        ),
        "edition": _(
            "instructor (default: the workshop as it is) or learner (no reference solutions, no model "
            "answers: the image grade runs hand-ins in)"
        ),
    },
)
def build(c, torch_index="", edition="instructor"):
    if edition not in EDITIONS:
        raise Exit(
            "invoke: "
            + _("--edition takes {editions}, not {edition!r}").format(
                editions=" | ".join(EDITIONS), edition=edition
            ),
            code=1,
        )
    _need_docker(c)
    env = {"WORKSHOP_GIT_REVISION": _git_revision()}
    if torch_index:
        env["TORCH_INDEX_URL"] = torch_index
    _run(c, "docker", "compose", "build", EDITIONS[edition], env=env)


@workshop_task(
    doc=_(
        "Run every lab (or --only some), then the tests on that run; results in ./results/<run-id>/."
    ),
    iterable=["only"],
    help={
        "n": _("processes for the distributed demos (default 2)"),
        "only": _(
            "run just this lab (repeatable); the tests then do not run. Labs: python -m workshop list"
        ),
        "cpu": _(CPU_HELP),
        "native": _(NATIVE_HELP),
        "lang": _(LANG_HELP),
    },
)
def lab(c, n="2", only=None, cpu=False, native=False, lang=""):
    _language(lang)
    # n is taken as text (invoke would turn a bad number into a traceback) and checked here.
    if not n.isdigit() or int(n) < 1:
        raise Exit(
            "invoke: "
            + _("--n must be a whole number of processes, at least 1 (got {n!r})").format(n=n),
            code=1,
        )
    # The session's run, and so its report, takes the language from WORKSHOP_LANG.
    env = {"WORKSHOP_N": n, **({"WORKSHOP_LANG": lang} if lang else {})}
    if native:
        env |= {"WORKSHOP_DEVICE": "cpu" if cpu else "auto", "PYTHON": _native_python()}
        _run(c, "sh", SESSION, *only, env=env)
        return
    _need_docker(c)
    service = _service(c, cpu)
    variables = [word for name, value in env.items() for word in ("-e", f"{name}={value}")]
    _run(
        c,
        "docker",
        "compose",
        "run",
        "--rm",
        *variables,
        service,
        "workshop-session",
        *only,
        interactive=True,
    )


@workshop_task(
    doc=_("Run the test suite (it runs the labs it checks on the CPU)."),
    help={"native": _(NATIVE_HELP)},
)
def test(c, native=False):
    if native:
        _run(c, _native_python(), "-m", "pytest")
        return
    _need_docker(c)
    _run(c, "docker", "compose", "run", "--rm", "test", interactive=True)


@workshop_task(
    doc=_("Collect a run's summaries and pictures into its REPORT.md."),
    help={
        "run": _("run folder or id (default: results/latest)"),
        "native": _("run here, without Docker"),
        "lang": _("es or en: REPORT.md's language (default: the run's)"),
    },
)
def report(c, run="", native=False, lang=""):
    # a run is never an option: it comes after `--`
    args = ["-m", "workshop", "report", *_language(lang), *(["--", run] if run else [])]
    if native:
        _run(c, _native_python(), *args)
        return
    _need_docker(c)
    _run(c, "docker", "compose", "run", "--rm", "workshop-cpu", "python", *args)


def _learner(c, words: list[str], work: str, native: bool, gpu: str | None = None) -> None:
    """`python -m workshop WORDS` on the learner's workspace: here (--native), or in the image with the
    workspace mounted from the host at /workshop/my-work (compose's learner services; learner-gpu when
    `gpu` names the GPU service that _service chose)."""
    if native:
        _run(c, _native_python(), "-m", "workshop", *words)
        return
    _need_docker(c)
    host_work = (ROOT / work).resolve()
    if not c.config.run.dry:  # made by you, so yours: the container writes as you
        host_work.mkdir(parents=True, exist_ok=True)
    service = "learner-gpu" if gpu == "workshop" else "learner"
    env = {"WORKSHOP_WORK": str(host_work)}
    _run(c, "docker", "compose", "run", "--rm", service, *words, env=env, interactive=True)


@workshop_task(
    doc=_(
        "Grade your workspace with a lab's own checks (in the image, your workspace mounted from here)."
    ),
    positional=["lab"],
    help={
        "lab": _("the lab to grade (labs with exercises: python -m workshop exercises list)"),
        "work": _(WORK_HELP).format(work=DEFAULT_WORK),
        "cpu": _(CPU_HELP),
        "native": _(NATIVE_HELP),
        "lang": _(LANG_HELP),
    },
)
def check(c, lab, work=DEFAULT_WORK, cpu=False, native=False, lang=""):
    words = ["check", "--work", work if native else DEFAULT_WORK, *_language(lang), "--", lab]
    _learner(c, words, work, native, None if native else _service(c, cpu))


@workshop_task(
    doc=_(
        "Your workspace: `invoke exercises init` writes it, `invoke exercises list` shows where you stand."
    ),
    positional=["action"],
    help={
        "action": _(
            "init (write the exercises' files, never over yours) or list (where you stand)"
        ),
        "work": _(WORK_HELP).format(work=DEFAULT_WORK),
        "learner": _("init: your name, as the instructor's table shows it"),
        "native": _(NATIVE_HELP),
        "lang": _(LANG_HELP),
    },
)
def exercises(c, action, work=DEFAULT_WORK, learner="", native=False, lang=""):
    language = _language(lang)
    if action not in ("init", "list"):
        raise Exit(
            "invoke: " + _("exercises takes init or list, not {action!r}").format(action=action),
            code=1,
        )
    inside = work if native else DEFAULT_WORK
    if action == "init":
        words = ["exercises", "init", inside, *(["--learner", learner] if learner else [])]
    else:
        words = ["exercises", "list", "--work", inside]
    _learner(c, words + language, work, native)


@workshop_task(
    doc=_(
        "Grade hand-ins into a table of learners x exercises, each hand-in's code in a container of its own."
    ),
    iterable=["path"],
    help={
        "path": _("a hand-in: a workspace, a folder holding my-work/, or run folders (repeatable)"),
        "sandbox": _(
            "auto (default: a container of the learner edition's image per hand-in's lab, where Docker "
            "and that image are here), docker, or native (unisolated)"
        ),
        "lang": _(LANG_HELP),
    },
)
def grade(c, path=None, sandbox="auto", lang=""):
    language = _language(lang)
    if not path:
        raise Exit("invoke: " + _("grade needs --path HAND-IN (repeatable)"), code=1)
    words = ["grade", *language, "--sandbox", sandbox, "--", *path]
    _run(c, _native_python(), "-m", "workshop", *words)


@workshop_task(
    doc=_("Open a shell in the image (GPUs attached when usable), ./results mounted."),
    help={"cpu": _("a CPU container even where there are GPUs")},
)
def shell(c, cpu=False):
    _need_docker(c)
    _run(c, "docker", "compose", "run", "--rm", _service(c, cpu), "bash", interactive=True)


@workshop_task(
    doc=_(
        "Remove the containers and the compile-cache volume (and, if asked, the runs and the image)."
    ),
    help={
        "results": _("also delete every run under ./results"),
        "image": _("also remove the image"),
    },
)
def clean(c, results=False, image=False):
    _need_docker(c)
    _run(
        c,
        "docker",
        "compose",
        "--profile",
        "*",
        "down",
        "--volumes",
        "--remove-orphans",
        *(["--rmi", "all"] if image else []),
    )
    if results:
        runs = [
            p for p in (ROOT / "results").iterdir() if p.name != ".gitignore"
        ]  # results/ itself stays yours
        _run(c, "rm", "-rf", "--", *sorted(str(p.relative_to(ROOT)) for p in runs))


@workshop_task(
    doc=_("Save the image as one compressed file, to install it offline (invoke import)."),
    help={"out": _("the archive to write (default {archive})").format(archive=DEFAULT_ARCHIVE)},
)
def export(c, out=DEFAULT_ARCHIVE):
    _need_docker(c)
    with c.cd(str(ROOT)):
        c.run(
            f"docker save $(docker compose config --images workshop-cpu) | gzip -1 > {shlex.quote(out)}"
        )


@workshop_task(
    doc=_(
        "Load the image from an `invoke export` file (invoke import FILE): no network needed afterwards."
    ),
    name="import",
    positional=["archive"],
    help={"archive": _("the file `invoke export` wrote")},
)
def import_(c, archive):
    _need_docker(c)
    _run(c, "docker", "load", "--input", archive)


def _double_dash_for_one_letter_options(add_arg):
    """`invoke lab --n 2`, as in `python -m workshop run --n 2`: invoke itself spells a one-letter option
    only `-n`, so each task's parser context learns `--n` as another name for it (invoke is pinned: 3.0.3)."""

    @functools.wraps(add_arg)
    def add_arg_and_alias(context, *args, **kwargs):
        add_arg(context, *args, **kwargs)
        for name in [n for n in context.args if len(n) == 1 and f"--{n}" not in context.flags]:
            context.flags.alias(f"--{name}", to=f"-{name}")

    return add_arg_and_alias


ParserContext.add_arg = _double_dash_for_one_letter_options(ParserContext.add_arg)
ns = Collection.from_module(sys.modules[__name__])
ns.configure(
    {"run": {"echo": True, "echo_format": "+ {command}"}}
)  # each command shown, in plain text
