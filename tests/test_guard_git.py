"""The guard's command line, its pre-commit hook, and the git states it must survive."""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path

import pytest

from redline.cli import main
from redline.errors import GitError, UsageError
from redline.gitio import (
    INDEX,
    changed_files,
    commits_in_range,
    export_tree,
    file_at,
    merge_base_with_default,
    open_repo,
    repo_state,
    stage_file,
)
from redline.guard import Kind, check_commit, check_range, check_staged, install_hook
from test_guard import BASE_CASE, CASE, TempRepo, base_repo

ISOLATED_GIT = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def loosen(repo: TempRepo, value: int = 800) -> None:
    case = copy.deepcopy(BASE_CASE)
    case["assert"][2]["value"] = value
    repo.write(CASE, case)


def run_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=ISOLATED_GIT, capture_output=True, text=True, check=False
    )


# --------------------------------------------------------------------------- command line


def test_cli_refuses_prompt_and_loosening_in_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = base_repo(tmp_path)
    repo.change_prompt()
    loosen(repo)
    repo.commit("both")
    monkeypatch.chdir(tmp_path)
    assert main(["guard", "--commit", "HEAD"]) == 1
    out = capsys.readouterr().out
    assert "REFUSED" in out
    assert "case 0042-amount-suffix: assert[2] max-chars 400 → 800" in out
    assert "prompt cases/support/system.md: changed" in out
    assert "refused 1 of 1 commit" in out


def test_cli_names_an_unparseable_file_as_the_reason_not_a_prompt_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = base_repo(tmp_path)
    repo.write(CASE, "id: 0042-amount-suffix\nassert: [\n")
    repo.commit("half-edited case")
    monkeypatch.chdir(tmp_path)
    assert main(["guard", "--commit", "HEAD"]) == 1
    out = capsys.readouterr().out
    assert f"{CASE}: new side does not parse" in out
    assert "refused 1 of 1 commit: a file the guard compares does not load" in out
    assert "prompt change and a loosened threshold" not in out


def test_cli_range_and_staged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = base_repo(tmp_path)
    base = repo.repo.head.commit.hexsha
    repo.change_prompt()
    repo.commit("prompt")
    loosen(repo)
    repo.commit("loosen")
    monkeypatch.chdir(tmp_path)
    # Each commit passes on its own; the pull request they make is refused as one change.
    assert main(["guard", "--range", f"{base}..HEAD"]) == 1
    out = capsys.readouterr().out
    assert out.count(": ok") == 2
    assert "as one change (2 commits, as a squash merge lands them): REFUSED" in out
    assert main(["guard", "--range", "HEAD~1..HEAD"]) == 0
    assert capsys.readouterr().out.count(": ok") == 1
    assert main(["guard", "--range", "HEAD..HEAD"]) == 0
    assert "no commits in HEAD..HEAD" in capsys.readouterr().out

    repo.change_prompt()
    loosen(repo, 900)
    repo.stage()
    assert main(["guard", "--staged"]) == 1
    assert "assert[2] max-chars 800 → 900" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["guard"], "--staged, --commit REV or --range A..B"),
        (["guard", "--commit", "no-such-rev"], "unknown revision 'no-such-rev'"),
        (["guard", "--range", "HEAD"], "is not a range"),
    ],
)
def test_cli_usage_errors_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    base_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_cli_outside_a_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["guard", "--staged"]) == 2
    assert "is not inside a git repository" in capsys.readouterr().err


# --------------------------------------------------------------------------- the hook


def test_installed_hook_refuses_a_real_commit(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    hook = install_hook(tmp_path)
    assert os.access(hook, os.X_OK)

    repo.change_prompt()
    loosen(repo)
    run_git(tmp_path, "add", "-A")
    refused = run_git(tmp_path, "commit", "-m", "reword and loosen")
    assert refused.returncode != 0
    assert "assert[2] max-chars 400 → 800" in refused.stdout + refused.stderr
    assert len(list(repo.repo.iter_commits())) == 1

    run_git(tmp_path, "reset", "-q", CASE)
    accepted = run_git(tmp_path, "commit", "-m", "reword only")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert len(list(repo.repo.iter_commits())) == 2

    # `git commit -a` uses a temporary index: the hook must read that one
    loosen(repo, 500)
    repo.change_prompt()
    refused = run_git(tmp_path, "commit", "-a", "-m", "both via -a")
    assert refused.returncode != 0
    assert "max-chars 400 → 500" in refused.stdout + refused.stderr


def test_install_keeps_an_existing_hook(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    hooks = tmp_path / ".git" / "hooks"
    old = hooks / "pre-commit"
    old.write_text('#!/bin/sh\necho ran > "$(git rev-parse --show-toplevel)/old-hook-ran"\n')
    old.chmod(0o755)
    with pytest.raises(UsageError, match="already exists"):
        install_hook(tmp_path)
    assert "old-hook-ran" in old.read_text()

    install_hook(tmp_path, force=True)
    assert "old-hook-ran" in (hooks / "pre-commit.local").read_text()
    install_hook(tmp_path)  # reinstalling over its own hook needs no --force

    repo.change_prompt()
    run_git(tmp_path, "add", "-A")
    result = run_git(tmp_path, "commit", "-m", "prompt only")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "old-hook-ran").exists()


def test_chained_hook_failure_stops_the_commit(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    old = tmp_path / ".git" / "hooks" / "pre-commit"
    old.write_text("#!/bin/sh\necho 'lint failed'\nexit 3\n")
    old.chmod(0o755)
    install_hook(tmp_path, force=True)
    repo.change_prompt()
    run_git(tmp_path, "add", "-A")
    result = run_git(tmp_path, "commit", "-m", "x")
    assert result.returncode != 0
    assert "lint failed" in result.stdout + result.stderr


# --------------------------------------------------------------------------- git states


def test_no_commits_yet(tmp_path: Path) -> None:
    repo = TempRepo(tmp_path)
    repo.write("cases/support/suite.yaml", {"name": "support", "prompt": {"system": "s.md"}})
    repo.write("cases/support/s.md", "Be brief.")
    repo.stage()
    report = check_staged(tmp_path)
    assert "no commits yet" in report.label
    assert [str(f) for f in report.prompt_changes] == [
        "prompt cases/support/s.md: added (used by suite support)"
    ]
    with pytest.raises(GitError, match="has no commits yet"):
        check_commit(tmp_path, "HEAD")
    assert repo_state(tmp_path) == (None, True)


def test_detached_head(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    repo.repo.git.checkout("--detach", "HEAD")
    repo.change_prompt()
    loosen(repo)
    repo.stage()
    assert check_staged(tmp_path).blocked
    sha = repo.commit("detached commit")
    assert check_commit(tmp_path, sha).blocked


def test_shallow_clone_says_what_to_fetch(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    repo = base_repo(origin)
    first = repo.repo.head.commit.hexsha
    repo.change_prompt()
    repo.commit("second")
    loosen(repo)
    repo.commit("third")
    clone = tmp_path / "clone"
    done = run_git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(clone))
    assert done.returncode == 0, done.stderr

    with pytest.raises(GitError, match="shallow clone"):
        check_range(clone, f"{first}..HEAD")
    with pytest.raises(GitError, match="boundary of a shallow clone"):
        check_commit(clone, "HEAD")
    run_git(clone, "fetch", "-q", "--deepen=1")
    assert check_commit(clone, "HEAD").loosenings


def test_submodule_under_suites_cannot_be_compared(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    sha = repo.repo.head.commit.hexsha
    repo.repo.git.update_index("--add", "--cacheinfo", f"160000,{sha},cases/support/vendored")
    repo.repo.git.update_index("--add", "--cacheinfo", f"160000,{sha},third_party/lib")
    report = check_staged(tmp_path)
    find_text = {str(f): f.kind for f in report.findings}
    assert find_text["submodule third_party/lib: changed (not inspected)"] is Kind.NOTE
    broken = [f for f in report.broken if f.subject == "submodule cases/support/vendored"]
    assert broken and "inside the submodule" in broken[0].detail
    assert report.blocked


def test_binary_fixture_is_not_a_problem(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    repo.write("cases/support/fixtures/logo.png", b"\x89PNG\x00\x00binary")
    report = check_commit(tmp_path, repo.commit("add a fixture"))
    assert report.findings == () and not report.blocked


def test_project_in_a_subfolder(tmp_path: Path) -> None:
    repo = TempRepo(tmp_path)
    repo.write("app/pyproject.toml", '[tool.redline]\nsuites = ["evals"]\n')
    suite = {"name": "s", "prompt": {"system": "p.md", "user": "Hi"}, "model": "local"}
    repo.write("app/evals/s/suite.yaml", suite)
    repo.write("app/evals/s/p.md", "Hi.")
    case = {
        "id": "c",
        "provenance": {"ticket": "T-1"},
        "assert": [{"type": "max-chars", "value": 5}],
    }
    repo.write("app/evals/s/c.yaml", case)
    repo.commit("init")
    repo.write("app/evals/s/p.md", "Hello.")
    case["assert"][0]["value"] = 9
    repo.write("app/evals/s/c.yaml", case)
    sha = repo.commit("both")
    report = check_commit(tmp_path / "app", sha)
    assert [str(f) for f in report.findings] == [
        "prompt app/evals/s/p.md: changed (used by suite s)",
        "case c: assert[0] max-chars 5 → 9",
    ]


# --------------------------------------------------------------------------- gitio


def test_repo_state(tmp_path: Path) -> None:
    assert repo_state(tmp_path) == (None, False)
    repo = base_repo(tmp_path / "r")
    sha = repo.repo.head.commit.hexsha
    assert repo_state(tmp_path / "r" / "cases") == (sha, False)
    (tmp_path / "r" / "untracked.txt").write_text("x")
    assert repo_state(tmp_path / "r") == (sha, False)
    repo.change_prompt()
    assert repo_state(tmp_path / "r") == (sha, True)


def test_file_reads_without_checkout(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    first = repo.repo.head.commit.hexsha
    repo.change_prompt()
    repo.stage()
    with open_repo(tmp_path / "cases") as r:
        assert file_at(r, first, "cases/support/system.md") == b"You are a careful support agent.\n"
        staged = file_at(r, INDEX, "cases/support/system.md")
        assert staged is not None and staged.endswith(b"one sentence.\n")
        assert file_at(r, first, "cases/support") is None
        assert file_at(r, INDEX, "missing.txt") is None
        with pytest.raises(GitError, match="unknown revision"):
            file_at(r, "nope", "x")
        written = export_tree(r, first, "cases/support", tmp_path.parent / f"{tmp_path.name}-x")
        assert {p.name for p in written} >= {"suite.yaml", "system.md", "invoice.json"}


def test_merge_base_renames_ranges_and_staging(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    fork = repo.repo.head.commit.hexsha
    repo.repo.git.checkout("-q", "-b", "feature")
    repo.move(CASE, "cases/support/renamed.yaml")
    feature_1 = repo.commit("rename")
    repo.repo.git.checkout("-q", "main")
    repo.write("README.md", "main moves on")
    on_main = repo.commit("main")
    repo.repo.git.checkout("-q", "feature")
    repo.repo.git.merge("-q", "--no-edit", "main")
    with open_repo(tmp_path) as r:
        assert merge_base_with_default(r) == repo.repo.commit("main").hexsha
        changes = changed_files(r, fork, feature_1)
        assert [(c.status, c.old_path, c.new_path) for c in changes] == [
            ("R", CASE, "cases/support/renamed.yaml")
        ]
        plain, merges = commits_in_range(r, f"{fork}..feature")
        assert sorted(plain) == sorted([feature_1, on_main]) and len(merges) == 1
    reports = check_range(tmp_path, f"{fork}..HEAD")
    assert [f.subject for f in reports[-1].findings] == ["merge commit skipped"]

    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    stage_file(tmp_path, Path("a.txt"))
    staged = repo.repo.git.diff("--cached", "--name-only").split()
    assert staged == ["a.txt"]
    with pytest.raises(GitError, match="outside the repository"):
        stage_file(tmp_path, tmp_path.parent / "elsewhere.txt")


def test_merge_base_prefers_origin_head(tmp_path: Path) -> None:
    upstream = base_repo(tmp_path / "up")
    upstream.repo.git.branch("trunk")
    run_git(tmp_path, "clone", "-q", "--branch", "trunk", str(tmp_path / "up"), "down")
    run_git(tmp_path / "down", "checkout", "-q", "-b", "topic")
    with open_repo(tmp_path / "down") as down:
        assert merge_base_with_default(down) == upstream.repo.head.commit.hexsha
    run_git(tmp_path / "down", "remote", "set-head", "origin", "trunk")
    with open_repo(tmp_path / "down") as down:
        assert merge_base_with_default(down) == upstream.repo.head.commit.hexsha


# --------------------------------------------------------------------------- clones


def _two_commits(origin: Path) -> TempRepo:
    repo = base_repo(origin)
    repo.change_prompt()
    loosen(repo)
    repo.commit("prompt and loosening")
    repo.write("README.md", "docs\n")
    repo.commit("docs only")
    return repo


def test_guard_in_an_ordinary_clone_and_after_gc(tmp_path: Path) -> None:
    _two_commits(tmp_path / "origin")
    clone = tmp_path / "clone"
    done = run_git(tmp_path, "clone", "-q", f"file://{tmp_path / 'origin'}", str(clone))
    assert done.returncode == 0, done.stderr
    assert not list((clone / ".git" / "objects").glob("??/*")), "objects should be packed"
    assert check_commit(clone, "HEAD~1").blocked
    assert not check_commit(clone, "HEAD").blocked
    reports = check_range(clone, "HEAD~2..HEAD")
    assert [r.blocked for r in reports] == [True, False]

    origin = tmp_path / "origin"
    assert run_git(origin, "gc", "-q", "--aggressive", "--prune=now").returncode == 0
    assert check_commit(origin, "HEAD~1").blocked
    assert not check_commit(origin, "HEAD").blocked


def test_guard_in_a_shallow_clone_with_enough_depth(tmp_path: Path) -> None:
    _two_commits(tmp_path / "origin")
    clone = tmp_path / "clone"
    url = f"file://{tmp_path / 'origin'}"
    assert run_git(tmp_path, "clone", "-q", "--depth", "2", url, str(clone)).returncode == 0
    assert check_commit(clone, "HEAD").findings == ()
    with pytest.raises(GitError, match="boundary of a shallow clone"):
        check_commit(clone, "HEAD~1")


def test_guard_in_a_partial_clone(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    _two_commits(origin)
    run_git(origin, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    done = run_git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{origin}", str(clone))
    assert done.returncode == 0, done.stderr
    report = check_commit(clone, "HEAD~1")
    assert report.blocked
    assert report.loosenings[0].detail == "assert[2] max-chars 400 → 800"


def test_guard_on_a_grafted_commit(tmp_path: Path) -> None:
    repo = _two_commits(tmp_path)
    base = repo.repo.git.rev_list("--max-parents=0", "HEAD")
    # Graft the last commit straight onto the first: its parent is now the base suite.
    assert run_git(tmp_path, "replace", "--graft", "HEAD", base).returncode == 0
    report = check_commit(tmp_path, "HEAD")
    assert report.blocked  # prompt change and loosening, seen through the graft
