"""Runs that CI stored as artifacts: list them, download them, import them (`redline pull`).

The CI-specific part is a `CiProvider` (GitHub Actions today); `pull` works with any.
"""

from redline.ci.provider import CiArtifact, CiError, CiProvider, CiRun, RunQuery
from redline.ci.pull import PullProgress, PullSummary, pull

__all__ = [
    "CiArtifact",
    "CiError",
    "CiProvider",
    "CiRun",
    "PullProgress",
    "PullSummary",
    "RunQuery",
    "pull",
]
