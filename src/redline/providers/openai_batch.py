"""OpenAI's Batch API: a JSONL file of Chat Completions requests, one batch, two result files.

Upload the requests (`POST /files`, purpose `batch`, one line per request: `custom_id`,
`method`, `url`, `body`), create the batch (`POST /batches`: the file, the endpoint
`/v1/chat/completions`, a 24 h completion window), look at it (`GET /batches/{id}`) until
it is `completed`, `failed`, `expired` or `cancelled`, then read the output file (answers)
and the error file (failed requests) by `custom_id`. A request in neither file (the batch
expired or was cancelled before it ran) is unanswered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from redline.httpio import form_data
from redline.providers.batching import (
    BatchCallFailed,
    BatchCalls,
    BatchStatus,
    LineResult,
    error_class,
    read_results,
)

if TYPE_CHECKING:
    from redline.providers.openai import OpenAIProvider

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
#: The batch statuses after which nothing changes any more.
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
#: Error codes of a request that never ran (its batch expired or was cancelled).
_NEVER_RAN = {"batch_expired": "expired", "batch_cancelled": "cancelled"}


class OpenAIBatchApi:
    """The Batch API of an OpenAI-compatible provider (`base_url` + /files, /batches)."""

    name = "OpenAI's Batch API"
    max_requests = 50_000
    max_bytes = 190 * 1024 * 1024

    def __init__(self, provider: OpenAIProvider, run_id: str) -> None:
        self.base = provider.base_url
        self.run_id = run_id
        self.calls = BatchCalls(provider, self.name)

    def line(self, custom_id: str, payload: Mapping[str, Any]) -> bytes:
        request = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": payload}
        return json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode()

    async def submit(self, lines: Sequence[bytes]) -> BatchStatus:
        content = b"".join(line + b"\n" for line in lines)
        body, content_type = await form_data(
            {"purpose": "batch"}, "file", "redline-batch.jsonl", content, "application/jsonl"
        )
        uploaded = await self.calls.json(
            "POST", f"{self.base}/files", raw=body, headers={"content-type": content_type}
        )
        batch = await self.calls.json(
            "POST",
            f"{self.base}/batches",
            body={
                "input_file_id": _text(uploaded, "id"),
                "endpoint": ENDPOINT,
                "completion_window": COMPLETION_WINDOW,
                "metadata": {"redline_run": self.run_id},
            },
        )
        return read_status(batch)

    async def status(self, batch_id: str) -> BatchStatus:
        return read_status(await self.calls.json("GET", f"{self.base}/batches/{batch_id}"))

    async def cancel(self, batch_id: str) -> BatchStatus:
        url = f"{self.base}/batches/{batch_id}/cancel"
        return read_status(await self.calls.json("POST", url))

    async def results(self, status: BatchStatus) -> dict[str, LineResult]:
        found: dict[str, LineResult] = {}
        for file_id in status.results:
            url = f"{self.base}/files/{file_id}/content"
            found |= read_results((await self.calls.call("GET", url, large=True)).body, read_line)
        return found


def read_status(batch: Any) -> BatchStatus:
    """A Batch object (`POST /batches`, `GET /batches/{id}`) in redline's words."""
    status = _text(batch, "status")
    counts = batch.get("request_counts") if isinstance(batch, dict) else None
    counts = {k: v for k, v in (counts or {}).items() if isinstance(v, int)}
    files = tuple(
        f for f in (batch.get("output_file_id"), batch.get("error_file_id")) if isinstance(f, str)
    )
    failure = None
    if status == "failed":
        errors = (batch.get("errors") or {}).get("data") or []
        messages = [
            f"{e.get('code', 'error')}: {e.get('message', '')}".strip()
            + (f" (line {e['line']})" if e.get("line") is not None else "")
            for e in errors
            if isinstance(e, dict)
        ]
        failure = "the batch failed: " + ("; ".join(messages) or "the provider gave no reason")
    return BatchStatus(
        id=_text(batch, "id"),
        status=status,
        ended=status in ENDED,
        counts=counts,
        done=counts.get("completed", 0) + counts.get("failed", 0),
        total=counts.get("total", 0),
        results=files,
        failure=failure,
    )


def read_line(line: Any) -> tuple[str, LineResult] | None:
    """One line of an output or error file: (custom_id, its result); None when unreadable."""
    if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
        return None
    response = line.get("response")
    error = line.get("error")
    if isinstance(response, dict) and isinstance(response.get("status_code"), int):
        code = response["status_code"]
        body = response.get("body")
        if 200 <= code < 300:
            return line["custom_id"], LineResult(body=body)
        message = _error_message(body)
        return line["custom_id"], LineResult(error=f"{error_class(code)} (HTTP {code}): {message}")
    if isinstance(error, dict):
        code = str(error.get("code") or "error")
        if code in _NEVER_RAN:
            return line["custom_id"], LineResult(unfinished=_NEVER_RAN[code])
        return line["custom_id"], LineResult(error=f"{code}: {error.get('message') or ''}")
    return None


def _error_message(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return json.dumps(body)[:300]


def _text(data: Any, key: str) -> str:
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, str) or not value:
        raise BatchCallFailed(f"the Batch API's answer has no {key!r}")
    return value
