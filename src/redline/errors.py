"""Errors a user can act on: every one says where and how to fix it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong in one input file, with its position and a fix hint."""

    path: str
    line: int
    column: int
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}:{self.column}" if self.line else self.path
        text = f"{where}: {self.message}"
        return f"{text} (hint: {self.hint})" if self.hint else text


class RedlineError(Exception):
    """Base of every error redline raises on purpose.

    Each kind below is one a caller can act on (catch it by its type, never by its
    message); the CLI maps each kind to an exit code in one table
    (`redline.cli.ERROR_EXIT_CODES`). Messages say what to do next.
    """


class ConfigError(RedlineError):
    """The configuration (pyproject.toml / redline.toml) is wrong or incomplete."""


class ProxyUnsupported(ConfigError):
    """A proxy variable redline cannot use (an unknown scheme, no host, a bad port)."""


class UsageError(RedlineError):
    """The command line asks for something that cannot be done."""


class ProblemsError(RedlineError):
    """Several problems found at once, all reported together before anything runs."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class RunStopped(RedlineError):
    """The run stopped itself at its first requests: every later one would fail the same way.

    `kept_in` words it once the run's finished samples are stored (how many, which run,
    how to go on); `fix` says what to check first.
    """

    fix = "Fix the cause"

    def __init__(self, reason: str, *, kept: int | None = None, run_id: str | None = None):
        self.reason = reason
        self.kept = kept
        self.run_id = run_id
        message = f"{reason}. The run stopped at its first request(s) instead of sending the rest"
        if run_id is None:
            message += f". {self.fix}, then run again"
        else:
            message += (
                f"; {kept} finished sample(s) are kept in run {run_id}. "
                f"{self.fix}, then: redline run --resume {run_id}"
            )
        super().__init__(message)

    def kept_in(self, kept: int, run_id: str) -> RunStopped:
        return type(self)(self.reason, kept=kept, run_id=run_id)


class CredentialsRejected(RunStopped):
    """The provider refused the API key on the first requests: the run stopped early."""

    fix = "Fix the key (see `api_key_env` in the configuration)"


class AccountRefused(RunStopped):
    """The provider says the account's quota or credit is spent, on the first requests:
    every other request would be refused the same way."""

    fix = (
        "Add credit or raise the account's limits at the provider (its billing page), or "
        "use the key of an account that has them (see `api_key_env` in the configuration)"
    )


class ModelUnknown(RunStopped):
    """The provider serves no model of the pinned id, on the first requests."""

    fix = (
        "Check the model's id in the configuration's [models] table (the provider's own "
        "name for the model) and that the key's account may use it"
    )


class EndpointUnreachable(RunStopped):
    """Nothing answered at the model endpoint (refused, DNS, TLS, a proxy refusing its
    credentials, HTTP 404/405, a redirect, a 2xx body that is not JSON) before any sample
    did: the base_url is wrong or the server is down."""

    fix = (
        "Check the provider's base_url (host, port, and the path the API is served under, "
        "e.g. /v1 for OpenAI-compatible servers), that the server is running and reachable "
        "from here (proxies: HTTPS_PROXY, NO_PROXY; a company CA: ca_bundle or SSL_CERT_FILE)"
    )


class StoreMissing(UsageError):
    """No run store where the configuration points: nothing has been run or imported."""

    def __init__(self, path: Path, hint: str = "run `redline run` first") -> None:
        self.path = path
        super().__init__(f"no run store at {path}; {hint}")


class BatchApiMissing(EndpointUnreachable):
    """The provider's server answered its batch API's address with 404/405: it has none
    (an OpenAI-compatible server such as vLLM or llama.cpp)."""

    fix = "Run without --batch (or set batch = false for that provider)"


class BatchNotDone(RedlineError):
    """A run's batch (the provider's batch API) left samples unanswered in this process:
    still pending when the process was told not to wait, or ended (expired, cancelled,
    failed) before answering them. The answered samples are stored; `--resume` collects
    or resubmits the rest (never a request twice)."""

    def __init__(self, reason: str, *, run_id: str) -> None:
        self.reason = reason
        self.run_id = run_id
        super().__init__(reason)


class BatchPending(BatchNotDone):
    """A batch is still in progress and the run was told not to wait for it."""


class BatchUnfinished(BatchNotDone):
    """A batch ended (expired, cancelled, failed) with samples it never answered."""


class StoreFull(RedlineError):
    """The disk (or the store's size limit) ran out while the run was writing."""

    def __init__(self, path: Path, *, kept: int | None = None, run_id: str | None = None):
        self.path = path
        self.kept = kept
        self.run_id = run_id
        message = f"the disk holding {path} is full"
        if run_id is not None:
            message += (
                f"; {kept} sample(s) are kept in run {run_id}, marked interrupted. "
                f"Free space and run `redline run --resume {run_id}`"
            )
        else:
            message += "; free space and run the command again"
        super().__init__(message)


class StoreCorrupt(UsageError):
    """The store file is damaged, or is not a redline store (not SQLite) at all."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        super().__init__(
            f"{path} is not a readable redline store ({reason}): restore it from a backup, "
            "or move it aside and bring back the runs you need with `redline import` of "
            "their exports (results.json + samples.jsonl, e.g. CI artifacts); "
            "a new store is created where the old one was"
        )


class RunLocked(UsageError):
    """Another live process is running (or resuming) this run."""


class RunNotFound(UsageError):
    """No stored run has this id (or id prefix)."""

    def __init__(self, run_id: str, store: Path) -> None:
        self.run_id = run_id
        super().__init__(f"no run {run_id!r} in the store {store} (see `redline runs`)")


class AmbiguousRunId(UsageError):
    """A run id prefix matches several stored runs."""

    def __init__(self, prefix: str, run_ids: Iterable[str]) -> None:
        self.prefix = prefix
        self.run_ids = tuple(run_ids)
        super().__init__(
            f"run id prefix {prefix!r} is ambiguous: {', '.join(self.run_ids)}; give more of the id"
        )


class RunAlreadyStored(UsageError):
    """The store already holds a run with this id (imported or run before)."""

    def __init__(self, run_id: str, store: Path) -> None:
        self.run_id = run_id
        super().__init__(
            f"run {run_id} is already in the store {store}; it was imported or run before"
        )


class RunNotFinished(UsageError):
    """The run is still running or was interrupted; what was asked needs a finished run."""


class CaseNotFound(UsageError):
    """No such case where it was looked for (a run, a suite, the store)."""


class CaseInSeveralSuites(UsageError):
    """A case id names cases of several suites; the suite must be given too."""

    def __init__(self, case_id: str, suites: Iterable[str], how: str = "add --suite") -> None:
        self.case_id = case_id
        self.suites = tuple(suites)
        super().__init__(f"case {case_id!r} is in several suites ({', '.join(self.suites)}); {how}")


class BaselineMissing(UsageError):
    """No saved baseline for a suite that is to be compared with one."""


class NoExport(UsageError):
    """The file or folder holds no `redline export` at all (e.g. another CI artifact)."""


class ExportUnreadable(UsageError):
    """An export is there but cannot be read: a damaged zip, bad JSON, another format."""


class ShardMissing(ProblemsError):
    """A merge refused because no export covers some shards of the split (`missing`,
    as `K/N`), besides any other problems it lists."""

    def __init__(self, problems: Iterable[Problem], missing: Iterable[str]) -> None:
        self.missing = tuple(missing)
        super().__init__(problems)


class GitError(UsageError):
    """A git state redline cannot work with, said in words the user can act on."""


class GitCommandError(GitError):
    """A git command failed; `stderr` says why."""

    def __init__(self, args: Sequence[str], stderr: str) -> None:
        self.stderr = stderr.strip()
        super().__init__(f"git {' '.join(args)} failed: {self.stderr}")


class GitUnavailable(GitError):
    """The `git` program is not installed or not on PATH."""

    def __init__(self) -> None:
        super().__init__(
            "the `git` program was not found: install git (or put it on PATH) and try again"
        )


class CiError(RedlineError):
    """CI refused or failed in a way that stops the pull (credentials, access, rate limit)."""


class ArtifactFailed(RedlineError):
    """One artifact could not be downloaded; the pull goes on with the others."""


class ArtifactExpired(ArtifactFailed):
    """CI no longer keeps the artifact (its retention ran out)."""


def relpath(path: Path, root: Path | None = None) -> str:
    """A path as the user would type it: relative to root (default cwd) when possible."""
    base = root if root is not None else Path.cwd()
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)
