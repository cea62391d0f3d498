"""Step 1 against the real loopback server: the three conclusions, and what is stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import settle
from textual.pilot import Pilot
from textual.widgets import Input, Static
from triage_repo import BASE_USER_PROMPT, make_repo, open_triage
from triage_store import RED_RUN, build_store

from redline.records import RunKind, RunStatus
from redline.rerun import Conclusion
from redline_tui.app import TriageApp
from redline_tui.screens.rerun import RerunScreen
from redline_tui.widgets.dialogs import QuestionDialog
from servers import LoopbackLLMServer

pytestmark = pytest.mark.anyio

FAILING_BASE_PROMPT = "MODE:echo Your refund of 12k for {{name}} was approved."


@pytest.mark.parametrize(
    ("base_prompt", "samples", "conclusion"),
    [
        (BASE_USER_PROMPT, "20", Conclusion.REGRESSION),
        (FAILING_BASE_PROMPT, "20", Conclusion.CASE_AT_FAULT),
        (BASE_USER_PROMPT, "2", Conclusion.UNDECIDED),
    ],
)
async def test_rerun_on_the_unchanged_prompt_concludes(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    loopback_key: str,
    base_prompt: str,
    samples: str,
    conclusion: Conclusion,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    repo, _ = make_repo(root, llm_server.redline_toml(), base_user_prompt=base_prompt)
    base_sha = repo.commit("main").hexsha
    with build_store(tmp_path / "redline.db", with_rerun=False) as store:
        app = TriageApp(open_triage(root, store))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("down", "enter")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, RerunScreen)
            assert screen.query_one("#rerun-revision", Input).value == base_sha[:12]
            assert screen.query_one("#rerun-samples", Input).value == "20"
            note = str(screen.query_one("#revision-note", Static).render())
            assert "estimated cost $" in note and "for 20 sample(s)" in note, note
            screen.query_one("#rerun-samples", Input).value = samples
            await pilot.press("r")
            await settle(pilot)
            assert screen.result is not None, screen.query_one("#rerun-progress", Static).render()
            assert screen.result.conclusion is conclusion
            shown = str(screen.query_one("#rerun-conclusion", Static).render())
            assert shown.endswith(conclusion.value)
            assert "p = " in shown
            rerun_id = screen.rerun_id
        assert rerun_id is not None
        rerun = store.run(rerun_id)
        assert (rerun.kind, rerun.parent_id, rerun.status) == (
            RunKind.RERUN,
            RED_RUN,
            RunStatus.FINISHED,
        )
        assert len(store.samples(rerun_id)) == int(samples)
        assert len(store.samples(RED_RUN)) == 45
        sent = {r.body["messages"][-1]["content"] for r in llm_server.requests}
        assert sent == {base_prompt.replace("{{name}}", "Ana")}


async def test_rerun_streams_progress_and_can_be_cancelled(
    tmp_path: Path, llm_server: LoopbackLLMServer, loopback_key: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    slow = "MODE:echo DELAY_MS:150 Your refund of 12,000 IDR for {{name}} was approved."
    make_repo(root, llm_server.redline_toml(concurrency=2), base_user_prompt=slow)
    with build_store(tmp_path / "redline.db", with_rerun=False) as store:
        app = TriageApp(open_triage(root, store))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("down", "enter")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, RerunScreen)
            await pilot.press("r")
            progress = screen.query_one("#rerun-progress", Static)
            for _ in range(400):
                await pilot.pause(0.01)
                if str(progress.render()).startswith(("2/20", "3/20", "4/20")):
                    break
            assert "/20 samples" in str(progress.render())
            await pilot.press("x")
            await settle(pilot)
            assert str(progress.render()) == "Rerun cancelled; finished samples kept."
            assert screen.result is None and not screen.running
        reruns = store.runs(kind=RunKind.RERUN)
        assert len(reruns) == 1 and reruns[0].status is RunStatus.INTERRUPTED
        assert 0 < len(store.samples(reruns[0].id)) < 20


async def test_leaving_the_rerun_screen_mid_rerun_stores_it_as_interrupted(
    tmp_path: Path, llm_server: LoopbackLLMServer, loopback_key: str
) -> None:
    """Escape while samples are in flight: the rerun is not left `running` forever."""
    root = tmp_path / "repo"
    root.mkdir()
    slow = "MODE:echo DELAY_MS:150 Your refund of 12,000 IDR for {{name}} was approved."
    make_repo(root, llm_server.redline_toml(concurrency=2), base_user_prompt=slow)
    with build_store(tmp_path / "redline.db", with_rerun=False) as store:
        app = TriageApp(open_triage(root, store))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("down", "enter")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, RerunScreen)
            await pilot.press("r")
            progress = screen.query_one("#rerun-progress", Static)
            for _ in range(400):
                await pilot.pause(0.01)
                if str(progress.render()).startswith(("2/20", "3/20", "4/20")):
                    break
            await pilot.press("escape")
            await settle(pilot)
            assert not isinstance(app.screen, RerunScreen)
            for _ in range(300):
                reruns = store.runs(kind=RunKind.RERUN)
                if reruns and reruns[0].status is not RunStatus.RUNNING:
                    break
                await pilot.pause(0.01)
        reruns = store.runs(kind=RunKind.RERUN)
        assert len(reruns) == 1 and reruns[0].status is RunStatus.INTERRUPTED
        assert 0 < len(store.samples(reruns[0].id)) < 20


async def test_rerun_over_the_cost_threshold_asks_first(
    tmp_path: Path, llm_server: LoopbackLLMServer, loopback_key: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    toml = "confirm_cost_above = 0.0000001\n" + llm_server.redline_toml()
    make_repo(root, toml, base_user_prompt=BASE_USER_PROMPT)
    with build_store(tmp_path / "redline.db", with_rerun=False) as store:
        app = TriageApp(open_triage(root, store))
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("down", "enter")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, RerunScreen)
            screen.query_one("#rerun-samples", Input).value = "2"
            await pilot.press("r")
            await _question(pilot)
            body = str(app.screen.query_one("#question-body", Static).render())
            assert "estimated cost $" in body and "for 2 sample(s)" in body
            assert "over confirm_cost_above" in body
            await pilot.press("n")
            await settle(pilot)
            assert app.screen is screen and llm_server.count() == 0
            assert "not started" in str(screen.query_one("#rerun-progress", Static).render())
            await pilot.press("r")
            await _question(pilot)
            await pilot.press("y")
            await settle(pilot)
            assert screen.result is not None
            assert llm_server.count() == 2


async def _question(pilot: Pilot[None]) -> None:
    """Wait for the question dialog (its worker waits for a key, so `settle` cannot)."""
    for _ in range(200):
        if isinstance(pilot.app.screen, QuestionDialog):
            return
        await pilot.pause(0.05)
    raise AssertionError(f"no question asked; the screen is {pilot.app.screen!r}")
