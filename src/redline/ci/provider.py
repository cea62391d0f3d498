"""What `redline pull` needs from a CI system: its runs, their artifacts, the artifacts' bytes.

A provider maps its CI system onto these few types: GitHub Actions' workflow runs and
their artifacts today; GitLab's pipelines and the artifact archives of their jobs would
map the same way (a pipeline is a `CiRun`, each job's archive a `CiArtifact`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Protocol


@dataclass(frozen=True)
class RunQuery:
    """Which CI runs to pull: a workflow's finished runs on a branch, newest first."""

    workflow: str
    #: None: the repository's default branch.
    branch: str | None = None
    #: At most this many runs (the newest); None: no limit.
    last: int | None = None
    #: Only runs created on or after this day (UTC).
    since: dt.date | None = None


@dataclass(frozen=True)
class CiRun:
    id: str
    number: int | None
    url: str
    created_at: str
    branch: str | None = None
    event: str | None = None


@dataclass(frozen=True)
class CiArtifact:
    id: str
    name: str
    size: int
    expired: bool
    download_url: str


class CiProvider(Protocol):
    """A CI system's API, as `redline pull` uses it."""

    #: Short name stored with each pulled run (`github`).
    @property
    def name(self) -> str: ...

    #: The repository as the CI system names it (`owner/name`).
    @property
    def repo(self) -> str: ...

    def runs(self, query: RunQuery) -> Iterator[CiRun]:
        """Finished runs matching `query`, newest first; CiError when CI refuses."""
        ...

    def artifacts(self, run: CiRun) -> list[CiArtifact]:
        """Every artifact of one run, expired ones included (marked)."""
        ...

    def download(self, artifact: CiArtifact, into: IO[bytes]) -> None:
        """Write the artifact's zip to `into`; ArtifactFailed/ArtifactExpired, or CiError."""
        ...
