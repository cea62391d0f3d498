"""Waiting for the triage app's loading workers in Pilot tests."""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot
from textual.widgets import Input

from redline_tui.app import TriageApp

#: Worker groups that wait for the user (a dialog or a picker), never for data.
_WAITING = frozenset({"case-action", "compare-choose", "run-pick"})
#: Rounds of waiting before a test goes on regardless (a worker that never ends).
_MOST_ROUNDS = 50


async def settle(pilot: Pilot[None]) -> None:
    """Let every loading worker finish (not those waiting on a dialog or a picker for keys)."""
    app = pilot.app
    quiet = 0
    for _ in range(_MOST_ROUNDS):
        await pilot.pause()
        pending = [w for w in app.workers if w.group not in _WAITING and not w.is_finished]
        for worker in pending:
            await worker.wait()
        # A finished worker's results may start the next one (rows, then marks, then the
        # failure groups): settled once two rounds in a row found nothing running.
        quiet = 0 if pending else quiet + 1
        if quiet == 2:
            break
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


def press_before(*keys: str) -> Callable[[Pilot[None]], object]:
    """A snapshot's `run_before`: settle, then each key with the app settled after it."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run_before


def screen_text(app: object) -> str:
    """Every Static's text on the current screen, for asserting what a user can read."""
    from textual.widgets import Static

    assert isinstance(app, TriageApp)
    return "\n".join(str(w.render()) for w in app.screen.query(Static))


async def wait_until(pilot: Pilot[None], condition: Callable[[], bool], tries: int = 1500) -> None:
    """Pause until `condition()` holds (background work the app does not wait for)."""
    for _ in range(tries):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition never held")
