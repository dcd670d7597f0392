"""The security suite, `grade`'s half: forged hand-ins, hand-ins that reach the others or the code,
and a table that survives Ctrl-C. On the toy lab (tests/support/learner_toy.py), whose header lets the learner's code
import os and subprocess in its worker: `--sandbox native`, the case where a hand-in can reach the others, so that
what grade notes can be seen. What the container prevents outright: tests/security/test_hand_ins.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.cli.test_learner import ANSWERS, DOUBLE, ESSAY, make_workspace, read_csv, replace_stub
from tests.support import learner_toy
from workshop.cli.main import main
from workshop.foundations.results import runs
from workshop.foundations.run_options import RunOptions
from workshop.grading import edition, grade_integrity, grade_table
from workshop.lab_api import LabContext
from workshop.learner.learner_code import Solution

NATIVE = ["--device", "cpu", "--sandbox", "native"]


@pytest.fixture
def toy(monkeypatch, tmp_path, edition_built_once):
    return learner_toy.use_in(monkeypatch, tmp_path)


def grade(*paths: Path, to: str = "grades") -> dict[str, dict]:
    assert main(["grade", *map(str, paths), *NATIVE, "--to", to]) == 0
    return {row["source"]: row for row in read_csv(f"{to}/grades.csv")}


def handed_in_results(toy: Path, name: str, double: str = DOUBLE) -> Path:
    """A learner's results/ folder with one run of their workspace (checked where they worked)."""
    work = make_workspace(toy / "learners", name, double, None, None)
    out = toy / "handin" / name / "results"
    assert main(["check", "toy", "--work", str(work), "--device", "cpu", "--out", str(out)]) == 1
    return out


def test_a_forged_result_json_is_self_reported_and_counts_nothing(toy):
    results = handed_in_results(toy, "eve", "def double(x):\n    return 0\n")
    [run] = runs(results)
    result = json.loads((run / "toy" / "result.json").read_text())
    for entry in result["exercises"].values():
        entry["status"], entry["passed"] = "passing", True
    (run / "toy" / "result.json").write_text(json.dumps(result))
    row = grade(results)[str(results)]
    assert row["toy.double"] == "passing (self-reported)" and row["exercises passing"] == "0/3"
    assert "self-reported, unverified" in row["notes"]


def test_a_copied_run_folder_renamed_and_a_shared_file_are_flagged_on_both_rows(toy):
    ada = handed_in_results(toy, "ada")
    [run] = runs(ada)
    bob = toy / "handin" / "bob" / "results"
    shutil.copytree(run, bob / "20990101-000000-abcdef")
    rows = grade(ada, bob)
    for source in (ada, bob):
        assert f"handed in twice: run {run.name} is also in" in rows[str(source)]["notes"]
    twins = [make_workspace(toy / "class", name, DOUBLE, None, None) for name in ("cat", "dan")]
    rows = grade(*twins, to="grades-2")
    assert "handed in twice: toy.py (sha256" in rows[str(twins[0])]["notes"]
    assert "is also in dan's hand-in" in rows[str(twins[0])]["notes"]


def test_invented_exercise_ids_are_no_column_and_count_nothing(toy):
    results = handed_in_results(toy, "eve")
    [run] = runs(results)
    result = json.loads((run / "toy" / "result.json").read_text())
    result["exercises"]["toy.bonus"] = dict(result["exercises"]["toy.double"], status="passing")
    (run / "toy" / "result.json").write_text(json.dumps(result))
    row = grade(results)[str(results)]
    assert (
        "toy.bonus" not in row
        and "exercise toy.bonus is not one the workshop declares" in row["notes"]
    )


def test_learner_supplied_text_is_escaped_in_csv_and_markdown(toy):
    work = make_workspace(toy / "class", "x", DOUBLE, None, None)
    record = json.loads((work / ".workspace.json").read_text())
    record["learner"] = '=HYPERLINK("http://x","y")\n| <b>owned</b> |'
    (work / ".workspace.json").write_text(json.dumps(record))
    assert main(["grade", str(work), *NATIVE, "--to", "grades"]) == 0
    [row] = read_csv("grades/grades.csv")
    assert row["name it gives"].startswith("'=HYPERLINK")
    markdown = Path("grades/grades.md").read_text()
    line = next(line for line in markdown.splitlines() if "HYPERLINK" in line)
    assert "\\| &lt;b&gt;owned&lt;/b&gt; \\|" in line and line.count(" | ") > 5


LIVE_TEXT = "![img](http://evil.example/x.png) [x](javascript:alert(1)) \\[y](http://e) <http://e> www.evil.example"


def live_markup(markdown: str) -> list[str]:
    """The links and images `markdown` renders to (CommonMark with tables, markdown-it-py), and the bare
    addresses GitHub would link (http://..., www....)."""
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    return re.findall(r"<a |<img ", html) + re.findall(r"://|www\.", markdown)


def test_links_and_images_in_learner_text_are_inert_in_grades_md(toy, monkeypatch):
    header = ["learner", "exercises passing", "notes"]
    lines = [[LIVE_TEXT, "0/3", f"toy.double: {LIVE_TEXT}"]]
    markdown = grade_table.to_markdown(header, lines, "Grades")
    assert live_markup(markdown) == [], markdown
    assert "[x](javascript:alert(1))" in MarkdownIt("commonmark").enable("table").render(markdown)
    # planted: the escapes before links were: a pipe and HTML only
    monkeypatch.setattr(grade_table, "MARKDOWN_ESCAPES", {"|": "\\|", "<": "&lt;", ">": "&gt;"})
    monkeypatch.setattr(grade_table, "BARE_LINK", re.compile("(?!)"))
    assert live_markup(grade_table.to_markdown(header, lines, "Grades"))


def sparse(path: Path) -> None:
    """40 GB that cost no disk: a hand-in's file read whole would stop grade (MemoryError)."""
    with open(path, "wb") as f:
        f.truncate(40 * 2**30)


def record_in(work: Path) -> Path:
    (work / ".workspace.json").unlink()
    return work / ".workspace.json"


# attack: (what it does to the workspace, whether its checks still run, what the row's notes say)
HOSTILE_FILES = {
    "a 40 GB sparse file beside": (
        lambda work: sparse(work / "big.bin"),
        True,
        "big.bin has 42949672960 bytes, over the 67108864 read of one file: not read",
    ),
    "its code a 40 GB sparse file": (
        lambda work: sparse(work / "toy.py"),
        False,
        "toy.py has 42949672960 bytes",
    ),
    "its record a FIFO": (
        lambda work: os.mkfifo(record_in(work)),
        False,
        ".workspace.json is a FIFO: not read",
    ),
    "its record a link to /dev/zero": (
        lambda work: record_in(work).symlink_to("/dev/zero"),
        False,
        ".workspace.json leads out of the hand-in (to /dev/zero): not followed",
    ),
    "its code a link out of the hand-in": (
        lambda work: (
            (work / "toy.py").unlink()
            or (work / "toy.py").symlink_to(work.parent / "bob" / "toy.py")
        ),
        False,
        "toy.py leads out of the hand-in",
    ),
}


@pytest.mark.parametrize("attack, graded, note", HOSTILE_FILES.values(), ids=HOSTILE_FILES.keys())
def test_a_hostile_file_in_a_hand_in_is_a_note_and_the_next_hand_in_is_graded(
    toy, attack, graded, note
):
    """grade reads a hand-in's files lstat first, regular ones only, sizes capped: no file stops or hangs it."""
    hostile = make_workspace(toy / "class", "eve", DOUBLE, None, None)
    honest = make_workspace(toy / "class", "bob", DOUBLE, None, None)
    attack(hostile)
    start = time.monotonic()
    rows = grade(hostile, honest)
    assert time.monotonic() - start < 240
    assert rows[str(honest)]["toy.double"] == "passing", rows[str(honest)]["notes"]
    assert note in rows[str(hostile)]["notes"]
    assert (rows[str(hostile)]["toy.double"] == "passing") == graded
    if not graded:
        assert "its workspace is not graded: grade does not read" in rows[str(hostile)]["notes"]


def test_the_name_is_the_instructors_and_what_a_hand_in_claims_is_flagged(toy):
    """The name comes from the hand-in's folder (or the roster); the one its record gives is shown beside it;
    eve's claiming ada's name, a name on two rows, and a record that lost its counts are flagged. Hints and
    `check --show` runs are counted and marked self-reported."""
    ada = make_workspace(toy / "class", "ada", DOUBLE, None, None)
    eve = make_workspace(toy / "class", "eve", DOUBLE, None, None)
    main(["exercises", "init", str(ada), "--force", "--learner", "Ada L."])
    replace_stub(ada / "toy.py", "double", DOUBLE)
    assert main(["check", "toy", "double", "--show", "--work", str(ada), *NATIVE[:2]]) == 0
    record = json.loads((ada / ".workspace.json").read_text())
    assert record["shown"] == {"toy.double": 1}
    (ada / ".workspace.json").write_text(json.dumps({**record, "hints": {"toy.double": 2}}))
    record = json.loads((eve / ".workspace.json").read_text())
    del record["hints"]  # no hints taken, it says
    (eve / ".workspace.json").write_text(json.dumps({**record, "learner": "Ada L."}))
    rows = grade(ada, eve)
    assert (rows[str(ada)]["learner"], rows[str(ada)]["name it gives"]) == ("ada", "Ada L.")
    assert rows[str(ada)]["toy.double"] == "passing (2 hints, --show 1; self-reported)"
    assert (rows[str(eve)]["learner"], rows[str(eve)]["name it gives"]) == ("eve", "Ada L.")
    assert "its hand-in gives the name Ada L., not eve" in rows[str(eve)]["notes"]
    assert "its hand-in gives the name" not in rows[str(ada)]["notes"]
    for row, other in ((rows[str(ada)], eve), (rows[str(eve)], ada)):
        assert f"a name twice: this row and {other} are both named Ada L." in row["notes"]
    assert "keeps no count of hints" in rows[str(eve)]["notes"]
    assert "keeps no count of hints" not in rows[str(ada)]["notes"]
    roster = toy / "roster.csv"
    roster.write_text("ada,Ada Lovelace\nbob,Bob\n")
    assert (
        main(["grade", str(ada), str(eve), *NATIVE, "--roster", str(roster), "--to", "roster"]) == 0
    )
    rows = {row["source"]: row for row in read_csv("roster/grades.csv")}
    assert (
        rows[str(ada)]["learner"] == "Ada Lovelace" and "Ada L., not" not in rows[str(ada)]["notes"]
    )
    assert "eve is not on the roster" in rows[str(eve)]["notes"]


def test_a_record_that_lost_the_counts_its_runs_still_have_is_flagged(toy):
    """A hint and a `check --show` run, in the record and in the runs handed in beside it: nothing to say; the
    record's counts deleted (the runs keep theirs): flagged."""
    hand_in = toy / "class" / "ada"
    work = make_workspace(hand_in, "my-work", DOUBLE, None, None)
    check = [
        "check",
        "toy",
        "double",
        "--work",
        str(work),
        *NATIVE[:2],
        "--out",
        str(hand_in / "results"),
    ]
    assert main([*check, "--hint"]) == 0 and main([*check, "--show"]) == 0
    lost = "its handed-in runs count more hints or `check --show` runs than its workspace record: toy.double"
    assert lost not in grade(hand_in)[str(hand_in)]["notes"]
    record = json.loads((work / ".workspace.json").read_text())
    (work / ".workspace.json").write_text(json.dumps({**record, "hints": {}, "shown": {}}))
    assert lost in grade(hand_in, to="grades-2")[str(hand_in)]["notes"]


def test_a_hand_in_that_changes_another_is_named_on_both_rows(toy):
    with tempfile.TemporaryDirectory(prefix="workshop-class-") as folder:
        # open to all, as a class folder may be, so that a worker of a uid of its own can write into it
        Path(folder).chmod(0o777)
        victim = make_workspace(Path(folder), "bob", DOUBLE, None, None)
        victim.chmod(0o777)
        (victim / "toy.py").chmod(0o666)
        attack = (
            "def double(x: int) -> int:\n"
            f"    fd = os.open({str(victim / 'toy.py')!r}, os.O_WRONLY | os.O_APPEND)\n"
            "    os.write(fd, b'# stubs now\\n')\n"
            "    return 2 * x\n"
        )
        attacker = make_workspace(toy / "class", "ada", attack, None, None)
        rows = grade(attacker, victim)
    assert (
        f"another hand-in changed while this one was graded: {victim} (toy.py)"
        in rows[str(attacker)]["notes"]
    )
    assert "changed while ada's hand-in was graded: toy.py" in rows[str(victim)]["notes"]


@pytest.fixture
def code(monkeypatch):
    """A folder that stands for the workshop's code: a file planted in the real package would change the code
    under every test that grades at the same time (pytest-xdist's other workers). In /tmp and open to all, so
    that the learner's worker, of another uid, can write into it as it could into an unprotected install."""
    with tempfile.TemporaryDirectory(prefix="workshop-code-") as folder:
        code = Path(folder)
        (code / "lab.py").write_text("# the code every lab's checks are\n")
        code.chmod(0o777)
        monkeypatch.setattr(grade_integrity, "CODE", code)
        yield code


def test_a_file_planted_in_the_code_is_named_and_the_rows_after_it_flagged(toy, code):
    # beside the code, where a stale lab.cpython-311.pyc would be loaded
    planted = code / f"planted_by_a_test_{uuid.uuid4().hex}.pyc"
    attack = (
        "def double(x: int) -> int:\n"
        f"    os.close(os.open({str(planted)!r}, os.O_WRONLY | os.O_CREAT, 0o644))\n"
        "    return 2 * x\n"
    )
    try:
        attacker = make_workspace(toy / "class", "ada", attack, None, None)
        later = make_workspace(toy / "class", "bob", DOUBLE, None, None)
        rows = grade(attacker, later)
    finally:
        planted.unlink(missing_ok=True)
    assert (
        "the workshop's code or its Python environment changed while this hand-in was graded: "
        "planted_by_a_test_" in (rows[str(attacker)]["notes"])
    )
    assert (
        "graded after the workshop's code or its Python environment changed (while ada's hand-in was graded)"
        in (rows[str(later)]["notes"])
    )


@pytest.fixture
def site_packages(monkeypatch):
    """A folder that stands for the venv's site-packages (a .pth planted in the real one would run in every
    Python started from it, other developers' included), open to all as an unprotected venv is."""
    with tempfile.TemporaryDirectory(prefix="workshop-site-") as folder:
        site = Path(folder)
        (site / "torch.pth").write_text("# what is there before\n")
        site.chmod(0o777)
        monkeypatch.setattr(grade_integrity, "environment", lambda: ([site], []))
        yield site


def test_a_pth_planted_between_fingerprints_is_noticed(site_packages, monkeypatch):
    def planted_between(name: str) -> list[str]:
        watch = grade_integrity.Watch([], Path("results"))
        (site_packages / name).write_text(
            "import os\n"
        )  # run by every Python that starts from here
        return watch.after(Path("graded"))[1]

    assert planted_between("planted.pth") == [f"{site_packages}/planted.pth"]
    # planted: a watch of the code alone (before the environment was in it) misses it
    code_alone = lambda: grade_integrity.fingerprint(grade_integrity.CODE)  # noqa: E731
    monkeypatch.setattr(grade_integrity, "code_and_environment", code_alone)
    assert planted_between("again.pth") == []


def test_natively_a_planted_pth_is_named_and_the_table_titled_not_isolated(toy, site_packages):
    """--sandbox native: the table and every row say it is a rehearsal, not a grade; a .pth the learner's code
    plants in the environment is named on its row and the rows after it."""
    attack = (
        "def double(x: int) -> int:\n"
        f"    fd = os.open({str(site_packages / 'planted.pth')!r}, os.O_WRONLY | os.O_CREAT, 0o644)\n"
        "    os.write(fd, b'import os\\n')\n"
        "    return 2 * x\n"
    )
    attacker = make_workspace(toy / "class", "ada", attack, None, None)
    later = make_workspace(toy / "class", "bob", DOUBLE, None, None)
    rows = grade(attacker, later)
    assert (
        Path("grades/grades.md")
        .read_text()
        .startswith("# Not isolated: a rehearsal, not a grade\n")
    )
    for row in rows.values():
        assert row["notes"].startswith("not isolated: a rehearsal, not a grade | ")
    assert (
        f"changed while this hand-in was graded: {site_packages}/planted.pth"
        in rows[str(attacker)]["notes"]
    )
    assert "changed (while ada's hand-in was graded)" in rows[str(later)]["notes"]


def test_natively_a_hand_in_that_rewrites_the_learner_edition_is_named(toy, monkeypatch):
    """--sandbox native: each hand-in's worker imports the learner edition grade built for the class; as the
    instructor's user it can write it (a stub rewritten is then the next hand-in's code), so grade watches it as
    the code. As root the worker has a uid of its own and cannot: the stub is opened to all to stand for that."""
    stub = Path("workshop/labs/autograd/hand_grads.py")
    build = edition.build_apart

    def built_writable(out: Path) -> None:
        build(out)
        (out / stub).chmod(0o666)

    monkeypatch.setattr(edition, "build_apart", built_writable)
    attack = (
        "def double(x: int) -> int:\n"
        f"    path = os.path.join(os.environ['PYTHONPATH'], {str(stub)!r})\n"
        "    fd = os.open(path, os.O_WRONLY | os.O_APPEND)\n"
        "    os.write(fd, b'\\ndef backpropagate(order, grad_output):\\n    return {}\\n')\n"
        "    return 2 * x\n"
    )
    attacker = make_workspace(toy / "class", "ada", attack, None, None)
    later = make_workspace(toy / "class", "bob", DOUBLE, None, None)
    rows = grade(attacker, later)
    assert rows[str(attacker)]["toy.double"] == "passing"  # its write went through
    assert f"/edition/{stub}" in rows[str(attacker)]["notes"]
    assert "changed (while ada's hand-in was graded)" in rows[str(later)]["notes"]


def test_statuses_printed_before_the_worker_dies_pass_nothing(toy):
    """What the learner's code prints goes to its worker's log, which nothing parses; the worker it ends is a
    failed exercise: no status it printed counts."""
    attack = (
        "def double(x: int) -> int:\n"
        "    import os\n"
        "    for e in ('toy.double', 'toy.answers', 'toy.essay'):\n"
        "        print(f'[toy] graded {e}: passing', flush=True)\n"
        "    os._exit(0)\n"
    )
    work = make_workspace(toy / "class", "eve", attack, ANSWERS, ESSAY)
    row = grade(work)[str(work)]
    assert row["toy.double"] == "failing" and row["exercises passing"] == "2/3"


def test_in_the_sandbox_no_learner_code_runs_in_the_labs_process(toy):
    """With grade's containers asked for, every code exercise is a handle on the learner's code in its worker
    (LabContext.grading has no other path): a file that reaches past the exercise is refused by the lab's
    reading of it, before any worker starts, and none of it runs in the lab's process; a document is read as
    text."""
    marker = toy / "ran"
    attack = (
        f"def double(x: int) -> int:\n    open({str(marker)!r}, 'w').write('x')\n    return 2 * x\n"
    )
    work = make_workspace(toy / "class", "eve", attack, ANSWERS, ESSAY)
    (toy / "out").mkdir()
    options = RunOptions("cpu", 1, 0, work=work, worker_image="any-image")
    ctx = LabContext("toy", toy / "out", options)
    with ctx.grading("double") as impl:
        assert isinstance(impl, Solution)
        ctx.check_equal("double(21)", impl(21), 42)
    with ctx.grading("answers") as impl:
        ctx.check_equal("answers", impl.value, learner_toy.ANSWERS)
    with ctx.grading("essay") as path:
        ctx.check_min("essay: words", len(Path(path).read_text().split()), 10)
    results = ctx.exercise_results()
    assert not marker.exists()
    for exercise in ("toy.double", "toy.answers"):
        assert "open is not allowed" in results[exercise]["failed_check"]["value"]
    assert results["toy.essay"]["status"] == "passing"  # a document is read as text, in any sandbox


def test_a_detached_process_cannot_rewrite_the_table_after_grade(toy):
    attack = (
        "def double(x: int) -> int:\n"
        "    import subprocess\n"
        "    subprocess.Popen(['sh', '-c', 'sleep 4; echo forged > grades/grades.csv'], start_new_session=True)\n"
        "    return 2 * x\n"
    )
    work = make_workspace(toy / "class", "eve", attack, None, None)
    grade(work)
    before = Path("grades/grades.csv").read_text()
    time.sleep(6)
    assert Path("grades/grades.csv").read_text() == before


def test_ctrl_c_leaves_a_partial_table_named_so(toy):
    first = make_workspace(toy / "class", "ada", DOUBLE, None, None)
    hangs = make_workspace(
        toy / "class",
        "bob",
        "def double(x: int) -> int:\n    import time\n    time.sleep(600)\n",
        None,
        None,
    )
    command = [
        sys.executable,
        "-m",
        "workshop",
        "grade",
        str(first),
        str(hangs),
        *NATIVE,
        "--to",
        "grades",
    ]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    partial = Path("grades/grades.partial.md")
    for _ in range(600):
        if partial.is_file():
            break
        time.sleep(0.2)
    time.sleep(2)  # bob's lab is running
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "partial table: grades/grades.partial.csv" in out
    title = "# Not isolated: a rehearsal, not a grade (partial: 1 of 2 hand-ins graded)"
    assert partial.read_text().startswith(title)
    assert [row["learner"] for row in read_csv("grades/grades.partial.csv")] == ["ada"]
    assert not Path("grades/grades.csv").exists()


@pytest.fixture(autouse=True)
def _untouched_code():
    """No test here may leave the workshop's code changed (the planted file is removed)."""
    before = grade_integrity.fingerprint(grade_integrity.CODE)
    yield
    assert grade_integrity.changed(before, grade_integrity.fingerprint(grade_integrity.CODE)) == []
