"""`redline run` and friends as a user runs them: exit codes, crashes, resume, evidence."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redline.cli import main
from redline.running.runner import sample_seed
from redline.running.store import RunStore
from redline.vocabulary.records import RunKind, RunResult, RunStatus
from servers import LoopbackLLMServer
from test_runner import KEY_ENV, SECRET, write_config, write_suite

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def project(tmp_path: Path, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp project: redline.toml pinning `fake` to the loopback server, cwd inside it."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    write_config(tmp_path, llm_server)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def latest_run_id(project: Path) -> str:
    with RunStore.open(project / ".redline" / "redline.db") as store:
        record = store.latest_run(kind=None)
        assert record is not None
        return record.id


@pytest.mark.parametrize(
    ("tokens", "code", "result"),
    [
        ("MODE:json", 0, RunResult.GREEN),
        ("MODE:preamble", 1, RunResult.RED),
        ("MODE:500", 3, RunResult.INCONCLUSIVE),
    ],
)
def test_exit_code_follows_the_run_result(
    project: Path,
    llm_server: LoopbackLLMServer,
    capsys: pytest.CaptureFixture[str],
    tokens: str,
    code: int,
    result: RunResult,
) -> None:
    write_suite(project, "s", {"a": tokens, "b": "MODE:json"})
    assert main(["run", "s", "--quiet"]) == code
    out = capsys.readouterr().out
    run_id = latest_run_id(project)
    assert f"run {run_id}: {result}" in out
    assert "passes" in out and "required" in out
    assert llm_server.count() > 0


def test_every_problem_is_listed_and_nothing_is_called(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project, "one", {"a": ("MODE:json", "  - type: is-json\n    shema: x.json\n")})
    write_suite(project, "two", {"b": ("MODE:json", "  - type: regex\n    value: '(unclosed'\n")})
    assert main(["run", "one", "two"]) == 2
    err = capsys.readouterr().err
    assert "one/a.yaml" in err and "two/b.yaml" in err
    assert llm_server.count() == 0
    assert not (project / ".redline").exists()


def test_missing_key_or_alias_is_exit_2_before_any_request(
    project: Path,
    llm_server: LoopbackLLMServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_suite(project, "s", {"a": "MODE:json"})
    assert main(["run", "s", "--model", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    monkeypatch.delenv(KEY_ENV)
    assert main(["run", "s"]) == 2
    assert KEY_ENV in capsys.readouterr().err
    assert llm_server.count() == 0


#: `python -m redline` with Ctrl-C raising KeyboardInterrupt, as in a terminal, even when
#: the tests were started with SIGINT ignored (a shell's background job passes that on, and
#: Python then leaves it ignored, so a run would never see the test's Ctrl-C).
_REDLINE_WITH_CTRL_C = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'redline'; runpy.run_module('redline', run_name='__main__', alter_sys=True)"
)


def start_run(project: Path, *args: str) -> subprocess.Popen[bytes]:
    # A run that hangs can be made to print every thread's stack (SIGABRT: `stopped`).
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONFAULTHANDLER": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", _REDLINE_WITH_CTRL_C, "run", *args],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def stopped(proc: subprocess.Popen[bytes], timeout_s: float) -> bytes:
    """The stderr of a run that ends within `timeout_s`; a run still going then fails the
    test with every thread's stack (the faulthandler's, on SIGABRT) to say where it hung."""
    try:
        return proc.communicate(timeout=timeout_s)[1]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        err = proc.communicate(timeout=30)[1].decode(errors="replace")
        pytest.fail(f"the run was still going {timeout_s:g} s later; where:\n{err}")


def wait_for_samples(db_path: Path, at_least: int) -> int:
    deadline = time.monotonic() + 30
    stored = 0
    while stored < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
        if db_path.exists():
            try:
                with sqlite3.connect(db_path) as db:
                    stored = db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
            except sqlite3.OperationalError:
                stored = 0
    return stored


def test_ctrl_c_marks_the_run_interrupted_with_what_finished(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Long timeouts: the held requests stay in flight until Ctrl-C, never failing first.
    write_config(project, llm_server, concurrency=2, timeout_s=60.0)
    write_suite(project, "s", {f"c{i}": f"MODE:json n{i}" for i in range(4)}, samples=5)
    llm_server.hold_after(3)
    proc = start_run(project, "s", "--quiet")
    db_path = project / ".redline" / "redline.db"
    try:
        assert wait_for_samples(db_path, 3) == 3
        proc.send_signal(signal.SIGINT)
        err = stopped(proc, 30)
    finally:
        llm_server.release()
        if proc.poll() is None:
            proc.kill()
    message = err.decode()
    assert proc.returncode == 130, message
    with RunStore.open(db_path) as store:
        [record] = store.runs()
        assert record.status is RunStatus.INTERRUPTED and record.result is None
        # Exactly the answered samples are kept; the ones in flight are not made up.
        assert len(store.sample_keys(record.id)) == 3
        assert sum(c.samples for c in store.cases(record.id)) == 3
    assert "stopping: finished samples are stored" in message
    assert f"interrupted; 3 finished sample(s) stored in run {record.id}" in message
    assert f"redline run --resume {record.id}" in message
    # What the message says to do completes the run with the missing samples only.
    llm_server.reset()
    assert main(["run", "--resume", record.id, "--quiet"]) == 0
    assert llm_server.count() == 17
    with RunStore.open(db_path) as store:
        assert len(store.samples(record.id)) == 20
    assert f"run {record.id}: green" in capsys.readouterr().out


def test_kill_9_keeps_finished_samples_and_resume_requests_only_the_missing(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(project, llm_server, concurrency=2)
    write_suite(project, "s", {f"c{i}": f"MODE:json n{i}" for i in range(4)}, samples=5)
    llm_server.latency_ms = 150
    proc = start_run(project, "s", "--quiet")
    db_path = project / ".redline" / "redline.db"
    wait_for_samples(db_path, 4)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    time.sleep(0.3)  # let requests already on the wire reach the server's log first

    with RunStore.open(db_path) as store:
        [record] = store.runs()
        assert record.status is RunStatus.INTERRUPTED  # its process is gone
        done = store.sample_keys(record.id)
        assert 4 <= len(done) < 20
        assert all(s.output for s in store.samples(record.id))
    llm_server.reset()
    llm_server.latency_ms = 0
    assert main(["run", "--resume", record.id[:6], "--quiet"]) == 0
    missing = {sample_seed(record.id, "s", f"c{i}", n) for i in range(4) for n in range(5)} - {
        sample_seed(record.id, *key) for key in done
    }
    assert sorted(r.body["seed"] for r in llm_server.requests) == sorted(missing)
    with RunStore.open(db_path) as store:
        finished = store.run(record.id)
        assert finished.status is RunStatus.FINISHED and finished.result is RunResult.GREEN
        assert len(store.samples(record.id)) == 20
    assert record.id in capsys.readouterr().out


def test_show_prints_raw_output_escaped_never_interpreted(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_suite(project, "s", {"plain": "MODE:json"}, samples=1)
    (folder / "evil.yaml").write_text(
        "id: evil\nprovenance: {ticket: T-1, reported: 2026-01-02, note: test}\n"
        'vars:\n  q: "MODE:echo \\e[31mRED\\e[0m [bold]B[/bold] :smile: nul\\0end"\n'
        "assert:\n  - type: contains\n    value: RED\n",
        encoding="utf-8",
    )
    main(["run", "s", "--quiet"])
    run_id = latest_run_id(project)
    capsys.readouterr()
    assert main(["show", run_id, "evil"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x00" not in out
    assert "\\x1b[31mRED\\x1b[0m [bold]B[/bold] :smile: nul\\x00end" in out
    assert main(["show", run_id]) == 0
    table = capsys.readouterr().out
    assert "evil" in table and "plain" in table


def test_show_takes_a_case_as_the_summary_table_names_it_when_suites_share_ids(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project, "s", {"a": "MODE:json"}, samples=1)
    write_suite(project, "t", {"a": "MODE:preamble"}, samples=1)
    assert main(["run", "s", "t"]) == 1
    assert "t/a" in capsys.readouterr().out
    run_id = latest_run_id(project)
    assert main(["show", run_id, "a"]) == 2
    assert "pick one with --suite" in capsys.readouterr().err
    assert main(["show", run_id, "t/a"]) == 0
    shown = capsys.readouterr().out
    assert "t/a  contract  0/1 ok" in shown and "malformed" in shown
    assert main(["show", run_id, "a", "--suite", "s"]) == 0
    assert "s/a  contract  1/1 ok" in capsys.readouterr().out


def test_an_out_path_that_is_a_file_is_a_usage_error_before_any_request(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project, "s", {"a": "MODE:json"}, samples=1)
    taken = project / "results.txt"
    taken.write_text("not a folder\n", encoding="utf-8")
    # Exit 1 would read as "red" in CI; a traceback after the run would lose the export.
    assert main(["run", "s", "--quiet", "--out", str(taken)]) == 2
    assert llm_server.count() == 0
    assert "exists and is not a folder" in capsys.readouterr().err
    assert main(["run", "s", "--quiet"]) == 0
    assert main(["export", latest_run_id(project), "--out", str(taken)]) == 2
    assert taken.read_text(encoding="utf-8") == "not a folder\n"


def test_reading_commands_never_create_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["runs"]) == 0
    assert "no runs stored" in capsys.readouterr().out
    assert main(["show", "abc123"]) == 2
    assert main(["export", "abc123", "--out", str(tmp_path / "out")]) == 2
    assert "no run store at" in capsys.readouterr().err
    assert not (tmp_path / ".redline").exists()


def test_export_import_and_runs_through_the_cli(
    project: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project, "s", {"a": "MODE:json", "b": "MODE:preamble"})
    out_dir = tmp_path_factory.mktemp("artifact")
    assert main(["run", "s", "--quiet", "--out", str(out_dir)]) == 1
    run_id = latest_run_id(project)
    results = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    assert results["run"]["id"] == run_id and results["summary"]["result"] == "red"
    by_id = {c["id"]: c for c in results["cases"]}
    assert by_id["b"] == {
        "id": "b",
        "suite": "s",
        "tier": "contract",
        "model": "loopback:fake-model-2025-01-01",
        "samples": 2,
        "passes": 0,
        "required": 2,
        "result": "fail",
        "ok": False,
        "verdicts": {
            "ok": 0,
            "wrong": 0,
            "malformed": 2,
            "refused": 0,
            "truncated": 0,
            "transport": 0,
        },
        "case_hash": by_id["b"]["case_hash"],
        "config_hash": by_id["b"]["config_hash"],
    }
    assert len(by_id["b"]["config_hash"]) == 64
    assert "s/b.yaml" in results["manifest"]
    lines = (out_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 and json.loads(lines[-1])["assertions"][0]["type"] == "is-json"
    (project / ".redline" / "redline.db").rename(project / "ci.db")
    assert main(["import", str(out_dir)]) == 0
    assert main(["import", str(out_dir)]) == 2
    assert "already in the store" in capsys.readouterr().err
    with (
        RunStore.open(project / "ci.db") as ci,
        RunStore.open(project / ".redline" / "redline.db") as local,
    ):
        assert local.run(run_id) == ci.run(run_id)
        assert local.cases(run_id) == ci.cases(run_id)
        assert local.samples(run_id) == ci.samples(run_id)
    assert main(["runs"]) == 0
    listing = capsys.readouterr().out
    assert run_id in listing and "red" in listing
    assert "1/2 pass, 1 fail" in listing
    assert main(["export", run_id[:5], "--out", str(out_dir / "again")]) == 0
    assert (out_dir / "again" / "samples.jsonl").read_bytes() == (
        out_dir / "samples.jsonl"
    ).read_bytes()


def test_case_tier_and_samples_options_choose_what_runs(
    project: Path, llm_server: LoopbackLLMServer
) -> None:
    write_suite(project, "s", {"a": "MODE:json", "b": "MODE:json b", "c": "MODE:json c"})
    write_suite(project, "q", {"d": "MODE:json d"}, tier="quality")
    assert main(["run", "s", "q", "--case", "a", "--case", "d", "--samples", "4", "--quiet"]) == 0
    assert llm_server.count() == 8
    with RunStore.open(project / ".redline" / "redline.db") as store:
        cases = store.cases(latest_run_id(project))
        assert [(c.case_id, c.samples, c.required) for c in cases] == [("d", 4, 2), ("a", 4, 4)]
    llm_server.reset()
    assert main(["run", "s", "q", "--tier", "quality", "--quiet"]) == 0
    assert llm_server.count() == 2


def test_resuming_an_interrupted_replay_says_to_replay_again_and_calls_no_model(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from redline.config import load_config
    from redline.running.runner import RunOptions, RunProgress, run_suites
    from redline.suite.cases import load_suites

    folder = write_suite(project, "s", {"a": "MODE:json", "b": "MODE:preamble"})
    assert main(["run", "s", "--quiet"]) == 1
    parent = latest_run_id(project)
    llm_server.reset()

    def stop_after_one(progress: RunProgress) -> None:
        if progress.done == 1 and not progress.stopping:
            raise KeyboardInterrupt

    config = load_config(project)
    with RunStore.open(config.store_path) as store:
        with pytest.raises(KeyboardInterrupt):
            run_suites(
                load_suites([folder], config),
                config,
                store,
                RunOptions(
                    replay=parent, kind=RunKind.REPLAY, concurrency=1, args={"suites": ["s"]}
                ),
                stop_after_one,
            )
        replay = store.latest_run(kind=None)
        assert replay is not None and replay.status is RunStatus.INTERRUPTED
    capsys.readouterr()

    # Not "model alias 'replay' is not pinned": a replay is re-run from its parent.
    assert main(["run", "--resume", replay.id, "--quiet"]) == 2
    assert f"redline run --replay {parent}" in capsys.readouterr().err
    assert llm_server.count() == 0
    assert main(["run", "--replay", parent, "--quiet"]) == 1
    assert llm_server.count() == 0


def test_replay_through_the_cli_calls_no_model(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project, "s", {"a": "MODE:preamble"})
    assert main(["run", "s", "--quiet"]) == 1
    parent = latest_run_id(project)
    llm_server.reset()
    assert main(["run", "--replay", parent, "--quiet"]) == 1
    assert llm_server.count() == 0
    with RunStore.open(project / ".redline" / "redline.db") as store:
        [replay] = store.runs(kind=RunKind.REPLAY)
        assert replay.parent_id == parent


def test_a_replay_names_the_cases_it_could_not_score(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project, "s", {"a": "MODE:json"})
    assert main(["run", "s", "--quiet"]) == 0
    parent = latest_run_id(project)
    write_suite(project, "s", {"a": "MODE:json", "b": "MODE:preamble"})
    capsys.readouterr()
    llm_server.reset()
    # Green, but only because case b has no stored outputs: the summary must say so.
    assert main(["run", "--replay", parent, "--quiet"]) == 0
    assert llm_server.count() == 0
    out = capsys.readouterr().out
    assert f"not in the replayed run {parent}, so not scored: s/b" in out


@pytest.mark.slow
def test_real_embedded_model_runs_one_case_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "redline.toml").write_text(
        '[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n[providers.local]\nthreads = 2\n',
        encoding="utf-8",
    )
    folder = tmp_path / "geo"
    folder.mkdir()
    (folder / "system.txt").write_text("Answer in one short sentence.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        "name: geo\nprompt:\n  system: system.txt\n  user: '{{q}}'\n"
        "model: local\nsamples: 2\ntier: quality\nmax_tokens: 12\n",
        encoding="utf-8",
    )
    (folder / "capital.yaml").write_text(
        "id: capital\nprovenance: {ticket: T-1, reported: 2026-01-02, note: smoke}\n"
        "vars:\n  q: What is the capital of France?\nassert:\n  - type: max-chars\n"
        "    value: 400\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    code = main(["run", "geo", "--quiet"])
    assert code in (0, 1, 3)
    with RunStore.open(tmp_path / ".redline" / "redline.db") as store:
        [record] = store.runs()
        assert record.model_id.startswith("local:smollm2-135m-instruct-q4_1@sha256:")
        samples = store.samples(record.id)
        assert len(samples) == 2 and all(s.error is None for s in samples)
        assert samples[0].seed != samples[1].seed
        assert all(s.output for s in samples)


def test_escape_output_makes_every_terminal_control_visible() -> None:
    from redline.textsafe import escape_output, preview

    raw = "a\x1b[2Jb\x00c\rd\u202eé中\ud800\x9b\tline\nnext"
    shown = escape_output(raw)
    assert shown == "a\\x1b[2Jb\\x00c\\rd\\u202eé中\\ud800\\x9b\tline\nnext"
    assert escape_output("plain [bold]text[/bold]\n") == "plain [bold]text[/bold]\n"
    assert preview(raw, 12) == "a\\x1b[2Jb\\x…"
    assert "\n" not in preview("one\ntwo") and "\t" not in preview("a\tb")


def test_a_store_that_cannot_be_written_is_exit_2_not_red(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project, "s", {"a": "MODE:json"})
    (project / "blocked").write_text("a file where the store's folder should be\n")
    toml = (project / "redline.toml").read_text(encoding="utf-8")
    (project / "redline.toml").write_text('store = "blocked/redline.db"\n' + toml, encoding="utf-8")
    assert main(["run", "s", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "redline: error:" in err and "Traceback" not in err


def test_a_run_stored_with_an_older_redlines_arguments_resumes_with_them(
    project: Path, llm_server: LoopbackLLMServer
) -> None:
    write_suite(project, "s", {"a": "MODE:json", "b": "MODE:json"})
    assert main(["run", "s", "--case", "a", "--samples", "3", "--quiet"]) == 0
    run_id = latest_run_id(project)
    db_path = project / ".redline" / "redline.db"
    # What a redline from before typed run options stored: no adaptive, judge_blocks or
    # case_samples keys, and a key this one does not know; the run stopped after 2 samples.
    older = {
        "suites": ["s"],
        "cases": ["a"],
        "samples": 3,
        "tier": None,
        "model": None,
        "shard": None,
        "replay": None,
        "judge": False,
        "note": "kept as it is",
    }
    with RunStore.open(db_path) as store:
        store.update_args(run_id, older)
    with sqlite3.connect(db_path) as db:
        db.execute(
            "DELETE FROM assertion_results "
            "WHERE sample_id IN (SELECT id FROM samples WHERE idx = 2)"
        )
        db.execute("DELETE FROM samples WHERE idx = 2")
        db.execute("UPDATE runs SET status = 'interrupted', result = NULL, finished_at = NULL")
    llm_server.reset()
    assert main(["run", "--resume", run_id, "--quiet"]) == 0
    assert llm_server.count() == 1
    with RunStore.open(db_path) as store:
        assert [(c.case_id, c.samples) for c in store.cases(run_id)] == [("a", 3)]
        assert store.run(run_id).args == older


def _same_export(out: Path, run_id: str) -> None:
    """`out` (a `run --out` export) holds what `redline export` of the stored run writes."""
    again = out.parent / f"{out.name}-again"
    assert main(["export", run_id, "--out", str(again)]) == 0
    for name in ("samples.jsonl", "results.json"):
        assert (out / name).read_bytes() == (again / name).read_bytes(), name


def test_the_out_export_of_a_retried_run_is_its_stored_run_line_for_line(
    project: Path, llm_server: LoopbackLLMServer
) -> None:
    """A retry's export holds the samples an earlier process stored with the new ones, and
    none of those it set aside: what the store holds, as `redline export` writes it."""
    cases = {f"ok{i}": f"MODE:json n{i}" for i in range(6)}
    cases |= {"down1": "MODE:500 FAILS:3 d1", "down2": "MODE:500 FAILS:3 d2"}
    write_suite(project, "s", cases, samples=2, tier="quality")
    assert main(["run", "s", "--quiet", "--out", str(project / "first")]) == 3
    run_id = latest_run_id(project)
    _same_export(project / "first", run_id)
    retried = project / "retried"
    assert main(["run", "--retry-transport", run_id, "--quiet", "--out", str(retried)]) == 0
    lines = (retried / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 16 and all('"verdict": "ok"' in line for line in lines)
    _same_export(retried, run_id)


def test_the_out_export_of_a_run_resumed_after_kill_9_holds_every_sample(
    project: Path, llm_server: LoopbackLLMServer
) -> None:
    write_config(project, llm_server, concurrency=2)
    write_suite(project, "s", {f"c{i}": f"MODE:json n{i}" for i in range(4)}, samples=5)
    llm_server.latency_ms = 150
    proc = start_run(project, "s", "--quiet", "--out", "killed")
    wait_for_samples(project / ".redline" / "redline.db", 4)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert not (project / "killed").exists()  # no export of a run that did not end
    llm_server.latency_ms = 0
    run_id = latest_run_id(project)
    assert main(["run", "--resume", run_id, "--quiet", "--out", str(project / "resumed")]) == 0
    lines = (project / "resumed" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 20
    _same_export(project / "resumed", run_id)
