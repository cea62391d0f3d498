"""Triage and the guard with your code as the target: the reference arm runs the old
template through the old code (a temporary git worktree); an http target says it cannot."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import git
import pytest

from exampleapp import PROMPT, write_app
from redline.config import parse_config
from redline.deciding.cause import ArmKind, Settings, analyse
from redline.guard import check_commit
from redline.running.options import RunOptions
from redline.running.runner import run_suites
from redline.running.store import RunStore
from redline.suite.cases import load_suites
from redline.vocabulary.causes import Cause
from redline.vocabulary.records import CaseOutcome, RunRecord
from servers import LoopbackLLMServer

TEMPLATE = "supportbot/prompts/answer.j2"
#: The template regression: the formal-tone branch is gone, so the reply never says it.
BROKEN = PROMPT.replace(
    '{% if tone == "formal" %}Be formal.{% else %}Be friendly.{% endif %}', "Be friendly."
)


class AppRepo:
    def __init__(self, root: Path, target: str = "python") -> None:
        self.root = root
        write_app(root, target)
        (root / "redline.toml").write_text(
            'concurrency = 2\nsuites = ["cases"]\n[models]\n', encoding="utf-8"
        )
        (root / ".gitignore").write_text(".redline/\n__pycache__/\n", encoding="utf-8")
        self.repo = git.Repo.init(root, initial_branch="main")
        with self.repo.config_writer() as cfg:
            cfg.set_value("user", "name", "Test")
            cfg.set_value("user", "email", "test@example.invalid")
            cfg.set_value("commit", "gpgsign", "false")
        self.commit("the support bot and its suite")
        self.store = RunStore.open(root / ".redline" / "redline.db")

    def commit(self, message: str) -> str:
        self.repo.git.add(A=True)
        return self.repo.index.commit(message).hexsha

    def run(self) -> RunRecord:
        config = parse_config(self.root / "redline.toml")
        return run_suites(load_suites(config.suites, config), config, self.store, RunOptions())

    def red_case(self, run: RunRecord):  # type: ignore[no-untyped-def]
        return next(c for c in self.store.cases(run.id) if c.case_id == "refund-window")


@pytest.fixture
def app_repo(
    tmp_path: Path, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch
) -> AppRepo:
    monkeypatch.setenv("LOOPBACK_BASE_URL", llm_server.openai_base_url)
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    return AppRepo(tmp_path / "repo")


def _regression(app_repo: AppRepo):  # type: ignore[no-untyped-def]
    """A green run, then a red run on a branch whose template lost the formal tone."""
    green = app_repo.run()
    assert app_repo.red_case(green).result is CaseOutcome.PASS
    app_repo.repo.git.checkout("-b", "shorter-prompt")
    (app_repo.root / TEMPLATE).write_text(BROKEN, encoding="utf-8")
    app_repo.commit("one tone for everyone")
    red = app_repo.run()
    case = app_repo.red_case(red)
    assert case.result is CaseOutcome.FAIL
    config = parse_config(app_repo.root / "redline.toml")
    return analyse(app_repo.store, config, red, case, Settings(budget=6))


def test_the_reference_worktree_arm_finds_the_template_regression(app_repo: AppRepo) -> None:
    diagnosis = _regression(app_repo)
    assert diagnosis.cause is Cause.PROMPT, diagnosis.sentence
    assert any(f"target prompt file {TEMPLATE}" in c.detail for c in diagnosis.changes)
    reference = next(a for a in diagnosis.arms if a.kind is ArmKind.REFERENCE_PROMPT)
    assert reference.passes == reference.samples > 0
    # the temporary worktrees are gone with the analysis
    assert app_repo.repo.git.worktree("list").count("\n") == 0


def test_the_guard_refuses_a_template_edit_with_a_loosening(app_repo: AppRepo) -> None:
    (app_repo.root / TEMPLATE).write_text(BROKEN, encoding="utf-8")
    case = app_repo.root / "cases" / "support" / "refund-window.yaml"
    text = case.read_text(encoding="utf-8")
    case.write_text(text.replace('  - {type: contains, value: "Be formal."}\n', ""), "utf-8")
    app_repo.commit("one tone, and stop checking it")
    report = check_commit(app_repo.root, "HEAD")
    assert report.blocked
    assert any(TEMPLATE in f.subject for f in report.prompt_changes)
    assert report.loosenings


def test_an_http_target_skips_the_reference_arm_and_says_why(
    tmp_path: Path, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoint serves the repository's own code (the app re-reads its template), so
    the regression shows in the red run, but the endpoint cannot serve the old revision."""
    monkeypatch.setenv("LOOPBACK_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("SUPPORTBOT_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("APP_KEY", "k-secret-123")
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.chdir(root)
    write_app(root)
    sys.path.insert(0, str(root))
    try:
        from supportbot.server import serve  # type: ignore[import-not-found]

        server = serve()
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/ask"
        http = (
            f"http:\n  url: {url}\n  headers: {{x-app-key: '${{APP_KEY}}'}}\n"
            "  body: {question: '{{ question }}', tone: '{{ tone }}'}\n  answer: $.data.reply"
        )
        app_repo = AppRepo(root, http)
        diagnosis = _regression(app_repo)
        server.shutdown()
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m.startswith("supportbot")]:
            del sys.modules[name]
    skipped = next(a for a in diagnosis.arms if a.kind is ArmKind.REFERENCE_PROMPT)
    assert skipped.skipped is not None and "cannot run the reference revision" in skipped.skipped
    assert any("is a running endpoint" in note for note in diagnosis.notes)
