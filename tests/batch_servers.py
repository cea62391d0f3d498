"""A loopback server of both batch APIs (OpenAI's Batch API, Anthropic's Message Batches).

One port, both wire formats, as the providers document them:

    POST /v1/files                      multipart upload (purpose=batch) of a JSONL file
    GET  /v1/files/{id}/content         a file's content (input, output or error file)
    POST /v1/batches                    {input_file_id, endpoint, completion_window}
    GET  /v1/batches/{id}               the Batch object: status, request_counts, file ids
    POST /v1/messages/batches           {requests: [{custom_id, params}]}
    GET  /v1/messages/batches/{id}      the Message Batch: processing_status, request_counts
    GET  /v1/messages/batches/{id}/results   JSONL results, once the batch has ended
    POST /v1/batches/{id}/cancel        cancel: `cancelling`, then `cancelled` at the next look
    POST /v1/messages/batches/{id}/cancel    cancel: `canceling`, then `ended` likewise

Each request line is answered as `tests/servers.py` answers the same request body (its
control tokens: MODE:json, MODE:429, MODE:500, RATE:..., ...), plus `MODE:400`: an invalid
request. A 2xx answer is a success line; any other an error line with the API's error body.

What a batch does as a whole is the next entry of `plans` when it is created (else
`default`): a `Plan` says how many looks (`GET`) it takes to end, and how it ends:
`complete`, `expire` / `cancel` after answering its first `answered` requests, `fail`
(OpenAI validation failure: no request runs), or `hold` (in progress until `release()`).
A batch cancelled by its client ends at its next look with its plan's first `answered`
requests answered (`cancel_requests` counts the cancel calls).

Everything is recorded: `batches` (each batch's id, api, custom ids, plan, looks) and
`submitted` (a Counter of custom ids over every batch), so tests can check that no
request went out twice.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from servers import _reply, _tokens, _user_text

_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Plan:
    """How one batch goes: `looks` GETs until it ends, then `outcome`."""

    outcome: str = "complete"  # complete | expire | cancel | fail | hold
    looks: int = 2
    #: For expire/cancel: the requests answered before the batch ended (the first n).
    answered: int = 0


@dataclass
class Batch:
    id: str
    api: str
    lines: list[tuple[str, Any]]  # (custom_id, request body)
    plan: Plan
    looks: int = 0
    ended: bool = False
    results: dict[str, tuple[int, Any]] = field(default_factory=dict)  # id → (status, body)
    never_ran: set[str] = field(default_factory=set)
    output_file: str | None = None
    error_file: str | None = None
    #: Its client asked to cancel it; it ends at its next look.
    cancelling: bool = False

    @property
    def custom_ids(self) -> list[str]:
        return [c for c, _ in self.lines]


class BatchServer:
    """Threaded HTTP server on 127.0.0.1 serving both batch APIs (see the module docstring)."""

    def __init__(self) -> None:
        self.default = Plan()
        self.plans: list[Plan] = []
        self.batches: list[Batch] = []
        self.submitted: Counter[str] = Counter()
        self.cancel_requests: Counter[str] = Counter()
        self.files: dict[str, bytes] = {}
        self.released = threading.Event()
        #: (status, JSON body) every POST is answered with when set: an account refused.
        self.refuse: tuple[int, Any] | None = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> BatchServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def release(self) -> None:
        """Held batches end (completed) at their next look."""
        self.released.set()

    def redline_toml(self, *, batch: bool = False, poll_s: float = 0.05, extra: str = "") -> str:
        """A redline.toml pinning `fake` (OpenAI) and `fake-anthropic` to this server, both
        priced, both polled every `poll_s` seconds; `batch` is their `batch` setting."""
        common = (
            'api_key_env = "REDLINE_LOOPBACK_KEY"\ntimeout_s = 5.0\nmax_retries = 2\n'
            f"backoff_base_s = 0.01\nbackoff_max_s = 0.05\nbatch_poll_s = {poll_s}\n"
            f"batch = {'true' if batch else 'false'}\n"
        )
        return (
            "concurrency = 4\n\n[models]\n"
            'fake = "loopback:fake-model-2025-01-01"\n'
            'fake-anthropic = "loopback-anthropic:claude-fake-2025-01-01"\n\n'
            f'[providers.loopback]\ntype = "openai"\nbase_url = "{self.url}/v1"\n{common}\n'
            "[providers.loopback-anthropic]\n"
            f'type = "anthropic"\nbase_url = "{self.url}"\n{common}\n'
            '[prices."loopback:fake-model-2025-01-01"]\ninput_per_mtok = 1.0\n'
            "output_per_mtok = 2.0\n\n"
            '[prices."loopback-anthropic:claude-fake-2025-01-01"]\ninput_per_mtok = 3.0\n'
            "output_per_mtok = 15.0\n"
            f"{extra}"
        )

    # -- the batch life cycle -------------------------------------------------------------

    def _create(self, api: str, lines: list[tuple[str, Any]]) -> Batch:
        with self._lock:
            plan = self.plans.pop(0) if self.plans else self.default
            prefix = "batch_" if api == "openai" else "msgbatch_"
            batch = Batch(f"{prefix}{next(self._ids):04d}", api, lines, plan)
            self.batches.append(batch)
            self.submitted.update(batch.custom_ids)
        return batch

    def find(self, batch_id: str) -> Batch | None:
        return next((b for b in self.batches if b.id == batch_id), None)

    def _look(self, batch: Batch) -> None:
        """One GET of the batch: it moves on, and ends after its plan's looks."""
        with self._lock:
            batch.looks += 1
            if batch.ended:
                return
            if batch.plan.outcome == "hold" and not self.released.is_set():
                return
            if batch.looks < batch.plan.looks:
                return
            self._end(batch)

    def cancel(self, batch: Batch) -> bool:
        """The client's cancel: False when the batch had ended already."""
        with self._lock:
            self.cancel_requests[batch.id] += 1
            if batch.ended:
                return False
            batch.cancelling = True
            batch.plan = Plan("cancel", looks=0, answered=batch.plan.answered)
            return True

    def _end(self, batch: Batch) -> None:
        outcome = batch.plan.outcome
        runs = batch.lines
        if outcome in ("expire", "cancel"):
            runs = batch.lines[: batch.plan.answered]
        elif outcome == "fail":
            runs = []
        for custom_id, body in runs:
            batch.results[custom_id] = _answer(batch.api, body)
        batch.never_ran = {c for c, _ in batch.lines if c not in batch.results}
        batch.ended = True
        if batch.api == "openai" and outcome != "fail":
            ok = [c for c in batch.custom_ids if c in batch.results and batch.results[c][0] == 200]
            bad = [c for c in batch.custom_ids if c in batch.results and c not in ok]
            word = {"expire": "batch_expired", "cancel": "batch_cancelled"}.get(outcome)
            if ok:
                batch.output_file = self._file(b"".join(_openai_line(batch, c) for c in ok))
            if bad or (word == "batch_expired" and batch.never_ran):
                lines = [_openai_line(batch, c) for c in bad]
                if word == "batch_expired":  # OpenAI lists the expired requests as errors
                    lines += [_expired_line(c) for c in sorted(batch.never_ran)]
                batch.error_file = self._file(b"".join(lines))

    def _file(self, content: bytes) -> str:
        file_id = f"file-{next(self._ids):04d}"
        self.files[file_id] = content
        return file_id

    def openai_status(self, batch: Batch) -> dict[str, Any]:
        outcome = batch.plan.outcome
        if not batch.ended:
            status = "validating" if batch.looks == 0 else "in_progress"
            status = "cancelling" if batch.cancelling else status
        else:
            status = {
                "complete": "completed",
                "hold": "completed",
                "expire": "expired",
                "cancel": "cancelled",
                "fail": "failed",
            }[outcome]
        done = [c for c in batch.custom_ids if c in batch.results]
        failed = sum(1 for c in done if batch.results[c][0] != 200)
        body: dict[str, Any] = {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": "file-input",
            "completion_window": "24h",
            "status": status,
            "output_file_id": batch.output_file,
            "error_file_id": batch.error_file,
            "errors": None,
            "request_counts": {
                "total": len(batch.lines),
                "completed": len(done) - failed,
                "failed": failed,
            },
        }
        if status == "failed":
            body["errors"] = {
                "object": "list",
                "data": [{"code": "invalid_json_line", "message": "bad line", "line": 1}],
            }
            body["request_counts"]["total"] = 0
        return body

    def anthropic_status(self, batch: Batch) -> dict[str, Any]:
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        if not batch.ended:
            counts["processing"] = len(batch.lines)
        else:
            for c in batch.custom_ids:
                if c in batch.results:
                    counts["succeeded" if batch.results[c][0] == 200 else "errored"] += 1
                else:
                    counts["canceled" if batch.plan.outcome == "cancel" else "expired"] += 1
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended"
            if batch.ended
            else "canceling"
            if batch.cancelling
            else "in_progress",
            "request_counts": counts,
            "ended_at": "2026-12-01T00:00:00Z" if batch.ended else None,
            "created_at": "2026-12-01T00:00:00Z",
            "expires_at": "2026-12-02T00:00:00Z",
            "cancel_initiated_at": "2026-12-01T00:00:00Z" if batch.cancelling else None,
            "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results"
            if batch.ended
            else None,
        }

    def anthropic_results(self, batch: Batch) -> bytes:
        out = []
        for c in batch.custom_ids:
            if c in batch.results:
                status, body = batch.results[c]
                if status == 200:
                    result: dict[str, Any] = {"type": "succeeded", "message": body}
                else:
                    result = {"type": "errored", "error": body}
            else:
                result = {"type": "canceled" if batch.plan.outcome == "cancel" else "expired"}
            out.append(json.dumps({"custom_id": c, "result": result}).encode() + b"\n")
        return b"".join(out)


def _answer(api: str, body: Any) -> tuple[int, Any]:
    """What the API's own endpoint answers `body` (status, JSON body)."""
    text = _user_text(api, body)
    tokens = _tokens(text)
    mode = tokens.get("MODE", "json")
    if mode == "400":
        if api == "anthropic":
            error = {"type": "invalid_request_error", "message": "max_tokens: too large"}
            return 400, {"type": "error", "error": error}
        return 400, {"error": {"message": "max_tokens is too large", "type": "invalid_request"}}
    if mode == "reset":
        mode = "500"
    reply = _reply(api, mode, body, text, tokens, 0, "none")
    return reply.status, json.loads(reply.body)


def _openai_line(batch: Batch, custom_id: str) -> bytes:
    status, body = batch.results[custom_id]
    line = {
        "id": f"batch_req_{custom_id}",
        "custom_id": custom_id,
        "response": {"status_code": status, "request_id": "req_loopback", "body": body},
        "error": None,
    }
    return json.dumps(line).encode() + b"\n"


def _expired_line(custom_id: str) -> bytes:
    error = {
        "code": "batch_expired",
        "message": "This request could not be executed before the completion window expired.",
    }
    line = {
        "id": f"batch_req_{custom_id}",
        "custom_id": custom_id,
        "response": None,
        "error": error,
    }
    return json.dumps(line).encode() + b"\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""

    @property
    def owner(self) -> BatchServer:
        return self.server.owner  # type: ignore[attr-defined,no-any-return]

    def _read(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _error(self, status: int, message: str, api: str = "openai") -> None:
        if api == "anthropic":
            self._send(
                status,
                {"type": "error", "error": {"type": "invalid_request_error", "message": message}},
            )
        else:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

    def _authorized(self, api: str) -> bool:
        if self.headers.get("authorization") or self.headers.get("x-api-key"):
            return True
        self._error(401, "no API key", api)
        return False

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        raw = self._read()
        owner = self.owner
        if owner.refuse is not None:
            self._send(*owner.refuse)
            return
        parts = path.strip("/").split("/")
        if parts[-1:] == ["cancel"] and parts[:-2] in (
            ["v1", "batches"],
            ["v1", "messages", "batches"],
        ):
            api = "openai" if parts[1] == "batches" else "anthropic"
            if not self._authorized(api):
                return
            batch = owner.find(parts[-2])
            if batch is None or batch.api != api:
                self._error(404, "no such batch", api)
            elif not owner.cancel(batch):
                self._error(400, f"batch {batch.id} has ended: it cannot be cancelled", api)
            else:
                status = owner.openai_status if api == "openai" else owner.anthropic_status
                self._send(200, status(batch))
            return
        if path == "/v1/files":
            if not self._authorized("openai"):
                return
            fields = _form(self.headers.get("content-type", ""), raw)
            if fields.get("purpose") != b"batch" or "file" not in fields:
                self._error(400, "purpose must be batch and a file given")
                return
            file_id = owner._file(fields["file"])
            self._send(
                200,
                {
                    "id": file_id,
                    "object": "file",
                    "purpose": "batch",
                    "bytes": len(fields["file"]),
                    "filename": "batch.jsonl",
                },
            )
            return
        if path == "/v1/batches":
            if not self._authorized("openai"):
                return
            body = json.loads(raw)
            content = owner.files.get(body.get("input_file_id", ""))
            if content is None:
                self._error(400, "no such input file")
                return
            if (
                body.get("endpoint") != "/v1/chat/completions"
                or body.get("completion_window") != "24h"
            ):
                self._error(400, "endpoint must be /v1/chat/completions, window 24h")
                return
            lines = []
            for line in content.splitlines():
                request = json.loads(line)
                if request.get("method") != "POST" or request.get("url") != "/v1/chat/completions":
                    self._error(400, "each line needs method POST and url /v1/chat/completions")
                    return
                lines.append((request["custom_id"], request["body"]))
            if len({c for c, _ in lines}) != len(lines):
                self._error(400, "duplicate custom_id")
                return
            batch = owner._create("openai", lines)
            self._send(200, owner.openai_status(batch))
            return
        if path == "/v1/messages/batches":
            if not self._authorized("anthropic"):
                return
            body = json.loads(raw)
            requests = body.get("requests")
            if not isinstance(requests, list) or not requests:
                self._error(400, "requests: a non-empty list", "anthropic")
                return
            ids = [r.get("custom_id", "") for r in requests]
            if any(not _CUSTOM_ID.match(str(c)) for c in ids) or len(set(ids)) != len(ids):
                self._error(400, "custom_id: unique, ^[a-zA-Z0-9_-]{1,64}$", "anthropic")
                return
            if self.headers.get("anthropic-version") is None:
                self._error(400, "anthropic-version header required", "anthropic")
                return
            batch = owner._create("anthropic", [(r["custom_id"], r["params"]) for r in requests])
            self._send(200, owner.anthropic_status(batch))
            return
        self._error(404, f"unknown endpoint {path}")

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        owner = self.owner
        parts = path.strip("/").split("/")
        if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
            content = owner.files.get(parts[2])
            if content is None:
                self._error(404, "no such file")
            else:
                self._send(200, content, "application/jsonl")
            return
        if parts[:2] == ["v1", "batches"] and len(parts) == 3:
            batch = owner.find(parts[2])
            if batch is None:
                self._error(404, "no such batch")
                return
            owner._look(batch)
            self._send(200, owner.openai_status(batch))
            return
        if parts[:3] == ["v1", "messages", "batches"] and len(parts) in (4, 5):
            batch = owner.find(parts[3])
            if batch is None:
                self._error(404, "no such batch", "anthropic")
                return
            if len(parts) == 5 and parts[4] == "results":
                if not batch.ended:
                    self._error(400, "the batch is still processing", "anthropic")
                else:
                    self._send(200, owner.anthropic_results(batch), "application/x-jsonl")
                return
            owner._look(batch)
            self._send(200, owner.anthropic_status(batch))
            return
        self._error(404, f"unknown endpoint {path}")


def _form(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body, by name (the stdlib's MIME parser)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"content-type: {content_type}\r\n\r\n".encode() + raw
    )
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():  # type: ignore[attr-defined]
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if name:
            fields[str(name)] = payload or b""
    return fields
