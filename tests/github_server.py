"""A loopback server speaking the parts of the GitHub REST API that `redline pull` uses.

Two real HTTP servers on 127.0.0.1: the API, and the artifact storage that the API's
archive download redirects to (another origin, which, like GitHub's storage, refuses a
request carrying an Authorization header). Behaviour a test can set:

- runs of one workflow with artifacts (zip bytes, or expired), newest first;
- `page_size`: the most items a page holds, whatever `per_page` asks (Link headers follow);
- `token`: the token the API accepts (None: no authentication); `private`: listing needs it
  too (downloads always do); `forbidden`: every call answers 403 (token lacks permission);
- `rate_limit(remaining, reset_in_s)`: after `remaining` more calls, 403 with
  `x-ratelimit-remaining: 0` and `x-ratelimit-reset` until the reset time;
- `secondary_limited`: that many calls answer 429 with `Retry-After: 1`;
- `gone`: artifact ids whose download answers 410; `blob_failures`: artifact id → how
  many downloads the storage answers 500 (math.inf: always).

Every request is recorded (`requests`) so tests can assert what was downloaded.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import threading
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

WORKFLOW = "prompt-evals.yml"


@dataclass
class Artifact:
    id: int
    name: str
    data: bytes
    expired: bool = False


@dataclass
class WorkflowRun:
    id: int
    number: int
    created_at: str
    branch: str = "main"
    event: str = "schedule"
    status: str = "completed"
    artifacts: list[Artifact] = field(default_factory=list)


@dataclass(frozen=True)
class Seen:
    server: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]
    status: int


def zip_folder(folder: Path, prefix: str = "") -> bytes:
    """The folder's files in a zip at its root, as actions/upload-artifact packs them."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, prefix + path.relative_to(folder).as_posix())
    return buffer.getvalue()


class LoopbackGitHub:
    def __init__(
        self,
        repo: str = "acme/shop",
        token: str | None = "ghs_loopback",
        default_branch: str = "main",
        page_size: int = 100,
    ) -> None:
        self.repo = repo
        self.token = token
        self.default_branch = default_branch
        self.page_size = page_size
        self.workflow = WORKFLOW
        self.private = True
        self.forbidden = False
        self.runs: list[WorkflowRun] = []
        self.gone: set[int] = set()
        self.blob_failures: dict[int, float] = {}
        self.requests: list[Seen] = []
        self._ids = itertools.count(1000)
        #: The next this-many API calls answer 429 with `Retry-After: 1` (a secondary limit).
        self.secondary_limited = 0
        self._limit_left: float = math.inf
        self._reset_at = 0.0
        self._lock = threading.Lock()
        self._api = _Server(("127.0.0.1", 0), self, "api")
        self._blob = _Server(("127.0.0.1", 0), self, "blob")

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self._api.server_address[1]}"

    @property
    def blob_url(self) -> str:
        return f"http://127.0.0.1:{self._blob.server_address[1]}"

    def start(self) -> LoopbackGitHub:
        for server in (self._api, self._blob):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        for server in (self._api, self._blob):
            server.shutdown()
            server.server_close()

    def __enter__(self) -> LoopbackGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add_run(
        self,
        number: int,
        created_at: str,
        artifacts: Mapping[str, bytes | None],
        **kw: Any,
    ) -> WorkflowRun:
        """A workflow run; an artifact given as None is expired."""
        run = WorkflowRun(next(self._ids), number, created_at, **kw)
        for name, data in artifacts.items():
            run.artifacts.append(Artifact(next(self._ids), name, data or b"", data is None))
        self.runs.append(run)
        return run

    def rate_limit(self, remaining: int, reset_in_s: float) -> None:
        with self._lock:
            self._limit_left = remaining
            self._reset_at = time.time() + reset_in_s

    def downloads(self) -> list[Seen]:
        return [r for r in self.requests if r.server == "blob" and r.status == 200]

    # -- answering, called by the handlers ------------------------------------------------

    def _rate_limited(self) -> bool:
        with self._lock:
            if self._limit_left <= 0 and time.time() >= self._reset_at:
                self._limit_left = math.inf
            if self._limit_left <= 0:
                return True
            self._limit_left -= 1
            return False

    def api(self, path: str, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> Reply:
        auth = headers.get("authorization")
        with self._lock:
            secondary = self.secondary_limited > 0
            self.secondary_limited -= secondary
        if secondary:
            return Reply(
                429, {"message": "You have exceeded a secondary rate limit."}, {"retry-after": "1"}
            )
        if self._rate_limited():
            return Reply(
                403,
                {"message": "API rate limit exceeded for installation."},
                {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(self._reset_at))},
            )
        if self.token is not None and auth is not None and auth != f"Bearer {self.token}":
            return Reply(401, {"message": "Bad credentials"})
        if self.forbidden:
            return Reply(403, {"message": "Resource not accessible by integration"})
        parts = path.strip("/").split("/")
        if parts[:1] != ["repos"] or "/".join(parts[1:3]) != self.repo:
            return Reply(404, {"message": "Not Found"})
        download = len(parts) == 7 and parts[3:5] == ["actions", "artifacts"] and parts[6] == "zip"
        if self.token is not None and auth is None and (self.private or download):
            return Reply(401, {"message": "Requires authentication"})
        rest = parts[3:]
        if not rest:
            return Reply(200, {"full_name": self.repo, "default_branch": self.default_branch})
        if rest[:2] == ["actions", "workflows"] and len(rest) == 4 and rest[3] == "runs":
            if rest[2] != self.workflow:
                return Reply(404, {"message": "Not Found"})
            return self._page(path, query, "workflow_runs", self._runs(query))
        if rest[:2] == ["actions", "runs"] and len(rest) == 4 and rest[3] == "artifacts":
            run = next((r for r in self.runs if str(r.id) == rest[2]), None)
            if run is None:
                return Reply(404, {"message": "Not Found"})
            return self._page(path, query, "artifacts", [self._artifact(a) for a in run.artifacts])
        if download:
            artifact = self._find_artifact(rest[2])
            if artifact is None:
                return Reply(404, {"message": "Not Found"})
            if artifact.expired or artifact.id in self.gone:
                return Reply(410, {"message": "Artifact has expired"})
            location = f"{self.blob_url}/blob/{artifact.id}?sig=signed"
            return Reply(302, None, {"location": location})
        return Reply(404, {"message": "Not Found"})

    def blob(self, path: str, headers: Mapping[str, str]) -> Reply:
        if "authorization" in headers:
            return Reply(400, {"message": "Authorization header not allowed with a signed URL"})
        artifact = self._find_artifact(path.rsplit("/", 1)[-1])
        if artifact is None:
            return Reply(404, None)
        with self._lock:
            left = self.blob_failures.get(artifact.id, 0)
            if left > 0:
                self.blob_failures[artifact.id] = left - 1
                return Reply(500, {"message": "storage failed on purpose"})
        return Reply(200, artifact.data, {"content-type": "application/zip"})

    def _runs(self, query: Mapping[str, list[str]]) -> list[dict[str, Any]]:
        branch = query.get("branch", [None])[0]
        status = query.get("status", [None])[0]
        created = query.get("created", [""])[0]
        runs = sorted(self.runs, key=lambda r: r.created_at, reverse=True)
        return [
            {
                "id": r.id,
                "run_number": r.number,
                "html_url": f"https://github.com/{self.repo}/actions/runs/{r.id}",
                "head_branch": r.branch,
                "event": r.event,
                "status": r.status,
                "created_at": r.created_at,
            }
            for r in runs
            if (branch is None or r.branch == branch)
            and (status is None or r.status == status)
            and (not created.startswith(">=") or r.created_at[:10] >= created[2:])
        ]

    def _artifact(self, a: Artifact) -> dict[str, Any]:
        return {
            "id": a.id,
            "name": a.name,
            "size_in_bytes": len(a.data),
            "expired": a.expired,
            "archive_download_url": (
                f"{self.api_url}/repos/{self.repo}/actions/artifacts/{a.id}/zip"
            ),
        }

    def _find_artifact(self, artifact_id: str) -> Artifact | None:
        for run in self.runs:
            for a in run.artifacts:
                if str(a.id) == artifact_id:
                    return a
        return None

    def _page(
        self, path: str, query: Mapping[str, list[str]], key: str, items: list[dict[str, Any]]
    ) -> Reply:
        per_page = min(int(query.get("per_page", ["30"])[0]), self.page_size)
        page = int(query.get("page", ["1"])[0])
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            params = {k: v[0] for k, v in query.items()} | {"page": str(page + 1)}
            headers["link"] = f'<{self.api_url}{path}?{urlencode(params)}>; rel="next"'
        return Reply(200, {"total_count": len(items), key: chunk}, headers)


@dataclass
class Reply:
    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], github: LoopbackGitHub, role: str) -> None:
        super().__init__(address, _Handler)
        self.github = github
        self.role = role


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without this, Nagle's algorithm and delayed
    # ACKs stall every keep-alive response by 40 ms on loopback.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        headers = {k.lower(): v for k, v in self.headers.items()}
        github = self.server.github
        if self.server.role == "api":
            reply = github.api(url.path, query, headers)
        else:
            reply = github.blob(url.path, headers)
        github.requests.append(Seen(self.server.role, url.path, query, headers, reply.status))
        if reply.body is None:
            body = b""
        elif isinstance(reply.body, bytes):
            body = reply.body
        else:
            body = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if not isinstance(reply.body, bytes):
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
