"""The retry key: an inconclusive run's transport samples drawn again from the app."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from helpers import settle
from textual.widgets import Static

from redline.cli import main
from redline.config import parse_config
from redline.running.store import RunStore
from redline.vocabulary.records import RunResult
from redline.vocabulary.verdicts import Verdict
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext
from redline_tui.widgets.dialogs import MessageDialog, PickerDialog
from servers import LoopbackLLMServer
from test_cli_run import latest_run_id, project  # noqa: F401  (fixture)
from test_runner import write_suite

pytestmark = pytest.mark.anyio
#: Three attempts per sample in the test config: FAILS:3 loses the first run's samples for
#: good, and the retry's attempt is answered.
OUTAGE = "MODE:500 FAILS:3"


@pytest.fixture
def inconclusive(project: Path, llm_server: LoopbackLLMServer) -> str:  # noqa: F811
    """A run whose two cases lost every sample to HTTP 500s: inconclusive, exit 3."""
    root = project
    cases = {f"ok{i}": f"MODE:json n{i}" for i in range(6)}
    cases.update({"down1": f"{OUTAGE} d1", "down2": f"{OUTAGE} d2"})
    write_suite(root, "s", cases, samples=2, tier="quality")
    assert main(["run", "s", "--quiet"]) == 3
    return latest_run_id(root)


def _ctx(root: Path, store: RunStore) -> TriageContext:
    return TriageContext(
        store=store,
        root=root,
        config=parse_config(root / "redline.toml"),
        today=lambda: dt.date(2026, 11, 30),
        user="ana",
    )


def _text(app: TriageApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_retry_completes_an_inconclusive_run_and_refreshes_the_screen(
    project: Path,  # noqa: F811
    inconclusive: str,
) -> None:
    run_id = inconclusive
    with RunStore.open(project / ".redline" / "redline.db") as store:
        app = TriageApp(_ctx(project, store), run_id)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            assert _text(app, "#noise-banner").startswith("Inconclusive")
            await pilot.press("T")
            await settle(pilot)
            picker = app.screen
            assert isinstance(picker, PickerDialog)
            await pilot.press("enter")
            for _ in range(400):
                await settle(pilot)
                if "retried" in _text(app, "#batch-status"):
                    break
            assert _text(app, "#batch-status") == (
                f"Run {run_id} retried: 4 transport drawn again; now green."
            )
            await settle(pilot)
            assert not app.screen.query_one("#noise-banner").display
            assert "0 failing" in _text(app, "#run-status")
        record = store.run(run_id)
        assert record.result is RunResult.GREEN
        assert len(store.superseded(run_id)) == 4
        assert all(s.verdict is not Verdict.TRANSPORT for s in store.samples(run_id))


async def test_retry_is_refused_with_the_engines_message_when_a_case_changed(
    project: Path,  # noqa: F811
    llm_server: LoopbackLLMServer,
    inconclusive: str,
) -> None:
    run_id = inconclusive
    case = project / "s" / "ok0.yaml"
    case.write_text(case.read_text(encoding="utf-8").replace("n0", "n0 edited"), "utf-8")
    before = llm_server.count()
    with RunStore.open(project / ".redline" / "redline.db") as store:
        app = TriageApp(_ctx(project, store), run_id)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await pilot.press("T", "enter")
            for _ in range(100):
                await settle(pilot)
                if isinstance(app.screen, MessageDialog):
                    break
            dialog = app.screen
            assert isinstance(dialog, MessageDialog)
            body = " ".join(str(w.render()) for w in dialog.query(Static))
            assert f"inputs changed since run {run_id} started" in body
            assert "s/ok0.yaml" in body
        assert store.run(run_id).result is RunResult.INCONCLUSIVE
        assert store.superseded(run_id) == []
    assert llm_server.count() == before
