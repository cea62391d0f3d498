"""Cause analyses running in the background, owned by the app rather than by a screen.

Leaving Step 1 (or the case) does not stop them; any screen can ask how far one got.
Each job reports through typed messages (`CauseProgressed`), which the app hands to
whichever screens show that case.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from textual.app import App

from redline.config import Config
from redline.deciding.cause import CauseAnalysis, CauseProgress, Settings
from redline.errors import RedlineError
from redline.running.store import RunStore
from redline.vocabulary.records import CaseRecord, RunRecord
from redline_tui.messages import CaseKey, CauseProgressed


def case_key(run: RunRecord, case: CaseRecord) -> CaseKey:
    return (run.id, case.suite, case.case_id)


@dataclass
class CauseJob:
    key: CaseKey
    cancel: threading.Event = field(default_factory=threading.Event)
    progress: CauseProgress | None = None
    finished: bool = False


class CauseJobs:
    """At most one analysis per case at a time; cancelling keeps the finished samples."""

    def __init__(self, app: App[None], store: RunStore) -> None:
        self._app = app
        self._store = store
        self._jobs: dict[CaseKey, CauseJob] = {}

    def running(self, key: CaseKey) -> bool:
        job = self._jobs.get(key)
        return job is not None and not job.finished

    def progress(self, key: CaseKey) -> CauseProgress | None:
        job = self._jobs.get(key)
        return None if job is None or job.finished else job.progress

    def start(self, config: Config, run: RunRecord, case: CaseRecord, settings: Settings) -> bool:
        """Start the analysis of one case; False when one is already running for it."""
        key = case_key(run, case)
        if self.running(key):
            return False
        job = CauseJob(key)
        self._jobs[key] = job
        self._app.run_worker(
            lambda: self._work(job, config, run, case, settings),
            thread=True,
            group="cause",
            name=f"cause {key[1]}/{key[2]}",
            exit_on_error=False,
        )
        return True

    def cancel(self, key: CaseKey) -> bool:
        job = self._jobs.get(key)
        if job is None or job.finished:
            return False
        job.cancel.set()
        return True

    def cancel_all(self) -> None:
        for job in self._jobs.values():
            job.cancel.set()

    def update(self, message: CauseProgressed) -> None:
        """Called by the app on the UI thread for every message of a job."""
        job = self._jobs.get(message.key)
        if job is None:
            return
        if message.progress is not None:
            job.progress = message.progress
        if message.finished:
            job.finished = True

    def _work(
        self,
        job: CauseJob,
        config: Config,
        run: RunRecord,
        case: CaseRecord,
        settings: Settings,
    ) -> None:
        post = self._poster()

        def progress(p: CauseProgress) -> None:
            post(CauseProgressed(job.key, progress=p))

        try:
            with CauseAnalysis(self._store, config, run, case, settings) as analysis:
                post(CauseProgressed(job.key, progress=CauseProgress(analysis.current(), 0, 1)))
                diagnosis = analysis.run(progress, job.cancel.is_set)
        except RedlineError as exc:
            post(CauseProgressed(job.key, error=str(exc)))
            return
        except Exception as exc:  # the worker must always report back, or the row says running
            post(CauseProgressed(job.key, error=f"the analysis failed: {exc!r}"))
            return
        post(CauseProgressed(job.key, diagnosis=diagnosis))

    def _poster(self) -> Callable[[CauseProgressed], None]:
        app = self._app

        def post(message: CauseProgressed) -> None:
            # Waits until the app has taken the message: the analysis never runs ahead of
            # what the screens show. Once the app has stopped, the samples and the state
            # are stored all the same.
            with contextlib.suppress(RuntimeError):
                app.call_from_thread(app.post_message, message)

        return post
