"""Typed errors: each kind is defined once, maps to one exit code, and is caught by type."""

from __future__ import annotations

import importlib
import io
import pkgutil
import sqlite3
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import redline
from redline import errors, gitio
from redline.ci.shard import merge_exports
from redline.cli import ERROR_EXIT_CODES, INTERRUPTED, ExitCode, exit_code, main, run_command
from redline.errors import (
    AmbiguousRunId,
    CaseInSeveralSuites,
    CaseNotFound,
    ExportUnreadable,
    GitUnavailable,
    NoExport,
    Problem,
    ProblemsError,
    RedlineError,
    RunAlreadyStored,
    RunNotFound,
    ShardMissing,
    StoreMissing,
    UsageError,
)
from redline.gitio import open_repo
from redline.running.exchange import export_run
from redline.running.store import RunStore
from runfactory import OK, CaseSpec, RunSpec, write_config, write_run


def _every_error_kind() -> set[type[RedlineError]]:
    for module in pkgutil.walk_packages(redline.__path__, "redline."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)

    def below(kind: type[RedlineError]) -> Iterator[type[RedlineError]]:
        for sub in kind.__subclasses__():
            yield sub
            yield from below(sub)

    kinds: set[type[RedlineError]] = {RedlineError, *below(RedlineError)}
    return {k for k in kinds if k.__module__.startswith("redline")}


def test_every_error_kind_is_defined_in_errors_and_listed_in_the_exit_code_table() -> None:
    kinds = _every_error_kind()
    assert {k for k in kinds if k.__module__ != errors.__name__} == set()
    assert {k for k in kinds if k not in ERROR_EXIT_CODES} == set()


def test_no_error_ever_exits_as_a_regression() -> None:
    # 1 means "the prompt regressed" to CI; 0 and 3 are verdicts an error cannot give.
    assert {
        kind: code
        for kind, code in ERROR_EXIT_CODES.items()
        if code in (ExitCode.GREEN, ExitCode.RED, ExitCode.INCONCLUSIVE)
    } == {}


class _UnlistedCaseError(CaseNotFound):
    """A kind added without its own row: it takes its nearest listed base's code."""


EXIT_TABLE: list[tuple[BaseException, int]] = [
    (UsageError("--last must be at least 1"), ExitCode.USAGE),
    (errors.ConfigError("model alias 'x' is not pinned"), ExitCode.USAGE),
    (ProblemsError([Problem("a.yaml", 1, 1, "bad")]), ExitCode.USAGE),
    (errors.CredentialsRejected("key refused"), ExitCode.USAGE),
    (errors.EndpointUnreachable("connection refused"), ExitCode.USAGE),
    (errors.RunStopped("stopped"), ExitCode.USAGE),
    (errors.ProxyUnsupported("$HTTPS_PROXY is not a proxy"), ExitCode.USAGE),
    (StoreMissing(Path("runs.db")), ExitCode.USAGE),
    (errors.StoreFull(Path("runs.db"), kept=3, run_id="abc"), ExitCode.USAGE),
    (errors.StoreCorrupt(Path("runs.db"), "file is not a database"), ExitCode.USAGE),
    (errors.RunLocked("run abc is being resumed by pid 1"), ExitCode.USAGE),
    (RunNotFound("abc", Path("runs.db")), ExitCode.USAGE),
    (AmbiguousRunId("a", ["a1", "a2"]), ExitCode.USAGE),
    (RunAlreadyStored("abc", Path("runs.db")), ExitCode.USAGE),
    (errors.RunNotFinished("run abc is running"), ExitCode.USAGE),
    (CaseNotFound("no case x"), ExitCode.USAGE),
    (errors.CaseInSeveralSuites("c1", ["a", "b"]), ExitCode.USAGE),
    (_UnlistedCaseError("no case y"), ExitCode.USAGE),
    (errors.BaselineMissing("no baseline"), ExitCode.USAGE),
    (errors.NoExport("no export"), ExitCode.USAGE),
    (errors.ExportUnreadable("x.zip: not a readable zip file"), ExitCode.USAGE),
    (ShardMissing([Problem("x", 0, 0, "no export of shard 2/3")], ["2/3"]), ExitCode.USAGE),
    (errors.GitError("not a repository"), ExitCode.USAGE),
    (errors.GitCommandError(["status"], "fatal"), ExitCode.USAGE),
    (GitUnavailable(), ExitCode.USAGE),
    (errors.CiError("rate limited"), ExitCode.USAGE),
    (errors.ArtifactFailed("download failed"), ExitCode.USAGE),
    (errors.ArtifactExpired("expired"), ExitCode.USAGE),
    # The environment failed (disk full, a locked store): a usage/configuration error.
    (OSError(28, "No space left on device"), ExitCode.USAGE),
    (PermissionError(13, "Permission denied"), ExitCode.USAGE),
    (sqlite3.OperationalError("database is locked"), ExitCode.USAGE),
    (KeyboardInterrupt(), INTERRUPTED),
]


@pytest.mark.parametrize(
    ("error", "code"), EXIT_TABLE, ids=[type(e).__name__ for e, _ in EXIT_TABLE]
)
def test_exit_code_of_each_error(
    error: BaseException, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_code(error) == code

    def handler(_: object) -> int:
        raise error

    assert run_command(handler, object()) == code  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert err.startswith("redline: ")
    if isinstance(error, ProblemsError):
        assert f"1 problem(s) found:\n  {error.problems[0]}\n" in err


def test_an_error_outside_the_contract_is_not_swallowed() -> None:
    with pytest.raises(ZeroDivisionError):
        exit_code(ZeroDivisionError())


def test_messages_say_what_to_do_next() -> None:
    assert "`redline runs`" in str(RunNotFound("abc", Path("runs.db")))
    assert "give more of the id" in str(AmbiguousRunId("a", ["a1", "a2"]))
    assert "run `redline run` first" in str(StoreMissing(Path("runs.db")))
    assert "install git" in str(GitUnavailable())


def test_commands_end_with_typed_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path)
    with pytest.raises(StoreMissing):
        main_raising(["show", "abc"])
    with RunStore.open(tmp_path / ".redline" / "redline.db") as store:
        for run_id in ("abc1", "abc2"):
            write_run(store, RunSpec(run_id, [CaseSpec("c1", [OK] * 5)]))
    with pytest.raises(RunNotFound) as missing:
        main_raising(["show", "zzz"])
    assert missing.value.run_id == "zzz"
    with pytest.raises(AmbiguousRunId) as ambiguous:
        main_raising(["show", "abc"])
    assert ambiguous.value.run_ids == ("abc1", "abc2")
    with pytest.raises(CaseNotFound):
        main_raising(["show", "abc1", "nope"])
    assert main(["show", "zzz"]) == ExitCode.USAGE


def main_raising(argv: list[str]) -> int:
    """`redline ARGV`'s handler, run without the top-level handler (the error it ends with)."""
    from redline.cli import build_parser

    args = build_parser().parse_args(argv)
    return int(args.handler(args))


def _exports(tmp_path: Path, shards: list[tuple[str, tuple[int, int] | None]]) -> list[Path]:
    folders = []
    with RunStore.open(tmp_path / "ci.db") as store:
        for run_id, shard in shards:
            args = {"shard": list(shard)} if shard else {}
            write_run(store, RunSpec(run_id, [CaseSpec(f"case-{run_id}", [OK] * 5)], args=args))
            folders.append(export_run(store, run_id, tmp_path / run_id))
    return folders


def test_merge_names_the_folder_that_gave_a_run_first(tmp_path: Path) -> None:
    # The merge tells "the same run again" apart from other unreadable exports by the
    # error's type: the problem names the run and the folder that brought it first.
    first, second = _exports(tmp_path, [("s1", None), ("s2", None)])
    copy = tmp_path / "copy-of-s1"
    copy.mkdir()
    for name in ("results.json", "samples.jsonl"):
        (copy / name).write_bytes((first / name).read_bytes())
    with pytest.raises(ProblemsError) as err:
        merge_exports([first, second, copy])
    [problem] = err.value.problems
    assert problem.path == str(copy / "results.json")
    assert problem.message == f"the same run (s1) as {first}"
    assert problem.hint == "give each shard once"


def test_a_run_already_stored_carries_its_id(tmp_path: Path) -> None:
    [folder] = _exports(tmp_path, [("s1", None)])
    from redline.running.exchange import import_run

    with RunStore.open(tmp_path / "local.db") as store:
        import_run(store, folder)
        with pytest.raises(RunAlreadyStored) as err:
            import_run(store, folder)
    assert err.value.run_id == "s1"


def test_a_merge_without_a_shard_says_which_by_type(tmp_path: Path) -> None:
    folders = _exports(tmp_path, [("a", (1, 3)), ("c", (3, 3))])
    with pytest.raises(ShardMissing) as err:
        merge_exports(folders)
    assert err.value.missing == ("2/3",)
    assert "no export of shard 2/3" in str(err.value)
    # Other refusals stay a plain list of problems.
    with pytest.raises(ProblemsError) as other:
        merge_exports([folders[0], folders[0]])
    assert not isinstance(other.value, ShardMissing)


def test_git_missing_from_path_is_said_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    with open_repo(tmp_path) as repo:
        monkeypatch.setitem(gitio._GIT_ENV, "PATH", str(tmp_path / "no-programs-here"))
        with pytest.raises(GitUnavailable):
            repo.run("status")
        with pytest.raises(GitUnavailable):
            repo.object("HEAD")
    with pytest.raises(GitUnavailable):
        open_repo(tmp_path)
    assert main(["guard", "--staged"]) == ExitCode.USAGE
    assert "the `git` program was not found: install git" in capsys.readouterr().err


def test_exports_that_are_not_there_or_cannot_be_read_are_told_apart(tmp_path: Path) -> None:
    from redline.running.exchange import read_export, read_zip

    with pytest.raises(ExportUnreadable, match="not a readable zip file"):
        read_zip(io.BytesIO(b"not a zip"), "junk.zip")
    other = io.BytesIO()
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("coverage/index.html", "<html></html>")
    with pytest.raises(NoExport):
        read_zip(other, "coverage.zip")
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoExport):
        read_export(tmp_path / "empty")
    [folder] = _exports(tmp_path, [("s1", None)])
    (folder / "results.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ExportUnreadable, match="not valid JSON"):
        read_export(folder)


def test_a_case_id_in_two_suites_asks_for_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path)
    cases = [CaseSpec("c1", [OK] * 5, suite="suite-a"), CaseSpec("c1", [OK] * 5, suite="suite-b")]
    with RunStore.open(tmp_path / ".redline" / "redline.db") as store:
        write_run(store, RunSpec("r1", cases))
    with pytest.raises(CaseInSeveralSuites) as err:
        main_raising(["history", "c1"])
    assert err.value.suites == ("suite-a", "suite-b")
    assert main(["history", "c1", "--suite", "suite-b"]) == ExitCode.GREEN
    assert main(["show", "r1", "c1"]) == ExitCode.USAGE
    assert "pick one with --suite" in capsys.readouterr().err
