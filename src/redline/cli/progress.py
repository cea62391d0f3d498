"""How `redline run` shows a run in progress: a live bar on a terminal, lines in a log.

Both say the same things: samples done, verdict counts, elapsed time, the observed
rate, the time left at that rate, the case in flight, and what riding the provider's rate
limit did (waits, 429s, concurrency).
"""

from __future__ import annotations

import math
import sys
import time
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from redline.cli.output import verdict_breakdown
from redline.running.runner import RunProgress
from redline.textsafe import escape_output
from redline.vocabulary.verdicts import VERDICT_ORDER

if TYPE_CHECKING:
    from rich.progress import Progress

STOPPING = "stopping: finished samples are stored; cancelling the requests in flight"


def _counts_text(p: RunProgress) -> str:
    return " ".join(f"{v} {p.verdicts.get(v, 0)}" for v in VERDICT_ORDER if p.verdicts.get(v))


def _duration(seconds: float) -> str:
    """`45s`, `3m 05s`, `1h 02m`: short enough for a progress line."""
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _rate_text(p: RunProgress) -> str:
    """Samples per second, or seconds per sample when slower than one a second."""
    if p.done == 0:
        return "–"
    if p.rate >= 1:
        return f"{p.rate:.1f} samples/s"
    return f"{p.elapsed_s / p.done:.1f} s/sample"


def _eta_text(p: RunProgress) -> str:
    eta = p.eta_s
    return "ETA –" if eta is None else f"ETA {_duration(eta)}"


def _now_text(p: RunProgress) -> str:
    """The case in flight (the oldest), and how many others are."""
    if not p.running:
        return ""
    more = f" (+{len(p.running) - 1} more)" if len(p.running) > 1 else ""
    return f"now {escape_output(p.running[0], keep_layout=False)}{more}"


def _start_line(p: RunProgress, replay: str | None) -> str:
    if replay is not None:
        return (
            f"run {p.run_id}: replaying run {replay}: re-scoring {p.total} stored sample(s) "
            "with today's assertions; no model is called"
        )
    if p.up_to:
        return (
            f"run {p.run_id}: up to {p.total} sample(s) to run (sequentially sampled cases "
            "stop once decided)"
        )
    return f"run {p.run_id}: {p.total} sample(s) to run"


def _done_text(p: RunProgress) -> str:
    """`37/120 samples`, or `37 of up to 120 samples` while sequential cases may stop early."""
    if p.up_to and p.done < p.total:
        return f"{p.done} of up to {p.total} samples"
    return f"{p.done}/{p.total} samples"


class PlainProgress:
    """One line per tenth of the run (and the last), and one when a slow run goes quiet.

    For CI logs and pipes: samples done, verdict counts, elapsed time, the observed rate,
    the time left at that rate, and the case in flight.
    """

    #: A line at least this often (seconds) while samples finish, however slowly.
    HEARTBEAT_S = 30.0

    def __init__(self, replay: str | None = None) -> None:
        self._next = self._step = 1
        self._replay = replay
        self._last_line = 0.0
        self._batch = ""

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, p: RunProgress) -> None:
        if p.stopping:
            print(STOPPING, file=sys.stderr, flush=True)
            return
        if p.batch != self._batch:
            self._batch = p.batch
            print(f"  {p.batch}", flush=True)
            return
        if p.done == 0 and p.last is None and not p.running:
            print(_start_line(p, self._replay), flush=True)
            self._next = self._step = max(1, math.ceil(p.total / 10))
            self._last_line = time.monotonic()
            return
        if not p.running and p.done < p.total:
            return  # between two samples: the next one's start tells which case is running
        now = time.monotonic()
        due = p.done >= self._next or now - self._last_line >= self.HEARTBEAT_S
        if p.done > 0 and (due or p.done == p.total):
            if p.done >= self._next:
                self._next = p.done + self._step
            self._last_line = now
            parts = [
                f"  {_done_text(p)}",
                _counts_text(p),
                _duration(p.elapsed_s),
                _rate_text(p),
            ]
            if p.done < p.total:
                parts += [_eta_text(p), _now_text(p)]
            parts.append(p.rate_limit)
            print("  ".join(part for part in parts if part), flush=True)


class LiveProgress:
    """A rich progress bar: samples, verdict counts, elapsed, rate, ETA, the case in flight."""

    def __init__(self, console: Console, replay: str | None = None) -> None:
        # Imported here: a run in a log or CI never draws a bar (rich.progress is heavy).
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._progress: Progress = Progress(
            TextColumn("[bold]run {task.fields[run_id]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("{task.fields[eta]}"),
            TextColumn("{task.fields[now]}"),
            TextColumn("{task.fields[limit]}"),
            console=console,
            transient=False,
        )
        self._task: Any = None
        self._last = 0.0
        self._replay = replay
        self._batch = ""

    def __enter__(self) -> LiveProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(self, p: RunProgress) -> None:
        if p.stopping:
            self._progress.console.print(Text(STOPPING, style="yellow"))
            return
        if self._task is None:
            self._progress.console.print(Text(_start_line(p, self._replay)))
            self._task = self._progress.add_task(
                "run",
                total=p.total,
                run_id=p.run_id,
                counts="",
                rate="",
                eta="",
                now="",
                limit="",
            )
        now = time.monotonic()
        if p.done != p.total and now - self._last < 0.1 and p.batch == self._batch:
            return
        self._last = now
        self._batch = p.batch
        self._progress.update(
            self._task,
            total=p.total,
            completed=p.done,
            counts=verdict_breakdown(p.verdicts).markup,
            rate=_rate_text(p),
            eta=_eta_text(p) if p.done < p.total else "",
            # Text, not markup: a case id is the user's text and may hold brackets.
            now=Text(p.batch or _now_text(p)).markup if p.done < p.total else "",
            limit=Text(p.rate_limit, style="dim").markup,
        )
