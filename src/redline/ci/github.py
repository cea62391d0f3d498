"""GitHub Actions through its REST API: workflow runs, their artifacts, the artifact zips.

Credentials come from the environment (`GITHUB_TOKEN`, `GH_TOKEN`) or the GitHub CLI
(`gh auth token`), never from a file; the API base from `GITHUB_API_URL`, as Actions and
GitHub Enterprise set it. Pages are followed through `Link` headers; a used-up rate limit
is waited out when its reset is near, else the pull stops and says when to try again.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote, urlsplit

from redline.ci.provider import (
    CiArtifact,
    CiRun,
    RunQuery,
)
from redline.errors import ArtifactExpired, ArtifactFailed, CiError, GitError, UsageError
from redline.httpio import BlockingHttpClient, HttpAnswer, HttpClient, HttpFailure, HttpPolicy
from redline.providers.retries import RetryPolicy, parse_retry_after
from redline.text.lines import breaks_line
from redline.version import __version__

DEFAULT_API_URL = "https://api.github.com"
TOKEN_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN")
#: The longest wait for a rate limit to reset before the pull stops instead (seconds).
DEFAULT_RATE_LIMIT_WAIT_S = 300.0
_PER_PAGE = 100
#: An artifact zip may be large and slow to come: its own deadline and size ceiling.
_DOWNLOAD = HttpPolicy(timeout_s=900.0, max_response_bytes=4 * 1024**3)
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_REMOTE_PATH = re.compile(r"[:/]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def api_url() -> str:
    """The REST API base: `GITHUB_API_URL` (Actions, GitHub Enterprise) or api.github.com."""
    return (os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")


def resolve_repo(explicit: str | None, root: Path) -> str:
    """`owner/name`: from --repo, else `GITHUB_REPOSITORY` (set in Actions), else `origin`."""
    if explicit:
        if not _REPO.match(explicit):
            raise UsageError(f"--repo {explicit!r}: write it as owner/name, e.g. acme/shop")
        return explicit
    from_env = os.environ.get("GITHUB_REPOSITORY", "")
    if _REPO.match(from_env):
        return from_env
    from redline.gitio import open_repo, remote_url

    try:
        with open_repo(root) as repo:
            url = remote_url(repo)
    except GitError:
        url = None
    if url is None:
        raise UsageError(
            "no repository to pull from: this folder has no `origin` remote; "
            "name one with --repo owner/name"
        )
    match = _REMOTE_PATH.search(url)
    if match is None:
        raise UsageError(
            f"cannot read owner/name from the origin remote {url!r}; name it with --repo owner/name"
        )
    return f"{match.group(1)}/{match.group(2)}"


def resolve_token(api: str) -> str | None:
    """A token from `GITHUB_TOKEN` / `GH_TOKEN`, else from `gh auth token`; None without one."""
    for name in TOKEN_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    gh = shutil.which("gh")
    if gh is None:
        return None
    command = [gh, "auth", "token"]
    host = urlsplit(api).hostname or ""
    if host and host != "api.github.com":
        command += ["--hostname", host.removeprefix("api.")]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    token = done.stdout.strip()
    return token if done.returncode == 0 and token else None


class GitHubActions:
    """A `CiProvider` for one repository's GitHub Actions."""

    name = "github"

    def __init__(
        self,
        repo: str,
        token: str | None,
        api: str = DEFAULT_API_URL,
        *,
        rate_limit_wait_s: float = DEFAULT_RATE_LIMIT_WAIT_S,
        retry: RetryPolicy | None = None,
        timeout_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.repo = repo
        self._api = api.rstrip("/")
        self._has_token = token is not None
        self._rate_limit_wait_s = rate_limit_wait_s
        self._retry = retry or RetryPolicy(max_retries=3, backoff_base_s=1.0, backoff_max_s=15.0)
        self._sleep = sleep
        self._clock = clock
        self._rng = random.Random()
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"redline/{__version__}",
        }
        if token is not None:
            if breaks_line(token):
                raise CiError(
                    "the GitHub token contains a line break (CR or LF): set GITHUB_TOKEN "
                    "(or GH_TOKEN) to the token alone, on one line"
                )
            headers["Authorization"] = f"Bearer {token}"
        self._client = BlockingHttpClient(
            HttpClient(
                HttpPolicy(timeout_s=timeout_s, connect_timeout_s=15.0),
                headers=headers,
                secrets=[token] if token else [],
            )
        )
        self._default_branch: str | None = None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> GitHubActions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the CiProvider interface ---------------------------------------------------------

    def default_branch(self) -> str:
        if self._default_branch is None:
            data = self._get_json(
                f"{self._api}/repos/{self.repo}",
                not_found=(
                    f"GitHub has no repository {self.repo}, or the token cannot see it: check "
                    "--repo (or the origin remote)"
                    + ("" if self._has_token else ", and set GITHUB_TOKEN for a private one")
                ),
            )
            self._default_branch = str(data.get("default_branch") or "main")
        return self._default_branch

    def runs(self, query: RunQuery) -> Iterator[CiRun]:
        branch = query.branch or self.default_branch()
        workflow = query.workflow.rsplit("/", 1)[-1]
        params: dict[str, str] = {
            "branch": branch,
            "status": "completed",
            "exclude_pull_requests": "true",
            "per_page": str(min(_PER_PAGE, query.last) if query.last else _PER_PAGE),
        }
        if query.since is not None:
            params["created"] = f">={query.since.isoformat()}"
        url: str | None = f"{self._api}/repos/{self.repo}/actions/workflows/{quote(workflow)}/runs"
        not_found = (
            f"no workflow {workflow!r} in {self.repo}: --workflow names a file in "
            ".github/workflows/ (the one `redline init` writes is prompt-evals.yml)"
        )
        yielded = 0
        current: str = os.environ.get("GITHUB_RUN_ID", "")
        while url is not None:
            response = self._request(url, params, not_found=not_found)
            params = {}  # the next page's URL carries them
            for item in _items(response, "workflow_runs"):
                run = _run(item)
                if run.id == current:  # the job pulling is part of this run: not finished
                    continue
                if query.since is not None and run.created_at[:10] < query.since.isoformat():
                    continue
                yield run
                yielded += 1
                if query.last is not None and yielded >= query.last:
                    return
            url = _next_page(response)

    def artifacts(self, run: CiRun) -> list[CiArtifact]:
        found: list[CiArtifact] = []
        url: str | None = f"{self._api}/repos/{self.repo}/actions/runs/{run.id}/artifacts"
        params = {"per_page": str(_PER_PAGE)}
        while url is not None:
            response = self._request(
                url, params, not_found=f"CI run {run.id} of {self.repo} no longer exists"
            )
            params = {}
            found += [_artifact(a) for a in _items(response, "artifacts")]
            url = _next_page(response)
        return found

    def download(self, artifact: CiArtifact, into: IO[bytes]) -> None:
        """Stream the zip into `into`, following GitHub's redirect to its storage.

        The Authorization header is dropped when the redirect leaves the API's host, as
        the storage (a signed URL) requires.
        """
        for attempt in range(self._retry.max_retries + 1):
            into.seek(0)
            into.truncate()
            try:
                response = self._client.request(
                    "GET", artifact.download_url, follow_redirects=True, into=into, policy=_DOWNLOAD
                )
                if response.status == 200:
                    into.seek(0)
                    return
                self._refusal(response, what=f"artifact {artifact.name}")
            except _Retry as retry:
                failure = str(retry)
                self._sleep(retry.wait_s or self._retry.backoff_s(attempt + 1, self._rng))
                continue
            except HttpFailure as exc:
                failure = str(exc)
            except ArtifactFailed:
                raise
            if attempt < self._retry.max_retries:
                self._sleep(self._retry.backoff_s(attempt + 1, self._rng))
        raise ArtifactFailed(f"artifact {artifact.name}: download failed ({failure})")

    # -- requests -------------------------------------------------------------------------

    def _get_json(self, url: str, *, not_found: str) -> dict[str, Any]:
        data = self._request(url, {}, not_found=not_found).json()
        if not isinstance(data, dict):
            raise CiError(f"GitHub answered {url} with something other than a JSON object")
        return data

    def _request(self, url: str, params: Mapping[str, str], *, not_found: str) -> HttpAnswer:
        """GET with retries for 5xx and transport errors; CiError for what retrying can't fix."""
        failure = ""
        for attempt in range(self._retry.max_retries + 1):
            try:
                response = self._client.request(
                    "GET", url, params=params or None, follow_redirects=True, decompress=True
                )
            except HttpFailure as exc:
                failure = str(exc)
            else:
                if response.status == 200:
                    return response
                try:
                    self._refusal(response, what=_path(url), not_found=not_found)
                except _Retry as retry:
                    failure = str(retry)
                    if retry.wait_s is not None:
                        self._sleep(retry.wait_s)
                        continue
                except ArtifactFailed as exc:
                    raise CiError(str(exc)) from None
            if attempt < self._retry.max_retries:
                self._sleep(self._retry.backoff_s(attempt + 1, self._rng))
        raise CiError(
            f"GitHub did not answer {_path(url)} after {self._retry.max_retries + 1} tries "
            f"({failure}); try again later"
        )

    def _refusal(self, response: HttpAnswer, *, what: str, not_found: str = "") -> None:
        """Raise what a non-200 answer means: _Retry, ArtifactFailed/Expired, or CiError."""
        status = response.status
        message = self._client.client.redact(_message(response))
        from_storage = urlsplit(response.url).hostname != urlsplit(self._api).hostname
        if status in (403, 429) and not from_storage:
            wait = self._rate_limit_wait(response)
            if wait is not None:
                raise _Retry(f"rate limited on {what}", wait)
        if status >= 500 or status == 429:
            raise _Retry(f"{what}: HTTP {status} {message}".rstrip(), None)
        if from_storage:
            raise ArtifactFailed(
                f"{what}: the artifact storage answered HTTP {status} {message}".rstrip()
            )
        if status == 410:
            raise ArtifactExpired(f"{what}: expired, GitHub no longer keeps it")
        if status == 401:
            if not self._has_token:
                raise CiError(
                    f"GitHub needs a token for {what}: set GITHUB_TOKEN (or GH_TOKEN) to a "
                    "token that can read Actions, or log in with `gh auth login`"
                )
            raise CiError(
                f"GitHub refused the token (HTTP 401 {message}): it is wrong or expired; set "
                "GITHUB_TOKEN (or GH_TOKEN) to a valid token, or log in again with `gh auth login`"
            )
        if status == 403:
            raise CiError(
                f"GitHub refused access to {what} (HTTP 403 {message}): the token needs read "
                f"access to Actions of {self.repo} (a fine-grained token with 'Actions: read', "
                "a classic token with the `repo` scope for a private repository, or "
                "`permissions: actions: read` in a workflow)"
            )
        if status == 404:
            if not_found:
                raise CiError(not_found)
            raise ArtifactFailed(f"{what}: GitHub has no such artifact any more (HTTP 404)")
        raise CiError(f"GitHub answered HTTP {status} on {what}: {message}")

    def _rate_limit_wait(self, response: HttpAnswer) -> float | None:
        """Seconds to wait out a rate limit; None when this answer is no rate limit.

        CiError when the reset is further away than the pull is allowed to wait.
        """
        headers = response.headers
        retry_after = parse_retry_after(headers.get("retry-after"))
        wait: float | None = retry_after
        if headers.get("x-ratelimit-remaining") == "0":
            try:
                reset = float(headers.get("x-ratelimit-reset", ""))
            except ValueError:
                reset = self._clock() + 60.0
            wait = max(wait or 0.0, reset - self._clock() + 1.0)
        if wait is None:
            return None
        if wait > self._rate_limit_wait_s:
            resume = dt.datetime.fromtimestamp(self._clock() + wait, dt.UTC)
            hint = "" if self._has_token else " (set GITHUB_TOKEN: a token has a higher limit)"
            raise CiError(
                f"GitHub's API rate limit is used up until {resume:%H:%M:%S} UTC "
                f"({wait:.0f} s from now, more than --rate-limit-wait "
                f"{self._rate_limit_wait_s:.0f} s); everything imported so far is kept: run "
                f"`redline pull` again after {resume:%H:%M} UTC{hint}"
            )
        return max(0.0, wait)


class _Retry(Exception):
    """A retryable answer; wait_s is the server's wait (rate limit), None for backoff."""

    def __init__(self, message: str, wait_s: float | None) -> None:
        super().__init__(message)
        self.wait_s = wait_s


def _message(response: HttpAnswer) -> str:
    try:
        data = response.json()
    except ValueError:
        return ""
    return f"{data.get('message')}" if isinstance(data, dict) and data.get("message") else ""


def _path(url: str) -> str:
    return urlsplit(url).path or url


def _next_page(response: HttpAnswer) -> str | None:
    return response.links.get("next")


def _items(response: HttpAnswer, key: str) -> list[dict[str, Any]]:
    try:
        data = response.json()
    except ValueError:
        raise CiError(f"GitHub answered {_path(response.url)} with invalid JSON") from None
    items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise CiError(f"GitHub's answer on {_path(response.url)} has no {key!r} list")
    return [i for i in items if isinstance(i, dict)]


def _run(item: Mapping[str, Any]) -> CiRun:
    number = item.get("run_number")
    return CiRun(
        id=str(item["id"]),
        number=int(number) if isinstance(number, int) else None,
        url=str(item.get("html_url") or ""),
        created_at=str(item.get("created_at") or ""),
        branch=item.get("head_branch"),
        event=item.get("event"),
    )


def _artifact(item: Mapping[str, Any]) -> CiArtifact:
    return CiArtifact(
        id=str(item["id"]),
        name=str(item.get("name") or item["id"]),
        size=int(item.get("size_in_bytes") or 0),
        expired=bool(item.get("expired")),
        download_url=str(item["archive_download_url"]),
    )
