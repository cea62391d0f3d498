"""Worker processes that call a python target, so a hung or crashing target costs one sample.

Each worker imports the target once and then answers one call at a time over a pipe. A
call that outlives its timeout has its worker's whole process group killed (the hung
function and anything it started) and a fresh worker takes its place; a worker that
dies (a segfault, `os._exit`, the memory limit) turns into that one sample's error.
What the target prints goes to the sample's evidence, never to redline's own output.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import io
import multiprocessing
import os
import signal
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

#: How much of what a target printed during one call is kept with the sample.
OUTPUT_KEPT = 4000
#: Seconds a new worker may take to start and import the target (not part of any sample's
#: timeout: a loaded machine must not turn a slow start into a timed-out sample).
START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Outcome:
    """One call's result: `value` when `ok`, else `error` (one line) and `evidence` (the
    traceback or what the worker said before it died). `output` is what the call printed."""

    ok: bool
    value: Any = None
    error: str = ""
    evidence: str = ""
    output: str = ""


@dataclass(frozen=True)
class WorkerSetup:
    root: str
    ref: str
    max_memory_mb: int | None
    env: Mapping[str, str]


def _serve(conn: Connection, setup: WorkerSetup) -> None:  # runs in the worker process
    os.setsid()
    if setup.max_memory_mb is not None:
        import resource

        limit = setup.max_memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.dup2(2, 1)  # C-level writes to stdout must not reach redline's stdout either
    os.environ.update(setup.env)
    sys.path.insert(0, setup.root)
    os.chdir(setup.root)
    function: Callable[..., Any] | None = None
    try:
        function = _load(setup.ref)
    except BaseException as exc:
        conn.send(("failed", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        return
    conn.send(("ready",))
    while True:
        try:
            message = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if message is None:
            return
        payload, env = message
        os.environ.update(env)
        captured = io.StringIO()
        try:
            with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
                value = _call(function, payload)
                if inspect.isawaitable(value):
                    value = asyncio.run(_awaited(value))
            reply: tuple[Any, ...] = ("ok", _plain(value), captured.getvalue()[-OUTPUT_KEPT:])
            conn.send(reply)
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
            conn.send(("raised", error, traceback.format_exc(), captured.getvalue()[-OUTPUT_KEPT:]))
            if isinstance(exc, (MemoryError, KeyboardInterrupt, SystemExit)):
                return  # a fresh worker takes this one's place


def _call(function: Callable[..., Any], case: dict[str, Any]) -> Any:
    """`function(case)`; or, for a function of several parameters named after the case's
    keys (`def answer(vars, messages)`), each one by name."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return function(case)
    named = [p for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    required = [p for p in named if p.default is p.empty]
    if len(named) > 1 and all(p.name in case for p in required):
        return function(**{p.name: case[p.name] for p in named if p.name in case})
    return function(case)


def _plain(value: Any) -> Any:
    """The answer as plain data redline can read without the app's classes: a dataclass
    or a pydantic model becomes its mapping."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    return value


async def _awaited(value: Any) -> Any:
    return await value


def _load(ref: str) -> Callable[..., Any]:
    import importlib

    module_name, _, name = ref.partition(":")
    module = importlib.import_module(module_name)
    function = getattr(module, name, None)
    if not callable(function):
        raise TypeError(f"{ref}: {module_name} has no function {name!r}")
    return function  # type: ignore[no-any-return]


class _Worker:
    def __init__(self, setup: WorkerSetup) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, setup), daemon=True)
        self.process.start()
        child.close()

    def kill(self) -> None:
        pid = self.process.pid
        if pid is not None and self.process.is_alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        self.process.join(5)
        self.conn.close()

    def stop(self) -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            self.conn.send(None)
        self.process.join(2)
        if self.process.is_alive():
            self.kill()
        else:
            self.conn.close()


class WorkerPool:
    """`size` workers for one target, started on first use and replaced when one is lost."""

    def __init__(self, setup: WorkerSetup, size: int) -> None:
        self.setup = setup
        self.size = size
        self._idle: asyncio.Queue[_Worker | None] | None = None
        self._all: set[_Worker] = set()

    async def call(self, payload: Any, env: Mapping[str, str], timeout_s: float) -> Outcome:
        if self._idle is None:
            self._idle = asyncio.Queue()
            for _ in range(self.size):
                self._idle.put_nowait(None)
        worker = await self._idle.get()
        keep: _Worker | None = None
        try:
            if worker is None or not worker.process.is_alive():
                if worker is not None:
                    self._drop(worker)
                worker = _Worker(self.setup)
                self._all.add(worker)
                failed = await self._started(worker)
                if failed is not None:
                    return failed
            outcome, keep = await self._ask(worker, payload, dict(env), timeout_s)
            return outcome
        finally:
            self._idle.put_nowait(keep)

    async def _started(self, worker: _Worker) -> Outcome | None:
        """Wait for a new worker to import the target; the sample's error when it cannot."""
        if not await _readable(worker, START_TIMEOUT_S):
            self._drop(worker)
            return Outcome(
                False, error=f"the target's worker did not start in {START_TIMEOUT_S:g} s"
            )
        try:
            reply = worker.conn.recv()
        except (EOFError, OSError):
            worker.process.join(5)
            code = worker.process.exitcode
            self._drop(worker)
            return Outcome(
                False,
                error=f"the target's worker process died while starting (exit code {code})",
                evidence=_died_hint(code, self.setup.max_memory_mb),
            )
        if reply[0] == "ready":
            return None
        self._drop(worker)
        _kind, error, trace = reply
        return Outcome(
            False, error=f"the target {self.setup.ref} could not be loaded: {error}", evidence=trace
        )

    async def _ask(
        self, worker: _Worker, payload: Any, env: dict[str, str], timeout_s: float
    ) -> tuple[Outcome, _Worker | None]:
        try:
            worker.conn.send((payload, env))
        except (OSError, ValueError) as exc:  # BrokenPipe, or a payload that cannot be sent
            self._drop(worker)
            return Outcome(False, error=f"the target's worker could not be reached: {exc}"), None
        if not await _readable(worker, timeout_s):
            self._drop(worker)
            return Outcome(
                False,
                error=f"timeout: the target did not answer within {timeout_s:g} s "
                "(its worker process was stopped)",
            ), None
        try:
            reply = worker.conn.recv()
        except (EOFError, OSError):
            worker.process.join(5)
            code = worker.process.exitcode
            self._drop(worker)
            how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            return Outcome(
                False,
                error=f"the target's worker process died ({how}) while answering",
                evidence=_died_hint(code, self.setup.max_memory_mb),
            ), None
        except Exception as exc:  # an answer that cannot be unpickled
            self._drop(worker)
            return Outcome(False, error=f"the target's answer could not be read back: {exc}"), None
        if reply[0] == "ok":
            return Outcome(True, value=reply[1], output=reply[2]), worker
        _kind, error, trace, output = reply
        alive = worker if worker.process.is_alive() and "MemoryError" not in error else None
        if alive is None:
            self._drop(worker)
        return Outcome(
            False, error=f"the target raised {error}", evidence=trace, output=output
        ), alive

    def _drop(self, worker: _Worker) -> None:
        self._all.discard(worker)
        worker.kill()

    async def aclose(self) -> None:
        workers, self._all = list(self._all), set()
        if workers:
            await asyncio.to_thread(_stop_all, workers)


async def _readable(worker: _Worker, timeout_s: float) -> bool:
    """Whether the worker's pipe has something to read (an answer, or its end) in time."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    fd = worker.conn.fileno()
    loop.add_reader(fd, _wake, ready)
    try:
        await asyncio.wait_for(ready, timeout_s)
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
    return True


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


def _stop_all(workers: list[_Worker]) -> None:
    for worker in workers:
        worker.stop()


def _died_hint(code: int | None, memory_mb: int | None) -> str:
    if code == -signal.SIGKILL and memory_mb is not None:
        return f"killed: it may have gone over the memory limit (max_memory_mb = {memory_mb})"
    if code is not None and code < 0:
        return f"killed by signal {signal.Signals(-code).name}"
    return f"the process exited with code {code} without answering"
