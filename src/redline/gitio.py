"""Every git read redline makes, through gitpython, without touching the working tree.

The guard compares files between commits and the index; the runner records which
commit a run saw; the TUI reruns against a base revision and stages one file. None of
them may check anything out, so files are read as blobs straight from the object store.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import git

from redline.errors import UsageError

#: The revision name that means "the index" (git's own `:path` notation).
INDEX = ":"

_GITLINK_MODE = "160000"
_NULL_MODES = {"000000"}


class GitError(UsageError):
    """A git state redline cannot work with, said in words the user can act on."""


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


def repo_state(root: Path) -> tuple[str | None, bool]:
    """(HEAD commit sha, dirty) of the repository holding `root`; (None, False) outside git.

    Dirty means tracked files differ from HEAD (staged or not); untracked files do not count.
    """
    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None, False
    with repo:
        sha = head_commit(repo)
        if repo.bare:
            return sha, False
        try:
            dirty = repo.is_dirty(index=sha is not None, working_tree=True, untracked_files=False)
            if sha is None:
                dirty = dirty or bool(_git(repo, "ls-files", "-z").strip("\0"))
        except git.GitCommandError:
            dirty = False
        return sha, dirty


def repo_branch(root: Path) -> str | None:
    """The branch checked out where `root` is; None when detached or outside git."""
    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    with repo:
        try:
            return head_branch(repo)
        except (TypeError, ValueError):
            return None


def open_repo(path: Path) -> git.Repo:
    """The repository whose working tree holds `path`."""
    try:
        repo = git.Repo(path, search_parent_directories=True)
    except git.NoSuchPathError:
        raise GitError(f"{path}: no such file or directory") from None
    except git.InvalidGitRepositoryError:
        raise GitError(
            f"{path} is not inside a git repository (run `git init` or change directory)"
        ) from None
    if repo.bare:
        raise GitError(f"{repo.git_dir} is a bare repository; run redline in a working tree")
    return repo


def work_tree(repo: git.Repo) -> Path:
    if repo.working_tree_dir is None:
        raise GitError(f"{repo.git_dir} has no working tree")
    return Path(repo.working_tree_dir)


def repo_path(repo: git.Repo, path: Path) -> str:
    """`path` relative to the top of the working tree, POSIX style, as git names it."""
    top = work_tree(repo).resolve()
    try:
        rel = path.resolve().relative_to(top)
    except ValueError:
        raise GitError(f"{path} is outside the repository at {top}") from None
    return rel.as_posix() if str(rel) != "." else ""


def head_commit(repo: git.Repo) -> str | None:
    """The sha HEAD points at, or None when the repository has no commits yet."""
    try:
        return repo.head.commit.hexsha
    except ValueError:
        return None


def head_branch(repo: git.Repo) -> str | None:
    """The checked-out branch name, or None for a detached HEAD."""
    return None if repo.head.is_detached else repo.head.ref.name


def is_shallow(repo: git.Repo) -> bool:
    return (Path(repo.common_dir) / "shallow").is_file()


def require_commits(repo: git.Repo) -> str:
    sha = head_commit(repo)
    if sha is None:
        raise GitError(
            f"the repository at {work_tree(repo)} has no commits yet; "
            "commit once first (only --staged works before the first commit)"
        )
    return sha


def resolve_commit(repo: git.Repo, rev: str) -> str:
    """The full sha of `rev`, with a clear message for unknown names and shallow clones."""
    if not rev or rev.startswith("-"):
        raise GitError(f"{rev!r} is not a revision")
    try:
        return str(repo.commit(rev).hexsha)
    except (git.BadName, ValueError, git.GitCommandError):
        pass
    if rev in ("HEAD", "@") and head_commit(repo) is None:
        require_commits(repo)
    hint = ""
    if is_shallow(repo):
        hint = (
            "; this is a shallow clone: fetch the history you need "
            "(`git fetch --unshallow`, or `fetch-depth: 0` in actions/checkout)"
        )
    raise GitError(f"unknown revision {rev!r}{hint}")


def parents(repo: git.Repo, sha: str) -> list[str]:
    """Parents of a commit; a commit at a shallow boundary raises (its parent is not here)."""
    commit = repo.commit(sha)
    shas = [p.hexsha for p in commit.parents]
    boundary = Path(repo.common_dir) / "shallow"
    missing = [p for p in commit.parents if not repo.odb.has_object(p.binsha)]
    if missing or (boundary.is_file() and sha in boundary.read_text().split()):
        raise GitError(
            f"commit {sha[:12]} is at the boundary of a shallow clone and its parent is "
            "not fetched; deepen the clone (`git fetch --deepen=50`, or `fetch-depth: 0` "
            "in actions/checkout)"
        )
    return shas


class Snapshot:
    """The files of one side of a comparison: a commit, the index, or nothing (rev None).

    Reads blobs from the object store, many at once through one `git cat-file --batch`
    (`prefetch`). The index is read through git itself, so GIT_INDEX_FILE (set for hooks
    run by `git commit -a` or `git commit PATH`) is honoured.
    """

    def __init__(self, repo: git.Repo, rev: str | None) -> None:
        self.repo = repo
        self.rev = rev
        self._tree: git.Tree | None = None
        self._ids: dict[str, tuple[str, str]] = {}  # path → (mode, blob sha)
        self._listed: set[str] = set()  # folders listed so far ("" = everything)
        self._cache: dict[str, bytes] = {}
        if rev is not None and rev != INDEX:
            try:
                self._tree = repo.commit(rev).tree
            except (git.BadName, ValueError):
                raise GitError(f"unknown revision {rev!r}") from None
        elif rev == INDEX:
            self._list(())

    def read(self, path: str) -> bytes | None:
        """Bytes of a file, or None when absent (a folder or a submodule is not a file)."""
        path = PurePosixPath(path).as_posix()
        if self.rev is None:
            return None
        if path in self._cache:
            return self._cache[path]
        entry = self._ids.get(path)
        if entry is not None:
            if entry[0] == _GITLINK_MODE:
                return None
            data = bytes(self.repo.odb.stream(bytes.fromhex(entry[1])).read())
        elif self._tree is None:
            return None  # the index was listed whole: not there
        else:
            try:
                item = self._tree / path
            except KeyError:
                return None
            if not isinstance(item, git.Blob):
                return None
            data = bytes(item.data_stream.read())
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
        if self._tree is not None and not self._covered(specs):
            self._list(specs)
        if not specs:
            return sorted(self._ids)
        return sorted(p for p in self._ids if any(p.startswith(s + "/") for s in specs))

    def _list(self, specs: tuple[str, ...]) -> None:
        if self.rev == INDEX:
            out = _git(self.repo, "ls-files", "-z", "--stage")
        else:
            assert self.rev is not None
            out = _git(self.repo, "ls-tree", "-r", "-z", "--full-tree", self.rev, "--", *specs)
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


def file_at(repo: git.Repo, rev: str, path: str) -> bytes | None:
    """Bytes of `path` at commit `rev` (or in the index when rev is INDEX); None if absent.

    A directory or a submodule entry is not a file and also gives None.
    """
    return Snapshot(repo, rev).read(path)


def list_files(repo: git.Repo, rev: str, under: Sequence[str] = ()) -> list[str]:
    """Paths of every file at `rev` (or in the index) below the given folders, sorted."""
    specs = [u.strip("/") for u in under]
    if not all(specs):
        specs = []
    if rev == INDEX:
        out = _git(repo, "ls-files", "-z", "--cached", "--", *specs)
    else:
        out = _git(repo, "ls-tree", "-r", "-z", "--name-only", rev, "--", *specs)
    return sorted(p for p in out.split("\0") if p)


def merge_base_with_default(repo: git.Repo) -> str | None:
    """Where HEAD left the default branch: the natural "before my change" revision."""
    if head_commit(repo) is None:
        return None
    branch = default_branch(repo)
    if branch is None:
        return None
    try:
        bases = repo.merge_base(branch, "HEAD")
    except git.GitCommandError:
        return None
    return bases[0].hexsha if bases and bases[0] is not None else None


def default_branch(repo: git.Repo) -> str | None:
    """origin/HEAD's target, else main or master (local first, then origin's)."""
    try:
        ref = _git(repo, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD").strip()
        if ref:
            return ref.removeprefix("refs/remotes/")
    except git.GitCommandError:
        pass
    for name in ("main", "master", "origin/main", "origin/master"):
        try:
            repo.commit(name)
        except (git.BadName, ValueError, git.GitCommandError):
            continue
        return name
    return None


def changed_files(repo: git.Repo, old: str | None, new: str) -> list[FileChange]:
    """Files that differ from `old` (a commit; None = empty tree) to `new` (a commit or INDEX).

    Renames are followed; a submodule is reported as one change flagged `submodule`.
    """
    flags = ["--raw", "-z", "--no-abbrev", "-M", "--no-ext-diff", "--no-textconv", "-r"]
    if new == INDEX:
        if old is None:
            out = _git(repo, "diff", "--cached", *flags)
        else:
            out = _git(repo, "diff", "--cached", *flags, old)
    elif old is None:
        out = _git(repo, "diff-tree", "--root", *flags, new)
    else:
        out = _git(repo, "diff-tree", *flags, old, new)
    return _parse_raw(out)


def commits_in_range(repo: git.Repo, spec: str) -> tuple[list[str], list[str]]:
    """(non-merge commits, merge commits) of `A..B`, oldest first."""
    if spec.count("..") != 1 or "..." in spec:
        raise GitError(f"{spec!r} is not a range; write it as BASE..HEAD")
    base, _, head = spec.partition("..")
    base_sha = resolve_commit(repo, base or "HEAD")
    head_sha = resolve_commit(repo, head or "HEAD")
    out = _git(repo, "rev-list", "--reverse", "--parents", f"{base_sha}..{head_sha}")
    plain: list[str] = []
    merges: list[str] = []
    for line in out.splitlines():
        shas = line.split()
        if not shas:
            continue
        (merges if len(shas) > 2 else plain).append(shas[0])
    return plain, merges


def commit_subject(repo: git.Repo, sha: str) -> str:
    message = repo.commit(sha).message
    text = message.decode(errors="replace") if isinstance(message, bytes) else message
    return text.strip().splitlines()[0] if text.strip() else ""


def stage_file(root: Path, path: Path) -> None:
    """Stage exactly one file (its removal, if it is gone) in the repository holding root."""
    with open_repo(root) as repo:
        rel = repo_path(repo, path if path.is_absolute() else root / path)
        if not rel:
            raise GitError(f"{path} is the repository itself, not a file")
        if (work_tree(repo) / rel).is_dir():
            raise GitError(f"{path} is a directory; stage one file at a time")
        try:
            _git(repo, "add", "--", rel)
        except git.GitCommandError as exc:
            raise GitError(f"git add {rel} failed: {_stderr(exc)}") from None


def hooks_dir(repo: git.Repo) -> Path:
    """Where git looks for hooks (honours core.hooksPath)."""
    rel = _git(repo, "rev-parse", "--git-path", "hooks").strip()
    path = Path(rel)
    return path if path.is_absolute() else work_tree(repo) / path


def export_tree(repo: git.Repo, rev: str, under: str, dest: Path) -> list[Path]:
    """Write every file below folder `under` at `rev` into `dest` (same relative layout).

    Lets a suite be loaded exactly as it was at a base revision without a checkout.
    """
    written: list[Path] = []
    prefix = under.strip("/")
    for rel in list_files(repo, rev, [prefix] if prefix else []):
        data = file_at(repo, rev, rel)
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


def _git(repo: git.Repo, command: str, *args: str) -> str:
    runner = getattr(repo.git, command.replace("-", "_"))
    return str(runner(*args, strip_newline_in_stdout=False))


def _cat_blobs(repo: git.Repo, shas: Sequence[str]) -> dict[str, bytes]:
    """sha → content for many blobs through one `git cat-file --batch` process."""
    command = repo.git.cat_file("--batch", as_process=True, istream=subprocess.PIPE)
    out, _err = command.proc.communicate(("\n".join(shas) + "\n").encode())
    blobs: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) < 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        blobs[header[0].decode()] = out[at : at + size]
        at += size + 1
    return blobs


def _stderr(exc: git.GitCommandError) -> str:
    text = exc.stderr if isinstance(exc.stderr, str) else str(exc.stderr or "")
    return text.strip().removeprefix("stderr:").strip(" '\n") or str(exc)


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
