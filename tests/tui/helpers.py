"""Waiting for the triage app's loading workers in Pilot tests."""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import Input

from redline_tui.app import TriageApp


async def settle(pilot: Pilot[None]) -> None:
    """Let every loading worker finish (not the action dialogs, which wait for keys)."""
    app = pilot.app
    for _ in range(3):
        await pilot.pause()
        pending = [w for w in app.workers if w.group != "case-action" and not w.is_finished]
        for worker in pending:
            await worker.wait()
    await pilot.pause()


async def fill(pilot: Pilot[None], field: str, text: str) -> None:
    """Replace the value of a dialog field (`#field-<key>`), focused as a user would."""
    box = pilot.app.screen.query_one(f"#field-{field}", Input)
    box.focus()
    box.value = text
    await pilot.pause()


def triage_app(app: object) -> TriageApp:
    assert isinstance(app, TriageApp)
    return app


def screen_text(app: object) -> str:
    """Every Static's text on the current screen, for asserting what a user can read."""
    from textual.widgets import Static

    assert isinstance(app, TriageApp)
    return "\n".join(str(w.render()) for w in app.screen.query(Static))
