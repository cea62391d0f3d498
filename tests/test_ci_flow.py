"""The CI flow end to end on the loopback server: sharded runs, merge, baseline, reports."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from redline.cli import main
from redline.running.store import RunStore
from redline.suite.shards import shard_of
from servers import LoopbackLLMServer

KEY_ENV = "REDLINE_LOOPBACK_KEY"
ASSERTS = "  - type: is-json\n"
CASES = {f"c{i}": "MODE:json" for i in range(8)} | {"bad": "MODE:preamble"}


def _suite(root: Path) -> None:
    folder = root / "cases" / "flow"
    folder.mkdir(parents=True)
    (folder / "system.txt").write_text("Answer as JSON.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        "name: flow\nprompt:\n  system: system.txt\n  user: '{{q}}'\n"
        "model: fake\nsamples: 2\ntier: contract\n",
        encoding="utf-8",
    )
    for case_id, q in CASES.items():
        (folder / f"{case_id}.yaml").write_text(
            f"id: {case_id}\nprovenance: {{ticket: T-1, reported: 2026-01-02, note: test}}\n"
            f"vars:\n  q: '{q}'\nassert:\n{ASSERTS}",
            encoding="utf-8",
        )


def _project(root: Path, server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `flow` suite on the loopback model, key set, cwd inside."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.chdir(root)
    (root / "redline.toml").write_text(server.redline_toml(), encoding="utf-8")
    _suite(root)


def test_sharded_ci_run_merges_into_one_reportable_run(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _project(tmp_path, llm_server, monkeypatch)
    codes = [main(["run", "--quiet", "--shard", f"{k}/2", "--out", f"shards/{k}"]) for k in (1, 2)]
    assert sorted(codes) == [0, 1]  # the shard holding `bad` is red
    assert main(["merge", "shards/1", "shards/2", "--out", "merged", "--import"]) == 0
    results = json.loads((tmp_path / "merged/results.json").read_text(encoding="utf-8"))
    assert sorted(c["id"] for c in results["cases"]) == sorted(CASES)
    assert results["run"]["result"] == "red"
    merged_id = results["run"]["id"]

    assert main(["baseline", "save", merged_id]) == 0
    baseline = json.loads((tmp_path / "baselines/flow.json").read_text(encoding="utf-8"))
    assert baseline["cases"]["c0"]["golden"]["output"]
    assert baseline["cases"]["bad"]["golden"] is None
    assert main(["baseline", "compare", merged_id]) == 0

    capsys.readouterr()
    assert main(["report", merged_id, "--junit", "out/junit.xml", "--markdown"]) == 0
    root = ET.parse(tmp_path / "out/junit.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("9", "1", "0")
    assert "flow/bad" in capsys.readouterr().out

    with RunStore.open(tmp_path / ".redline/redline.db") as store:
        shard_runs = [r.id for r in store.runs() if r.id != merged_id]
    assert main(["compare", shard_runs[0], merged_id]) == 3  # a shard alone has < 8 cases


def test_a_shard_that_owns_no_case_exports_an_empty_result_that_merge_accepts(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """3 cases over 2 shards can all hash into one shard; the other job must still go green."""
    _project(tmp_path, llm_server, monkeypatch)
    # The smallest split of these cases in which some shard owns none of them.
    n, empty = next(
        (n, k)
        for n in range(2, 2 * len(CASES))
        for k in range(1, n + 1)
        if all(shard_of("flow", c, n) != k for c in CASES)
    )
    assert main(["run", "--quiet", "--shard", f"{empty}/{n}", "--out", "empty"]) == 0
    out = capsys.readouterr().out
    assert "owns no case" in out
    results = json.loads((tmp_path / "empty/results.json").read_text(encoding="utf-8"))
    assert results["cases"] == [] and results["summary"]["result"] == "green"
    assert (tmp_path / "empty/samples.jsonl").read_text(encoding="utf-8") == ""
    folders = []
    for k in range(1, n + 1):
        if k == empty:
            folders.append("empty")
            continue
        assert main(["run", "--quiet", "--shard", f"{k}/{n}", "--out", f"s{k}"]) in (0, 1)
        folders.append(f"s{k}")
    assert main(["merge", *folders, "--out", "merged"]) == 0
    merged = json.loads((tmp_path / "merged/results.json").read_text(encoding="utf-8"))
    assert sorted(c["id"] for c in merged["cases"]) == sorted(CASES)
