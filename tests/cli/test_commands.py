"""cli.commands, each command's refusals before anything starts, in one line: --resume with lab names, a run to
resume that is not there or is finished, `train --out` a folder or an existing file without --force, a bench
for a lab that has none; `list` names every lab."""

from __future__ import annotations

import pytest

from workshop.cli.main import main
from workshop.foundations import results
from workshop.foundations.run_options import RunOptions
from workshop.labs import all_labs


def refused(argv: list[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    message = str(stopped.value)
    assert message.startswith("error: ") and "\n" not in message
    return message


def test_list_names_every_lab(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in all_labs())


def test_resume_refusals(tmp_path):
    assert "name no labs" in refused(
        ["run", "--resume", "latest", "minigpt", "--out", str(tmp_path)]
    )
    run = results.new_run(tmp_path, [], RunOptions("cpu"))
    (run / "options.json").unlink()  # a run whose options were lost
    assert "options.json" in refused(["run", "--resume", run.name, "--out", str(tmp_path)])
    RunOptions("cpu").write(run)
    results.end_run(run)
    assert "nothing to resume" in refused(["run", "--resume", run.name, "--out", str(tmp_path)])


def test_train_refuses_a_folder_and_an_existing_file(tmp_path):
    assert "is a folder; pass --out with a file path" in refused(["train", "--out", str(tmp_path)])
    (tmp_path / "m.pt").write_bytes(b"")
    assert "exists; pass --force to replace it" in refused(
        ["train", "--out", str(tmp_path / "m.pt")]
    )


def test_a_bench_for_a_lab_without_one_names_those_with_one(tmp_path):
    assert "no benchmark for 'minigpt'; labs with one:" in refused(
        ["bench", "minigpt", "--out", str(tmp_path)]
    )
