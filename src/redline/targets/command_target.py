"""`target: {command: [...]}`: an executable reading the case as JSON on stdin and writing
the answer as JSON on stdout, one process per sample."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Callable
from typing import Any

from redline.targets.answer import BadAnswer, case_payload, failure, read_answer
from redline.targets.base import TargetProvider
from redline.targets.spec import resolve_env
from redline.vocabulary.completion import ChatRequest, Completion

_KEPT = 4000


class CommandTarget(TargetProvider):
    """A non-zero exit, a timeout (the process group is killed) or stdout that holds no
    JSON answer is a `transport` sample with the command's stderr kept as evidence."""

    async def complete(self, request: ChatRequest) -> Completion:
        payload = json.dumps(case_payload(request, self.model_name or None), ensure_ascii=False)
        env = dict(os.environ)
        env.update({k: resolve_env(v, os.environ)[0] for k, v in self.spec.env.items()})
        env.update(self.model_env())
        started = time.perf_counter()
        try:
            process = await asyncio.create_subprocess_exec(
                *self.spec.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.spec.root,
                env=env,
                start_new_session=True,
                preexec_fn=_memory_limit(self.spec.max_memory_mb),
            )
        except OSError as exc:
            return failure(
                f"the target command could not start: {exc}", latency_ms=0.0, model=self.model_name
            )
        try:
            out, err = await asyncio.wait_for(
                process.communicate(payload.encode("utf-8")), self.spec.timeout_s
            )
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            return failure(
                f"timeout: the target command did not answer within {self.spec.timeout_s:g} s "
                "(it was stopped)",
                latency_ms=(time.perf_counter() - started) * 1000,
                model=self.model_name,
            )
        latency_ms = (time.perf_counter() - started) * 1000
        stderr = err.decode("utf-8", errors="replace")[-_KEPT:]
        if process.returncode != 0:
            code = process.returncode or 0
            how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            return failure(
                f"the target command {how}",
                latency_ms=latency_ms,
                model=self.model_name,
                evidence=stderr,
            )
        text = out.decode("utf-8", errors="replace")
        try:
            completion = read_answer(
                _json_answer(text), latency_ms=latency_ms, model=self.model_name
            )
        except BadAnswer as exc:
            evidence = f"--- stdout ---\n{text[-_KEPT:]}\n--- stderr ---\n{stderr}"
            return failure(
                str(exc), latency_ms=latency_ms, model=self.model_name, evidence=evidence
            )
        if stderr:
            completion.extra["target_output"] = stderr
        return completion

    async def aclose(self) -> None:
        return None


def _json_answer(stdout: str) -> Any:
    """The JSON answer on stdout: the whole of it, else its last line that is JSON (a
    command that logs to stdout before answering)."""
    try:
        return json.loads(stdout)
    except ValueError:
        pass
    for line in reversed(stdout.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    shown = stdout.strip()[:200] or "(nothing)"
    raise BadAnswer(f"the target command wrote no JSON answer on stdout: {shown!r}")


def _memory_limit(mb: int | None) -> Callable[[], None] | None:
    if mb is None:
        return None

    def limit() -> None:
        import resource

        size = mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return limit
