"""`redline pull`, `import` and `triage --pull` against a loopback GitHub API.

The artifacts are zips of real `redline run --out` exports (one run on the loopback LLM
server, re-dated per night), packed as actions/upload-artifact packs them.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
import shutil
import subprocess
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from github_server import LoopbackGitHub, zip_folder
from redline.ci.scaffold import WORKFLOW_FILE, starter_files
from redline.cli import main
from redline.running.exchange import RESULTS_FILE
from redline.running.store import RunStore
from runfactory import write_config
from servers import LoopbackLLMServer
from test_runner import KEY_ENV, write_suite

TOKEN = "ghs_loopback"
REPO = "acme/shop"
QUALITY = "prompt-evals-quality"


@pytest.fixture(scope="module")
def real_export(
    tmp_path_factory: pytest.TempPathFactory, _loopback_server: LoopbackLLMServer
) -> Path:
    """One real nightly export: `steady` passes 5/5, `edge` passes 4/5 (one sample bad)."""
    root = tmp_path_factory.mktemp("nightly")
    _loopback_server.reset()
    (root / "redline.toml").write_text(
        _loopback_server.redline_toml(key_env=KEY_ENV), encoding="utf-8"
    )
    write_suite(
        root / "cases",
        "nightly",
        {"steady": "MODE:json", "edge": "MODE:flaky"},
        samples=5,
        tier="quality",
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_ENV, "sk-test")
        mp.chdir(root)
        assert main(["run", "--quiet", "--out", "out"]) == 0
    results = json.loads((root / "out" / RESULTS_FILE).read_text(encoding="utf-8"))
    passes = {c["id"]: c["passes"] for c in results["cases"]}
    assert passes == {"steady": 5, "edge": 4}
    return root / "out"


def night(export: Path, k: int, into: Path) -> tuple[str, bytes]:
    """The real export re-dated to night k (2026-01-k) under its own run id, zipped."""
    folder = into / f"night-{k:02d}"
    shutil.copytree(export, folder)
    results = json.loads((folder / RESULTS_FILE).read_text(encoding="utf-8"))
    run_id = f"{0xA00000000000 + k:012x}"
    results["run"]["id"] = run_id
    results["run"]["started_at"] = f"2026-01-{k:02d}T03:17:00.000+00:00"
    results["run"]["finished_at"] = f"2026-01-{k:02d}T03:19:00.000+00:00"
    (folder / RESULTS_FILE).write_text(json.dumps(results), encoding="utf-8")
    (folder / "junit.xml").write_text("<testsuites/>", encoding="utf-8")
    return run_id, zip_folder(folder)


@pytest.fixture
def github() -> Iterator[LoopbackGitHub]:
    with LoopbackGitHub(REPO, TOKEN, page_size=7) as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, github: LoopbackGitHub, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh clone: config, no store; GitHub's API and token in the environment."""
    root = tmp_path / "clone"
    root.mkdir()
    write_config(root)
    monkeypatch.chdir(root)
    monkeypatch.setenv("GITHUB_API_URL", github.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    for name in ("GH_TOKEN", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    return root


def add_nights(
    github: LoopbackGitHub, export: Path, tmp_path: Path, nights: range
) -> dict[int, str]:
    ids = {}
    for k in nights:
        run_id, data = night(export, k, tmp_path / "nights")
        github.add_run(k + 100, f"2026-01-{k:02d}T03:17:00Z", {QUALITY: data})
        ids[k] = run_id
    return ids


def stored_ids(root: Path) -> set[str]:
    with RunStore.open(root / ".redline" / "redline.db") as store:
        return {r.id for r in store.runs()}


def test_thirty_nights_give_history_and_a_marginal_case_and_nothing_twice(
    github: LoopbackGitHub,
    project: Path,
    real_export: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ids = add_nights(github, real_export, tmp_path, range(1, 31))
    github.add_run(200, "2026-01-30T12:00:00Z", {QUALITY: b"x"}, branch="feature")
    github.add_run(201, "2026-01-31T03:17:00Z", {QUALITY: b"x"}, status="in_progress")

    assert main(["pull", "--repo", REPO]) == 0
    err = capsys.readouterr().err
    assert "30 CI run(s) looked at, 30 run(s) imported" in err
    assert stored_ids(project) == set(ids.values())
    pages = [r for r in github.requests if r.path.endswith(f"/workflows/{github.workflow}/runs")]
    assert len(pages) == 5  # 30 runs, 7 per page: followed through Link headers
    assert all("authorization" not in r.headers for r in github.requests if r.server == "blob")
    assert len(github.downloads()) == 30

    assert main(["pull", "--repo", REPO]) == 0
    assert "0 run(s) imported, 30 artifact(s) pulled before" in capsys.readouterr().err
    assert len(github.downloads()) == 30  # nothing downloaded again

    assert main(["history", "edge"]) == 0
    out = capsys.readouterr().out
    assert "30 scheduled run(s)" in out
    assert "marginal: within one sample of its required count for 30 consecutive runs" in out
    assert main(["history", "steady"]) == 0
    assert "not marginal" in capsys.readouterr().out

    assert main(["runs", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "CI #130" in out and ids[30] in out
    assert main(["show", ids[30]]) == 0
    ci_run = github.runs[29]
    assert f"pulled from CI #130 (acme/shop) {ci_run_url(ci_run.id)}" in capsys.readouterr().out
    assert main(["runs", "--limit", "1", "--format", "json"]) == 0
    [latest] = json.loads(capsys.readouterr().out)["runs"]
    assert latest["ci"]["run_number"] == 130 and latest["ci"]["url"] == ci_run_url(ci_run.id)


def ci_run_url(ci_run_id: int) -> str:
    return f"https://github.com/{REPO}/actions/runs/{ci_run_id}"


def test_expired_artifacts_are_skipped_and_counted(
    github: LoopbackGitHub,
    project: Path,
    real_export: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ids = add_nights(github, real_export, tmp_path, range(1, 4))
    github.add_run(90, "2025-12-01T03:17:00Z", {QUALITY: None})  # listed as expired
    github.gone.add(github.runs[0].artifacts[0].id)  # expires between listing and download

    assert main(["pull", "--repo", REPO]) == 0
    err = capsys.readouterr().err
    assert "2 run(s) imported" in err and "2 expired artifact(s) skipped" in err
    assert stored_ids(project) == {ids[2], ids[3]}


def test_a_failed_download_keeps_the_rest_and_the_next_pull_fetches_it(
    github: LoopbackGitHub,
    project: Path,
    real_export: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("redline.ci.github.RetryPolicy.backoff_s", lambda *a: 0.0)
    ids = add_nights(github, real_export, tmp_path, range(1, 4))
    broken = github.runs[1].artifacts[0].id
    github.blob_failures[broken] = float("inf")

    assert main(["pull", "--repo", REPO]) == 2
    err = capsys.readouterr().err
    assert "2 run(s) imported" in err and "1 artifact(s) failed" in err
    assert "HTTP 500" in err and "run `redline pull` again" in err
    assert stored_ids(project) == {ids[1], ids[3]}
    assert sum(1 for r in github.requests if r.path == f"/blob/{broken}") == 4  # 1 + 3 retries

    github.blob_failures[broken] = 0
    assert main(["pull", "--repo", REPO]) == 0
    assert "1 run(s) imported" in capsys.readouterr().err
    assert stored_ids(project) == set(ids.values())


def test_a_rate_limit_that_resets_soon_is_waited_out(
    github: LoopbackGitHub,
    project: Path,
    real_export: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ids = add_nights(github, real_export, tmp_path, range(1, 4))
    github.rate_limit(remaining=3, reset_in_s=1.0)
    started = time.monotonic()
    assert main(["pull", "--repo", REPO]) == 0
    assert time.monotonic() - started >= 0.5
    assert stored_ids(project) == set(ids.values())
    assert any(r.status == 403 for r in github.requests)


def test_a_secondary_rate_limit_is_waited_out_as_retry_after_says(
    github: LoopbackGitHub, project: Path, real_export: Path, tmp_path: Path
) -> None:
    ids = add_nights(github, real_export, tmp_path, range(1, 3))
    github.secondary_limited = 2
    started = time.monotonic()
    assert main(["pull", "--repo", REPO]) == 0
    assert time.monotonic() - started >= 2.0
    assert [r.status for r in github.requests[:3]] == [429, 429, 200]
    assert stored_ids(project) == set(ids.values())


def test_many_artifacts_are_paged_and_other_uploads_are_read_once(
    github: LoopbackGitHub,
    project: Path,
    real_export: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A run with more artifacts than a page holds; most are reports, not exports."""
    run_id, export = night(real_export, 1, tmp_path / "nights")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "junit.xml").write_text("<testsuites/>", encoding="utf-8")
    others = {f"reports-{i}": zip_folder(reports) for i in range(9)}
    github.add_run(1, "2026-01-01T03:17:00Z", {**others, QUALITY: export})
    assert main(["pull", "--repo", REPO]) == 0
    assert "1 run(s) imported, 9 artifact(s) without a redline export" in capsys.readouterr().err
    assert stored_ids(project) == {run_id}
    assert len(github.downloads()) == 10
    listings = [r for r in github.requests if r.path.endswith("/artifacts")]
    assert len(listings) == 2  # 10 artifacts, 7 per page
    assert main(["pull", "--repo", REPO]) == 0
    assert "10 artifact(s) pulled before" in capsys.readouterr().err
    assert len(github.downloads()) == 10


def test_a_rate_limit_far_away_stops_with_a_clear_message_keeping_the_imports(
    github: LoopbackGitHub,
    project: Path,
    real_export: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    add_nights(github, real_export, tmp_path, range(1, 6))
    # repo, 1 page of runs, 5 artifact lists, then 2 downloads before the limit is used up
    github.rate_limit(remaining=9, reset_in_s=3600)
    assert main(["pull", "--repo", REPO, "--rate-limit-wait", "60"]) == 2
    err = capsys.readouterr().err
    assert "rate limit is used up until" in err
    assert "everything imported so far is kept" in err
    assert len(stored_ids(project)) == 2


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("wrong-token", "GitHub refused the token (HTTP 401 Bad credentials)"),
        ("no-token", "GitHub needs a token"),
        # A public repository lists its runs to anyone; its artifacts still need a token.
        ("public-no-token", "needs a token for artifact prompt-evals-quality: set GITHUB_TOKEN"),
        ("forbidden", "needs read access to Actions of acme/shop"),
        ("no-repo", "GitHub has no repository acme/nothing"),
        ("no-workflow", "no workflow 'nightly.yml' in acme/shop"),
    ],
)
def test_refusals_say_what_to_do(
    setup: str,
    expected: str,
    github: LoopbackGitHub,
    project: Path,
    real_export: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    add_nights(github, real_export, tmp_path, range(1, 2))
    argv = ["pull", "--repo", REPO]
    if setup == "wrong-token":
        monkeypatch.setenv("GITHUB_TOKEN", "ghs_wrong")
    elif setup.endswith("no-token"):
        monkeypatch.delenv("GITHUB_TOKEN")
        monkeypatch.setenv("PATH", str(tmp_path / "no-gh"))  # no `gh` to ask either
        github.private = setup == "no-token"
    elif setup == "forbidden":
        github.forbidden = True
    elif setup == "no-repo":
        argv = ["pull", "--repo", "acme/nothing"]
    else:
        argv += ["--workflow", "nightly.yml"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert TOKEN not in err and "ghs_wrong" not in err
    assert stored_ids(project) == set()


def test_repo_from_the_origin_remote_token_from_gh_or_gh_token(
    github: LoopbackGitHub,
    project: Path,
    real_export: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ids = add_nights(github, real_export, tmp_path, range(1, 3))
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(
        ["git", "remote", "add", "origin", f"git@github.com:{REPO}.git"], cwd=project, check=True
    )
    monkeypatch.delenv("GITHUB_TOKEN")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"  # the GitHub CLI, logged in: `gh auth token` prints its token
    gh.write_text(f'#!/bin/sh\n[ "$1 $2" = "auth token" ] && echo {TOKEN}\n', encoding="utf-8")
    gh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    assert main(["pull", "--last", "1"]) == 0
    assert stored_ids(project) == {ids[2]}
    monkeypatch.setenv("PATH", os.environ["PATH"].split(":", 1)[1])
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    assert main(["pull", "--since", "2026-01-01"]) == 0
    assert stored_ids(project) == set(ids.values())
    capsys.readouterr()
    assert main(["pull", "--branch", "release"]) == 0
    assert "no finished run of prompt-evals.yml on branch release of acme/shop" in (
        capsys.readouterr().err
    )


def test_shards_of_a_merged_night_stay_out_of_the_history(
    github: LoopbackGitHub,
    project: Path,
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The generated nightly uploads each shard and the merged run: only the merged one counts."""
    ci = tmp_path / "ci"
    ci.mkdir()
    (ci / "redline.toml").write_text(llm_server.redline_toml(key_env=KEY_ENV), encoding="utf-8")
    write_suite(ci / "cases", "nightly", {f"c{i}": "MODE:json" for i in range(6)})
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.chdir(ci)
    for k in (1, 2):
        assert main(["run", "--quiet", "--shard", f"{k}/2", "--out", f"out/shard-{k}"]) == 0
    assert main(["merge", "out/shard-1", "out/shard-2", "--out", "out/quality"]) == 0
    merged_id = json.loads((ci / "out/quality" / RESULTS_FILE).read_text())["run"]["id"]
    github.add_run(
        7,
        "2026-02-01T03:17:00Z",
        {
            "prompt-evals-quality-shard-1": zip_folder(ci / "out/shard-1"),
            "prompt-evals-quality-shard-2": zip_folder(ci / "out/shard-2"),
            QUALITY: zip_folder(ci / "out/quality"),
        },
    )
    monkeypatch.chdir(project)
    monkeypatch.setattr("redline.ci.github.RetryPolicy.backoff_s", lambda *a: 0.0)
    merged_artifact = github.runs[0].artifacts[2].id
    github.blob_failures[merged_artifact] = float("inf")
    assert main(["pull", "--repo", REPO]) == 2
    assert stored_ids(project) == set()  # no shard imported alone while its merge is missing
    github.blob_failures[merged_artifact] = 0
    assert main(["pull", "--repo", REPO]) == 0
    assert stored_ids(project) == {merged_id}


def test_import_takes_a_zip_and_a_folder_of_several_exports(
    project: Path, real_export: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    ids = []
    for k in (1, 2, 3):
        run_id, data = night(real_export, k, tmp_path / "nights")
        ids.append(run_id)
        (downloads / f"night-{k}.zip").write_bytes(data)
    shutil.copytree(tmp_path / "nights" / "night-03", downloads / "unpacked" / "night-03")

    assert main(["import", str(downloads / "night-1.zip")]) == 0
    assert main(["import", str(downloads / "night-1.zip")]) == 2  # one export: refused twice
    assert "already in the store" in capsys.readouterr().err
    assert main(["import", str(downloads)]) == 0
    out = capsys.readouterr().out
    assert "2 run(s) imported, 2 already in the store" in out
    assert stored_ids(project) == set(ids)

    not_export = tmp_path / "other.zip"
    with zipfile.ZipFile(not_export, "w") as archive:
        archive.writestr("readme.txt", "not an export")
    assert main(["import", str(not_export)]) == 2
    assert "holds no `redline export`" in capsys.readouterr().err

    # A zip packed by hand: several exports in sub-folders. Beside it, a damaged export: the
    # good one is imported, the bad one named with its line, exit 2.
    run_id, _ = night(real_export, 4, tmp_path / "nights")
    more = tmp_path / "more"
    more.mkdir()
    (more / "night-4.zip").write_bytes(zip_folder(tmp_path / "nights", prefix="nightly/"))
    bad = more / "bad"
    shutil.copytree(tmp_path / "nights" / "night-03", bad)
    with (bad / "samples.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    assert main(["import", str(more)]) == 2
    captured = capsys.readouterr()
    assert f"imported run {run_id}" in captured.out
    assert f"{bad}/samples.jsonl:11: malformed sample" in captured.err
    assert run_id in stored_ids(project)


def test_the_generated_nightly_report_includes_earlier_nights(
    github: LoopbackGitHub,
    project: Path,
    real_export: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The quality-report job's own commands, in order, as Actions runs them."""
    workflow = yaml.safe_load(starter_files()[WORKFLOW_FILE])
    assert workflow["permissions"]["actions"] == "read"
    steps = workflow["jobs"]["quality-report"]["steps"]
    pull_step = next(s for s in steps if str(s.get("run", "")).startswith("redline pull"))
    assert pull_step["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    assert pull_step["continue-on-error"] is True
    merge_step = next(s for s in steps if str(s.get("run", "")).startswith("redline merge"))
    assert steps.index(pull_step) < steps.index(merge_step)

    add_nights(github, real_export, tmp_path, range(1, 6))
    # Tonight's workflow run is in progress: its shards are uploaded, its report is not.
    github.add_run(106, "2026-01-06T03:17:00Z", {}, status="in_progress")
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    monkeypatch.setenv("GITHUB_RUN_ID", str(github.runs[-1].id))
    night(real_export, 6, project / "shards")

    for step in (pull_step, merge_step):
        words = shlex.split(step["run"].splitlines()[0])[1:]
        argv = [m for w in words for m in (sorted(glob.glob(w)) if "*" in w else [w])]
        assert main(argv) == 0
    # The rest of the merge step hands the merged run's id to the report step.
    outputs = tmp_path / "github-output"
    rest = "\n".join(merge_step["run"].splitlines()[1:])
    subprocess.run(
        ["bash", "-eo", "pipefail", "-c", rest],
        env=os.environ | {"GITHUB_OUTPUT": str(outputs)},
        check=True,
    )
    [(name, run_id)] = [line.split("=", 1) for line in outputs.read_text().splitlines()]
    assert name == "run_id"
    capsys.readouterr()
    report_step = next(s for s in steps if str(s.get("run", "")).startswith("redline report"))
    assert report_step["env"]["RUN_ID"] == "${{ steps.merge.outputs.run_id }}"
    words = shlex.split(report_step["run"].replace("\\\n", " "))
    assert words[-2:] == [">>", "$GITHUB_STEP_SUMMARY"]
    assert words[2] == "$RUN_ID"
    assert main([*words[1:2], run_id, *words[3:-2]]) == 0
    summary = capsys.readouterr().out
    page = (project / "out/quality/report.html").read_text(encoding="utf-8")
    assert "Against the previous run <code>a00000000005</code>" in page
    assert "CI #105" in page and "marginal for 6 runs (24/30)" in page
    assert "### Marginal cases (1)" in summary
    assert "| nightly/edge | 6 | 24/30 (80%) | 80% |" in summary
    last_night = github.runs[4]
    assert (
        f"### Against the previous run `{0xA00000000005:012x}` (2026-01-05 03:17 UTC, "
        f"[CI \\#105](<{ci_run_url(last_night.id)}>))"
    ) in summary
    # Two cases are too few for a content comparison: the report says so instead.
    assert r"Content comparison withheld: run a00000000005: only 2 case\(s\) evaluated" in summary


def test_triage_pull_opens_last_nights_run_with_its_ci_link(
    github: LoopbackGitHub,
    project: Path,
    real_export: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From a fresh clone (no store): one command pulls and opens the latest nightly."""
    from textual.pilot import Pilot
    from textual.widgets import Static

    from redline_tui.app import TriageApp
    from redline_tui.screens.run import RunScreen

    ids = add_nights(github, real_export, tmp_path, range(1, 4))
    _, manual = night(real_export, 4, tmp_path / "manual")
    github.add_run(160, "2026-01-04T11:00:00Z", {QUALITY: manual}, event="workflow_dispatch")
    seen: dict[str, str] = {}
    run_app = TriageApp.run

    def run_headless(app: TriageApp) -> None:
        """The real app on a headless driver: wait for the run to load, read the header."""

        async def read_header(pilot: Pilot[object]) -> None:
            for _ in range(200):
                await pilot.pause(0.02)
                screen = app.screen
                if isinstance(screen, RunScreen) and screen.run is not None and screen.marks:
                    seen["run"] = screen.run.id
                    seen["header"] = str(screen.query_one("#run-header", Static).render())
                    edge = screen.marks["nightly/edge"]
                    seen["edge"] = f"{edge.history} marginal={edge.marginal}"
                    break
            app.exit()

        run_app(app, headless=True, size=(100, 30), auto_pilot=read_header)

    monkeypatch.setattr(TriageApp, "run", run_headless)
    # The app runs headless here; on the command line it needs a terminal.
    monkeypatch.setattr("redline.cli.triage.require_terminal", lambda command, instead: None)
    assert not (project / ".redline").exists()
    assert main(["triage", "--pull", "--repo", REPO]) == 0
    assert seen["run"] == ids[3]  # the latest scheduled run, not the manual one after it
    assert f"pulled from CI #103 {ci_run_url(github.runs[2].id)}" in seen["header"]
    # Its history, every night up to this one, and three nights at the edge: marginal.
    assert seen["edge"] == "(0.8, 0.8, 0.8) marginal=True"
    assert len(stored_ids(project)) == 4


@pytest.mark.parametrize(
    "remote",
    [
        "git@github.com:acme/shop.git",
        "https://github.com/acme/shop",
        "https://github.com/acme/shop.git/",
        "ssh://git@ghe.example.com:2222/acme/shop.git",
    ],
)
def test_the_repository_is_read_from_any_form_of_origin(
    remote: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redline.ci.github import resolve_repo

    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "remote", "add", "origin", remote], cwd=tmp_path, check=True)
    assert resolve_repo(None, tmp_path) == REPO
    assert resolve_repo("other/repo", tmp_path) == "other/repo"
    monkeypatch.setenv("GITHUB_REPOSITORY", "ci/repo")  # as Actions sets it
    assert resolve_repo(None, tmp_path) == "ci/repo"
