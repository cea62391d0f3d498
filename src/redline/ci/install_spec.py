"""Where the running redline was installed from, as a spec CI can install again.

`redline init` writes a workflow that installs redline in every job. It must install the
same redline the user is running, pinned, or CI tests with something else: so the spec
is read from the installed distribution's PEP 610 `direct_url.json`.

- no `direct_url.json`: installed from a package index → `redline==VERSION`
- a VCS install → `redline @ git+URL@COMMIT` (the resolved commit, not the branch)
- an archive (wheel/sdist URL) → `redline @ URL`, with its hash when recorded
- a local folder (a clone, editable or not) → the clone's `origin` remote at its HEAD
  commit when it has one; else the folder itself, which CI cannot reach (the caller
  says so and `--install-spec` overrides it)
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from redline.version import __version__

DIST_NAME = "redline"


@dataclass(frozen=True)
class InstallSpec:
    """A requirement `uv tool install` accepts, and what it is in words."""

    spec: str
    source: str
    #: Pinned to an exact version, commit or file.
    pinned: bool
    #: A path on this machine, which a CI runner does not have.
    local: bool = False
    #: Given by the user (`--install-spec`), taken as written.
    given: bool = False


#: (folder) -> (origin URL, HEAD commit, clean, folder's path inside the clone) or None.
GitLookup = Callable[[Path], "tuple[str, str, bool, str] | None"]


def running_install_spec() -> InstallSpec:
    """The spec of the redline that is running now."""
    try:
        text = metadata.distribution(DIST_NAME).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        text = None
    data = None
    if text:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
    return install_spec_from_direct_url(data, __version__, _git_origin)


def install_spec_from_direct_url(
    data: Mapping[str, Any] | None, version: str, git: GitLookup
) -> InstallSpec:
    """The install spec for a PEP 610 record (None: installed from an index)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("url"), str):
        return InstallSpec(f"{DIST_NAME}=={version}", "the package index", pinned=True)
    url: str = data["url"]
    subdirectory = data.get("subdirectory")
    fragment = f"#subdirectory={subdirectory}" if subdirectory else ""
    vcs = data.get("vcs_info")
    if isinstance(vcs, Mapping):
        commit = vcs.get("commit_id")
        kind = vcs.get("vcs", "git")
        at = f"@{commit}" if commit else ""
        return InstallSpec(
            f"{DIST_NAME} @ {kind}+{url}{at}{fragment}",
            f"{kind} {url}" + (f" at commit {commit}" if commit else ""),
            pinned=bool(commit),
        )
    archive = data.get("archive_info")
    if isinstance(archive, Mapping):
        hashes = archive.get("hashes")
        digest = ""
        if isinstance(hashes, Mapping) and "sha256" in hashes:
            digest = f"#sha256={hashes['sha256']}"
        local = url.startswith("file:")
        return InstallSpec(
            f"{DIST_NAME} @ {url}{digest}", f"the file {url}", pinned=True, local=local
        )
    # A folder: usually a clone of redline's repository.
    folder = Path(unquote(urlparse(url).path)) if url.startswith("file:") else None
    found = git(folder) if folder is not None else None
    if found is not None:
        remote, commit, clean, prefix = found
        if prefix and not subdirectory:
            fragment = f"#subdirectory={prefix}"
        return InstallSpec(
            f"{DIST_NAME} @ git+{_pip_git_url(remote)}@{commit}{fragment}",
            f"the clone at {folder} (its origin {remote} at commit {commit[:12]}"
            + ("" if clean else "; it has uncommitted changes CI will not see")
            + ")",
            pinned=True,
        )
    return InstallSpec(
        f"{DIST_NAME} @ {url}{fragment}", f"the folder {url}", pinned=False, local=True
    )


def _pip_git_url(remote: str) -> str:
    """`git@host:owner/repo.git` (scp form) → `ssh://git@host/owner/repo.git`."""
    if "://" in remote:
        return remote
    user_host, _, path = remote.partition(":")
    return f"ssh://{user_host}/{path}"


def _git_origin(folder: Path) -> tuple[str, str, bool, str] | None:
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(folder), *args],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    remote = git("remote", "get-url", "origin")
    commit = git("rev-parse", "HEAD")
    if not remote or not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    prefix = (git("rev-parse", "--show-prefix") or "").strip("/")
    return remote, commit, status == "", prefix
