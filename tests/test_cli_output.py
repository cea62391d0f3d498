"""What a user and a CI script read: whole tables, JSON, progress, early stops, pipes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import test_cli_run
from redline.cli import main
from redline.running.store import RunStore
from redline.vocabulary.records import RunStatus
from servers import LoopbackLLMServer
from test_runner import KEY_ENV, SECRET, write_suite

LONG_ID = "0201-api-idempotency-key-is-reused-after-a-timeout-and-retried"


#: The same temp project as `redline run`'s own tests (loopback model, key set, cwd inside).
project = test_cli_run.project


def _run_ids(project: Path) -> list[str]:
    with RunStore.open(project / ".redline" / "redline.db") as store:
        return [r.id for r in store.runs()]


def test_a_wrong_key_stops_the_run_at_once_with_exit_2_naming_the_variable(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = {f"c{i}": "MODE:401" for i in range(20)}
    write_suite(project, "s", cases, samples=5)
    assert main(["run", "s", "--quiet", "--concurrency", "2"]) == 2
    err = capsys.readouterr().err
    assert "HTTP 401" in err and f"${KEY_ENV}" in err and "--resume" in err
    assert SECRET not in err
    # Stopped at the first requests, not after 100 samples (and never 100 x retries).
    assert len(llm_server.requests) <= 4
    (run_id,) = _run_ids(project)
    with RunStore.open(project / ".redline" / "redline.db") as store:
        assert store.run(run_id).status is RunStatus.INTERRUPTED


def test_a_key_rejected_after_answers_worked_is_kept_as_transport_not_a_stop(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project, "s", {"a": "MODE:json", "b": "MODE:401"}, samples=2)
    assert main(["run", "s", "--quiet", "--concurrency", "1"]) == 3
    assert "rejected the credentials" not in capsys.readouterr().err


def test_without_a_terminal_tables_keep_every_id_and_number_whole(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    cases = {f"c{i}": "MODE:json" for i in range(8)}
    write_suite(project, "s", {LONG_ID: "MODE:json", "b": "MODE:preamble", **cases})
    main(["run", "s", "--quiet"])
    run_id = _run_ids(project)[0]
    assert main(["baseline", "save", run_id]) == 0
    capsys.readouterr()
    for argv in (
        ["runs"],
        ["show", run_id],
        ["history", LONG_ID],
        ["baseline", "compare", run_id],
        ["compare", run_id, run_id],
    ):
        main(argv)
        out = capsys.readouterr().out
        assert "…" not in out.replace("▁ 0% … █ 100%", ""), argv  # the sparkline legend
        if argv[0] != "runs":
            assert LONG_ID in out, argv
        assert run_id in out, argv
    # Asked for a narrow width, cells wrap; nothing is cut off with an ellipsis.
    monkeypatch.setenv("COLUMNS", "50")
    main(["baseline", "compare", run_id])
    out = capsys.readouterr().out
    assert "…" not in out and max(len(li) for li in out.splitlines()) <= 50
    assert run_id in out


def test_format_json_on_every_reading_command(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project, "s", {LONG_ID: "MODE:json", "b": "MODE:preamble"})
    main(["run", "s", "--quiet"])
    run_id = _run_ids(project)[0]
    main(["baseline", "save", run_id])
    capsys.readouterr()

    assert main(["runs", "--format", "json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert runs[0]["id"] == run_id and runs[0]["cases_failed"] == 1

    assert main(["show", run_id, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert {c["id"]: c["result"] for c in shown["cases"]} == {LONG_ID: "pass", "b": "fail"}

    assert main(["show", run_id, "b", "--format", "json"]) == 0
    samples = json.loads(capsys.readouterr().out)["samples"]
    assert [s["verdict"] for s in samples] == ["malformed", "malformed"]
    assert samples[0]["output"].startswith("Here is")

    assert main(["history", LONG_ID, "--format", "json"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert [p["passes"] for p in history["scheduled"]] == [2]

    assert main(["baseline", "compare", run_id, "--format", "json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert {c["case_id"]: c["status"] for c in compared["cases"]} == {
        LONG_ID: "unchanged",
        "b": "unchanged",
    }
    assert compared["regressions"] == 0

    assert main(["compare", run_id, run_id, "--format", "json"]) == 3  # < 8 cases
    comparison = json.loads(capsys.readouterr().out)
    assert comparison["withheld"] and comparison["a"]["run"]["id"] == run_id


def test_plain_progress_names_the_case_in_flight_and_an_eta(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project, "s", {f"c{i}": "MODE:json DELAY_MS:30" for i in range(4)}, samples=5)
    assert main(["run", "s", "--quiet", "--concurrency", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    progress = [li for li in lines if "/20 samples" in li]
    assert len(progress) >= 10
    middle = progress[0]
    assert "ok " in middle and "ETA " in middle and "now s/c" in middle
    assert "samples/s" in middle or "s/sample" in middle
    assert "ETA" not in progress[-1]  # done: nothing left to estimate


def test_replay_says_it_calls_no_model(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_suite(project, "s", {"a": "MODE:json"})
    main(["run", "s", "--quiet"])
    run_id = _run_ids(project)[0]
    capsys.readouterr()
    assert main(["run", "--replay", run_id, "--quiet"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert f"replaying run {run_id}" in first and "no model is called" in first
    assert "to run" not in first


def test_show_into_a_pipe_closed_early_ends_quietly_with_exit_0(project: Path) -> None:
    write_suite(project, "s", {f"c{i}": "MODE:json" for i in range(30)}, samples=1)
    main(["run", "s", "--quiet"])
    run_id = _run_ids(project)[0]
    proc = subprocess.run(
        f'set -o pipefail; "{sys.executable}" -m redline show {run_id} | head -n 1',
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )
    assert proc.stdout.startswith("run ")
    assert proc.stderr == ""
    assert proc.returncode == 0


def test_a_key_the_model_writes_into_a_good_answer_is_stored_redacted(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asserts = "  - type: contains\n    value: my key\n"
    write_suite(project, "s", {"leak": (f"MODE:echo my key is {SECRET} ok", asserts)}, samples=1)
    assert main(["run", "s", "--quiet", "--out", "export"]) == 0  # judged on the real text
    run_id = _run_ids(project)[0]
    capsys.readouterr()
    assert main(["show", run_id, "leak", "--format", "json"]) == 0
    (sample,) = json.loads(capsys.readouterr().out)["samples"]
    assert sample["output"] == f"my key is [redacted ${KEY_ENV}] ok"
    stored = [p for p in (project / ".redline").iterdir()] + list((project / "export").iterdir())
    for path in stored:
        assert SECRET.encode() not in path.read_bytes(), path
