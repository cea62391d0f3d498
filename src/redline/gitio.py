"""Every git read redline makes, through the `git` command, without touching the working tree.

The guard compares files between commits and the index; the runner records which
commit a run saw; the TUI reruns against a base revision and stages one file. None of
them may check anything out, so files are read as blobs straight from the object store.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType

from redline.errors import GitCommandError, GitError, GitUnavailable

#: The revision name that means "the index" (git's own `:path` notation).
INDEX = ":"

_GITLINK_MODE = "160000"
_NULL_MODES = {"000000"}


class Repo:
    """A repository with a working tree, driven through the `git` command.

    Every read goes through git itself, so packed objects, shallow and partial clones,
    grafts and alternates are seen exactly as git sees them.
    """

    def __init__(self, top: Path, git_dir: Path, common_dir: Path) -> None:
        self.top = top
        self.git_dir = git_dir
        self.common_dir = common_dir
        self._batch: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Repo:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def run(self, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
        """stdout of `git ARGS` run at the top of the working tree."""
        done = _git(args, self.top, stdin=stdin)
        if check and done.returncode != 0:
            raise GitCommandError(args, done.stderr.decode(errors="replace"))
        return done.stdout

    def text(self, *args: str) -> str:
        return self.run(*args).decode("utf-8", errors="surrogateescape")

    def object(self, name: str) -> tuple[str, bytes] | None:
        """(type, content) of one object named the way git names it (`REV:path`, `:path`),
        or None when there is none, through one long-lived `git cat-file --batch`."""
        if "\n" in name:
            return None
        if self._batch is None or self._batch.poll() is not None:
            try:
                self._batch = subprocess.Popen(
                    ["git", "cat-file", "--batch"],
                    cwd=self.top,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=_GIT_ENV,
                )
            except FileNotFoundError:
                raise GitUnavailable() from None
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(name.encode("utf-8", errors="surrogateescape") + b"\n")
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) < 3 or header[-1] in (b"missing", b"ambiguous"):
            return None
        size = int(header[2])
        content = self._batch.stdout.read(size + 1)[:size]
        return header[1].decode(), content

    def close(self) -> None:
        if self._batch is not None:
            if self._batch.stdin is not None:
                self._batch.stdin.close()
            self._batch.wait()
            if self._batch.stdout is not None:
                self._batch.stdout.close()
            self._batch = None


#: Never open a pager or an editor, never prompt; keep GIT_INDEX_FILE (hooks rely on it).
_GIT_ENV = {**os.environ, "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def _git(
    args: Sequence[str],
    cwd: Path,
    *,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`git ARGS` run in `cwd`, its output captured; GitUnavailable when git is not installed."""
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            check=False,
            env=_GIT_ENV if env is None else env,
        )
    except FileNotFoundError:
        raise GitUnavailable() from None


@dataclass(frozen=True)
class FileChange:
    """One changed path between two sides; renames carry both paths."""

    status: str  # A, D, M, R, T (type change), C (copy)
    old_path: str | None
    new_path: str | None
    submodule: bool = False

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


def _discover(path: Path) -> tuple[Path, Path, Path, bool] | None:
    """(top, git dir, common dir, bare) of the repository holding `path`, or None."""
    start = path if path.is_dir() else path.parent
    done = _git(
        [
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
            "--is-bare-repository",
        ],
        start,
    )
    lines = done.stdout.decode(errors="surrogateescape").splitlines()
    if done.returncode != 0:
        if b"--show-toplevel" in done.stderr or b"bare" in done.stderr:
            return _discover_bare(start)
        return None
    top, git_dir, common, bare = lines[0], lines[1], lines[2], lines[3]
    return Path(top), Path(git_dir), Path(common), bare == "true"


def _discover_bare(start: Path) -> tuple[Path, Path, Path, bool] | None:
    done = _git(["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"], start)
    if done.returncode != 0:
        return None
    git_dir, common = done.stdout.decode(errors="surrogateescape").splitlines()[:2]
    return Path(git_dir), Path(git_dir), Path(common), True


def repo_state(root: Path) -> tuple[str | None, bool]:
    """(HEAD commit sha, dirty) of the repository holding `root`; (None, False) outside git.

    Dirty means tracked files differ from HEAD (staged or not); untracked files do not count.
    """
    found = _discover(root) if root.exists() else None
    if found is None:
        return None, False
    top, git_dir, common, bare = found
    repo = Repo(top, git_dir, common)
    sha = head_commit(repo)
    if bare:
        return sha, False
    out = repo.run("status", "--porcelain", "-z", "--untracked-files=no", check=False)
    return sha, bool(out.strip(b"\0"))


def repo_branch(root: Path) -> str | None:
    """The branch checked out where `root` is; None when detached or outside git."""
    found = _discover(root) if root.exists() else None
    if found is None:
        return None
    top, git_dir, common, _ = found
    return head_branch(Repo(top, git_dir, common))


def open_repo(path: Path) -> Repo:
    """The repository whose working tree holds `path`."""
    if not path.exists():
        raise GitError(f"{path}: no such file or directory")
    found = _discover(path)
    if found is None:
        raise GitError(
            f"{path} is not inside a git repository (run `git init` or change directory)"
        )
    top, git_dir, common, bare = found
    if bare:
        raise GitError(f"{git_dir} is a bare repository; run redline in a working tree")
    return Repo(top, git_dir, common)


def work_tree(repo: Repo) -> Path:
    return repo.top


def repo_path(repo: Repo, path: Path) -> str:
    """`path` relative to the top of the working tree, POSIX style, as git names it."""
    top = work_tree(repo).resolve()
    try:
        rel = path.resolve().relative_to(top)
    except ValueError:
        raise GitError(f"{path} is outside the repository at {top}") from None
    return rel.as_posix() if str(rel) != "." else ""


def head_commit(repo: Repo) -> str | None:
    """The sha HEAD points at, or None when the repository has no commits yet."""
    out = repo.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).strip()
    return out.decode() if out else None


def head_branch(repo: Repo) -> str | None:
    """The checked-out branch name, or None for a detached HEAD."""
    out = repo.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip()
    return out.decode() if out else None


def is_shallow(repo: Repo) -> bool:
    out = repo.run("rev-parse", "--is-shallow-repository", check=False).strip()
    return out == b"true" or (repo.common_dir / "shallow").is_file()


def require_commits(repo: Repo) -> str:
    sha = head_commit(repo)
    if sha is None:
        raise GitError(
            f"the repository at {work_tree(repo)} has no commits yet; "
            "commit once first (only --staged works before the first commit)"
        )
    return sha


def resolve_commit(repo: Repo, rev: str) -> str:
    """The full sha of `rev`, with a clear message for unknown names and shallow clones."""
    if not rev or rev.startswith("-"):
        raise GitError(f"{rev!r} is not a revision")
    out = repo.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False).strip()
    if out:
        return out.decode()
    if rev in ("HEAD", "@") and head_commit(repo) is None:
        require_commits(repo)
    hint = ""
    if is_shallow(repo):
        hint = (
            "; this is a shallow clone: fetch the history you need "
            "(`git fetch --unshallow`, or `fetch-depth: 0` in actions/checkout)"
        )
    raise GitError(f"unknown revision {rev!r}{hint}")


def parents(repo: Repo, sha: str) -> list[str]:
    """Parents of a commit; a commit at a shallow boundary raises (its parent is not here).

    Asks git itself (`rev-list --parents`, `cat-file -e`), which sees packed objects,
    grafts and replacements; a parent git knows of but cannot read is "not fetched".
    """
    line = repo.text("rev-list", "--parents", "-n", "1", sha).split()
    shas = line[1:]
    boundary = sha in _shallow_commits(repo)
    missing = [p for p in shas if not _has_commit(repo, p)]
    if missing or (boundary and not shas):
        raise GitError(
            f"commit {sha[:12]} is at the boundary of a shallow clone and its parent is "
            "not fetched; deepen the clone (`git fetch --deepen=50`, or `fetch-depth: 0` "
            "in actions/checkout)"
        )
    return shas


def _shallow_commits(repo: Repo) -> set[str]:
    if not is_shallow(repo):
        return set()
    boundary = repo.common_dir / "shallow"
    return set(boundary.read_text().split()) if boundary.is_file() else set()


def _has_commit(repo: Repo, sha: str) -> bool:
    done = _git(
        ["cat-file", "-e", f"{sha}^{{commit}}"],
        repo.top,
        env={**_GIT_ENV, "GIT_NO_LAZY_FETCH": "1"},
    )
    return done.returncode == 0


def path_history(repo: Repo, rev: str, path: str, limit: int = 30) -> list[str]:
    """Commits up to `rev` that changed `path`, newest first (at most `limit`)."""
    out = repo.run("rev-list", f"--max-count={limit}", rev, "--", path, check=False)
    return out.decode().split()


class Snapshot:
    """The files of one side of a comparison: a commit, the index, or nothing (rev None).

    Reads blobs through git (`prefetch` reads many in one `git cat-file --batch`). The
    index is read through git itself, so GIT_INDEX_FILE (set for hooks run by
    `git commit -a` or `git commit PATH`) is honoured.
    """

    def __init__(self, repo: Repo, rev: str | None) -> None:
        self.repo = repo
        self.rev = rev
        self._ids: dict[str, tuple[str, str]] = {}  # path → (mode, blob sha)
        self._listed: set[str] = set()  # folders listed so far ("" = everything)
        self._cache: dict[str, bytes | None] = {}
        if rev is not None and rev != INDEX:
            found = repo.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
            if not found.strip():
                raise GitError(f"unknown revision {rev!r}")
            self.rev = found.strip().decode()
        elif rev == INDEX:
            self._list(())

    @property
    def head(self) -> str | None:
        """The commit this side builds on: itself, or HEAD for the index."""
        if self.rev == INDEX:
            return head_commit(self.repo)
        return self.rev

    def read(self, path: str) -> bytes | None:
        """Bytes of a file, or None when absent (a folder or a submodule is not a file)."""
        path = (
            posixpath.normpath(path)
            if ("//" in path or "/." in path or path.startswith("."))
            else path
        )
        if self.rev is None or not path or path == ".":
            return None
        if path in self._cache:
            return self._cache[path]
        entry = self._ids.get(path)
        data: bytes | None = None
        if entry is not None:
            if entry[0] != _GITLINK_MODE:
                found = self.repo.object(entry[1])
                data = found[1] if found is not None and found[0] == "blob" else None
        elif self.rev != INDEX and "" not in self._listed:
            found = self.repo.object(f"{self.rev}:{path}")
            data = found[1] if found is not None and found[0] == "blob" else None
        self._cache[path] = data
        return data

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read many listed files in one git call; later `read`s come from memory."""
        wanted = {
            p: self._ids[p][1]
            for p in paths
            if p in self._ids and p not in self._cache and self._ids[p][0] != _GITLINK_MODE
        }
        if wanted:
            blobs = _cat_blobs(self.repo, sorted(set(wanted.values())))
            for path, sha in wanted.items():
                if sha in blobs:
                    self._cache[path] = blobs[sha]

    def files(self, under: Sequence[str] = ()) -> list[str]:
        """Every file path below the given folders (all files when `under` is empty), sorted."""
        if self.rev is None:
            return []
        specs = tuple(sorted(u.strip("/") for u in under))
        if not all(specs):
            specs = ()
        if self.rev != INDEX and not self._covered(specs):
            self._list(specs)
        if not specs:
            return sorted(self._ids)
        return sorted(p for p in self._ids if any(p.startswith(s + "/") for s in specs))

    def _list(self, specs: tuple[str, ...]) -> None:
        if self.rev == INDEX:
            out = self.repo.text("ls-files", "-z", "--stage")
        else:
            assert self.rev is not None
            out = self.repo.text("ls-tree", "-r", "-z", "--full-tree", self.rev, "--", *specs)
        for record in out.split("\0"):
            meta, _, path = record.partition("\t")
            fields = meta.split()
            if len(fields) < 3:
                continue
            if self.rev == INDEX and fields[2] != "0":
                continue  # a merge conflict's stages 1-3: only stage 0 is staged content
            self._ids[path] = (fields[0], fields[1] if self.rev == INDEX else fields[2])
        self._listed.update(specs or ("",))

    def _covered(self, specs: tuple[str, ...]) -> bool:
        if "" in self._listed:
            return True
        if not specs:
            return False
        return all(any(s == d or s.startswith(d + "/") for d in self._listed) for s in specs)


def file_at(repo: Repo, rev: str, path: str) -> bytes | None:
    """Bytes of `path` at commit `rev` (or in the index when rev is INDEX); None if absent.

    A directory or a submodule entry is not a file and also gives None.
    """
    return Snapshot(repo, rev).read(path)


def list_files(repo: Repo, rev: str, under: Sequence[str] = ()) -> list[str]:
    """Paths of every file at `rev` (or in the index) below the given folders, sorted."""
    specs = [u.strip("/") for u in under]
    if not all(specs):
        specs = []
    if rev == INDEX:
        out = repo.text("ls-files", "-z", "--cached", "--", *specs)
    else:
        out = repo.text("ls-tree", "-r", "-z", "--name-only", rev, "--", *specs)
    return sorted(p for p in out.split("\0") if p)


def merge_base_with_default(repo: Repo) -> str | None:
    """Where HEAD left the default branch: the natural "before my change" revision."""
    if head_commit(repo) is None:
        return None
    branch = default_branch(repo)
    if branch is None:
        return None
    out = repo.run("merge-base", branch, "HEAD", check=False).strip()
    return out.decode() if out else None


def remote_url(repo: Repo, name: str = "origin") -> str | None:
    """The fetch URL of a remote, None when the repository has no such remote."""
    out = repo.run("remote", "get-url", name, check=False).strip()
    return out.decode() if out else None


def default_branch(repo: Repo) -> str | None:
    """origin/HEAD's target, else main or master (local first, then origin's)."""
    ref = repo.run("symbolic-ref", "--quiet", "refs/remotes/origin/HEAD", check=False).strip()
    if ref:
        return ref.decode().removeprefix("refs/remotes/")
    for name in ("main", "master", "origin/main", "origin/master"):
        if repo.run("rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", check=False).strip():
            return name
    return None


def changed_files(repo: Repo, old: str | None, new: str) -> list[FileChange]:
    """Files that differ from `old` (a commit; None = empty tree) to `new` (a commit or INDEX).

    Renames are followed; a submodule is reported as one change flagged `submodule`.
    """
    flags = ["--raw", "-z", "--no-abbrev", "-M", "--no-ext-diff", "--no-textconv", "-r"]
    if new == INDEX:
        if old is None:
            out = repo.text("diff", "--cached", *flags)
        else:
            out = repo.text("diff", "--cached", *flags, old)
    elif old is None:
        out = repo.text("diff-tree", "--root", *flags, new)
    else:
        out = repo.text("diff-tree", *flags, old, new)
    return _parse_raw(out)


def _range_shas(repo: Repo, spec: str) -> tuple[str, str]:
    if spec.count("..") != 1 or "..." in spec:
        raise GitError(f"{spec!r} is not a range; write it as BASE..HEAD")
    base, _, head = spec.partition("..")
    return resolve_commit(repo, base or "HEAD"), resolve_commit(repo, head or "HEAD")


def commits_in_range(repo: Repo, spec: str) -> tuple[list[str], list[str]]:
    """(non-merge commits, merge commits) of `A..B`, oldest first."""
    base_sha, head_sha = _range_shas(repo, spec)
    out = repo.text("rev-list", "--reverse", "--parents", f"{base_sha}..{head_sha}")
    plain: list[str] = []
    merges: list[str] = []
    for line in out.splitlines():
        shas = line.split()
        if not shas:
            continue
        (merges if len(shas) > 2 else plain).append(shas[0])
    return plain, merges


def range_ends(repo: Repo, spec: str) -> tuple[str | None, str]:
    """(merge base, head) of `A..B`: the two sides of the range taken as one change, as a
    pull request shows it and a squash merge lands it (None: no common ancestor)."""
    base_sha, head_sha = _range_shas(repo, spec)
    out = repo.run("merge-base", base_sha, head_sha, check=False).strip()
    return (out.decode() if out else None), head_sha


def commit_subject(repo: Repo, sha: str) -> str:
    return repo.text("log", "-1", "--format=%s", sha).strip()


def stage_file(root: Path, path: Path) -> None:
    """Stage exactly one file (its removal, if it is gone) in the repository holding root."""
    with open_repo(root) as repo:
        rel = repo_path(repo, path if path.is_absolute() else root / path)
        if not rel:
            raise GitError(f"{path} is the repository itself, not a file")
        if (work_tree(repo) / rel).is_dir():
            raise GitError(f"{path} is a directory; stage one file at a time")
        try:
            repo.run("add", "--", rel)
        except GitCommandError as exc:
            raise GitError(f"git add {rel} failed: {exc.stderr}") from None


def staged_besides(root: Path, paths: Iterable[Path]) -> list[str]:
    """Files staged in the index of the repository holding root, other than `paths`
    (repository paths): what a plain `git commit` would also take."""
    with open_repo(root) as repo:
        own = {repo_path(repo, p if p.is_absolute() else root / p) for p in paths}
        try:
            names = repo.text("diff", "--cached", "--name-only", "--no-renames", "-z")
        except GitCommandError as exc:
            raise GitError(f"git diff --cached failed: {exc.stderr}") from None
    return [name for name in names.split("\0") if name and name not in own]


def hooks_dir(repo: Repo) -> Path:
    """Where git looks for hooks (honours core.hooksPath)."""
    rel = repo.text("rev-parse", "--git-path", "hooks").strip()
    path = Path(rel)
    return path if path.is_absolute() else work_tree(repo) / path


def export_tree(repo: Repo, rev: str, under: str, dest: Path) -> list[Path]:
    """Write every file below folder `under` at `rev` into `dest` (same relative layout).

    Lets a suite be loaded exactly as it was at a base revision without a checkout.
    """
    written: list[Path] = []
    prefix = under.strip("/")
    snapshot = Snapshot(repo, rev)
    files = snapshot.files([prefix] if prefix else [])
    snapshot.prefetch(files)
    for rel in files:
        data = snapshot.read(rel)
        if data is None:
            continue
        target = dest / PurePosixPath(rel).relative_to(prefix) if prefix else dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(target)
    return written


def is_binary(data: bytes) -> bool:
    """Git's own heuristic: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]


def _cat_blobs(repo: Repo, shas: Sequence[str]) -> dict[str, bytes]:
    """sha → content for many blobs through one `git cat-file --batch` process."""
    out = repo.run("cat-file", "--batch", stdin=("\n".join(shas) + "\n").encode())
    blobs: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) < 3 or header[-1] == b"missing":
            continue
        size = int(header[2])
        blobs[header[0].decode()] = out[at : at + size]
        at += size + 1
    return blobs


def _parse_raw(out: str) -> list[FileChange]:
    fields = out.split("\0")
    changes: list[FileChange] = []
    i = 0
    while i < len(fields):
        head = fields[i]
        if not head.startswith(":"):
            i += 1
            continue
        meta = head[1:].split()
        old_mode, new_mode, status = meta[0], meta[1], meta[4]
        kind = status[0]
        submodule = _GITLINK_MODE in (old_mode, new_mode)
        old_path: str | None
        new_path: str | None
        if kind in "RC":
            old_path, new_path = fields[i + 1], fields[i + 2]
            i += 3
        else:
            path = fields[i + 1]
            old_path = None if old_mode in _NULL_MODES else path
            new_path = None if new_mode in _NULL_MODES else path
            i += 2
        changes.append(FileChange(kind, old_path, new_path, submodule))
    return changes
