"""Anthropic's Message Batches: Messages requests in one call, results as JSONL.

Create the batch (`POST /v1/messages/batches`, `requests: [{custom_id, params}]` where
`params` is a Messages request body), look at it (`GET /v1/messages/batches/{id}`) until
its `processing_status` is `ended`, then read `results_url`: one line per request,
`{custom_id, result: {type: succeeded | errored | canceled | expired, message | error}}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from redline.providers.batching import (
    BatchCallFailed,
    BatchCalls,
    BatchStatus,
    LineResult,
    read_results,
)

if TYPE_CHECKING:
    from redline.providers.anthropic import AnthropicProvider

#: What each error type of the Messages API is, in redline's words.
_ERROR_CLASSES = {
    "invalid_request_error": "invalid request",
    "rate_limit_error": "rate limited",
    "api_error": "server error",
    "overloaded_error": "server error",
    "authentication_error": "credentials refused",
    "permission_error": "credentials refused",
    "not_found_error": "invalid request",
    "request_too_large": "invalid request",
}
_NEVER_RAN = {"canceled": "cancelled", "expired": "expired"}


class AnthropicBatchApi:
    """Message Batches of an Anthropic provider (`base_url` + /v1/messages/batches)."""

    name = "Anthropic's Message Batches"
    max_requests = 100_000
    max_bytes = 250 * 1024 * 1024

    def __init__(self, provider: AnthropicProvider) -> None:
        self.url = f"{provider.base_url}/v1/messages/batches"
        self.calls = BatchCalls(provider, self.name)

    def line(self, custom_id: str, payload: Mapping[str, Any]) -> bytes:
        request = {"custom_id": custom_id, "params": payload}
        return json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode()

    async def submit(self, lines: Sequence[bytes]) -> BatchStatus:
        body = b'{"requests":[' + b",".join(lines) + b"]}"
        return read_status(await self.calls.json("POST", self.url, raw=body))

    async def status(self, batch_id: str) -> BatchStatus:
        return read_status(await self.calls.json("GET", f"{self.url}/{batch_id}"))

    async def cancel(self, batch_id: str) -> BatchStatus:
        return read_status(await self.calls.json("POST", f"{self.url}/{batch_id}/cancel"))

    async def results(self, status: BatchStatus) -> dict[str, LineResult]:
        if not status.results:
            return {}
        answer = await self.calls.call("GET", status.results[0], large=True)
        return read_results(answer.body, read_line)


def read_status(batch: Any) -> BatchStatus:
    """A Message Batch object in redline's words."""
    if not isinstance(batch, dict) or not isinstance(batch.get("id"), str):
        raise BatchCallFailed("the Message Batches answer has no 'id'")
    status = str(batch.get("processing_status") or "")
    counts = {k: v for k, v in (batch.get("request_counts") or {}).items() if isinstance(v, int)}
    done = sum(counts.get(k, 0) for k in ("succeeded", "errored", "canceled", "expired"))
    url = batch.get("results_url")
    return BatchStatus(
        id=batch["id"],
        status=status,
        ended=status == "ended",
        counts=counts,
        done=done,
        total=done + counts.get("processing", 0),
        results=(url,) if isinstance(url, str) and url else (),
    )


def read_line(line: Any) -> tuple[str, LineResult] | None:
    """One results line: (custom_id, its result); None when unreadable."""
    if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
        return None
    result = line.get("result")
    kind = result.get("type") if isinstance(result, dict) else None
    assert kind is None or isinstance(result, dict)
    if kind == "succeeded":
        return line["custom_id"], LineResult(body=result.get("message"))  # type: ignore[union-attr]
    if kind in _NEVER_RAN:
        return line["custom_id"], LineResult(unfinished=_NEVER_RAN[str(kind)])
    if kind == "errored":
        error = result.get("error") if isinstance(result, dict) else None
        inner = error.get("error") if isinstance(error, dict) else None
        detail = inner if isinstance(inner, dict) else error if isinstance(error, dict) else {}
        what = str(detail.get("type") or "error")
        message = str(detail.get("message") or "")
        words = _ERROR_CLASSES.get(what, "request failed")
        return line["custom_id"], LineResult(error=f"{words} ({what}): {message}")
    return None
