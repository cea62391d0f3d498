"""The local history of runs: SQLite in WAL mode, each finished sample committed on arrival.

Evidence is never overwritten: a rerun or replay is a new run linked to its parent, and
raw outputs are stored exactly as received. Reads are indexed for per-case history and
run-to-run comparison over hundreds of runs.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from redline.errors import (
    AmbiguousRunId,
    RunAlreadyStored,
    RunLocked,
    RunNotFound,
    StoreCorrupt,
    StoreFull,
    UsageError,
)
from redline.running.rows import Table, decode_text
from redline.vocabulary.records import (
    BatchRecord,
    CaseOutcome,
    CaseRecord,
    CiOrigin,
    RunKind,
    RunRecord,
    RunResult,
    RunStatus,
    SampleRecord,
    SampleUsage,
    TriageRecord,
)
from redline.vocabulary.verdicts import VERDICT_ORDER, AssertionResult, Verdict

SCHEMA_VERSION = 1
#: Characters of each output the search index holds: a huge output is searched in its
#: beginning, never copied whole a second time.
SEARCH_PREFIX_CHARS = 65_536
#: Characters of an output too large for the store that are kept as its evidence.
KEPT_PREFIX_CHARS = 1_048_576
#: A run's process writes its heartbeat this often; one silent for STALE_S is gone.
HEARTBEAT_S = 10.0
STALE_S = 60.0
_FULL = (sqlite3.SQLITE_FULL,)
_CORRUPT = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    model_id TEXT NOT NULL,
    model_alias TEXT NOT NULL,
    suites TEXT NOT NULL,
    parent_id TEXT,
    git_commit TEXT,
    git_dirty INTEGER NOT NULL DEFAULT 0,
    redline_version TEXT NOT NULL,
    args TEXT NOT NULL,
    git_branch TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started_at, seq);
CREATE INDEX IF NOT EXISTS runs_by_kind ON runs (kind, started_at, seq);
CREATE INDEX IF NOT EXISTS runs_by_parent ON runs (parent_id);
CREATE TABLE IF NOT EXISTS run_holders (
    run_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    since TEXT NOT NULL,
    heartbeat REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS manifest (
    run_id TEXT NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (run_id, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cases (
    run_id TEXT NOT NULL,
    suite TEXT NOT NULL,
    case_id TEXT NOT NULL,
    tier TEXT NOT NULL,
    model_id TEXT NOT NULL,
    samples INTEGER NOT NULL,
    required INTEGER NOT NULL,
    passes INTEGER NOT NULL,
    result TEXT NOT NULL,
    n_ok INTEGER NOT NULL,
    n_wrong INTEGER NOT NULL,
    n_malformed INTEGER NOT NULL,
    n_refused INTEGER NOT NULL,
    n_truncated INTEGER NOT NULL,
    n_transport INTEGER NOT NULL,
    case_hash TEXT NOT NULL,
    PRIMARY KEY (run_id, suite, case_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS cases_by_case ON cases (case_id, suite);
CREATE INDEX IF NOT EXISTS cases_by_result ON cases (run_id, result);
CREATE TABLE IF NOT EXISTS samples (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    suite TEXT NOT NULL,
    case_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    output TEXT NOT NULL,
    verdict TEXT NOT NULL,
    finish_reason TEXT,
    model TEXT NOT NULL,
    seed INTEGER,
    latency_ms REAL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cost REAL,
    error TEXT,
    attempts INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS samples_by_case ON samples (run_id, case_id, suite, idx);
CREATE TABLE IF NOT EXISTS assertion_results (
    sample_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    score REAL,
    threshold REAL,
    structural INTEGER NOT NULL,
    PRIMARY KEY (sample_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS triage (
    run_id TEXT NOT NULL,
    suite TEXT NOT NULL,
    case_id TEXT NOT NULL,
    state TEXT NOT NULL,
    progress REAL NOT NULL,
    detail TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, suite, case_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ci_origins (
    run_id TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    repo TEXT NOT NULL,
    ci_run_id TEXT NOT NULL,
    run_number INTEGER,
    url TEXT NOT NULL,
    event TEXT,
    branch TEXT,
    artifact TEXT NOT NULL,
    pulled_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ci_artifacts (
    provider TEXT NOT NULL,
    repo TEXT NOT NULL,
    artifact_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    seen_at TEXT NOT NULL,
    PRIMARY KEY (provider, repo, artifact_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS superseded_samples (
    sample_id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    suite TEXT NOT NULL,
    case_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    verdict TEXT NOT NULL,
    finish_reason TEXT,
    error TEXT,
    output TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    superseded_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS superseded_by_case ON superseded_samples (run_id, case_id, suite, idx);
CREATE VIRTUAL TABLE IF NOT EXISTS sample_search USING fts5(
    case_id, output, reasons, content='', tokenize='trigram'
);
CREATE TABLE IF NOT EXISTS batches (
    run_id TEXT NOT NULL,
    batch_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    status TEXT NOT NULL,
    ended INTEGER NOT NULL DEFAULT 0,
    counts TEXT NOT NULL,
    requests TEXT NOT NULL,
    submitted_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, batch_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sample_search_runs (
    run_id TEXT PRIMARY KEY,
    last_sample INTEGER NOT NULL
) WITHOUT ROWID;
"""

_RUNS = Table(RunRecord, "runs")
_CASES = Table(CaseRecord, "cases")
_SAMPLES = Table(SampleRecord, "samples")
_ASSERTIONS = Table(AssertionResult, "assertion_results")
_TRIAGE = Table(TriageRecord, "triage")
_ORIGINS = Table(CiOrigin, "ci_origins")
_INSERT_SAMPLE = (
    f"INSERT INTO samples (id, {_SAMPLES.select()}) "
    f"VALUES (?, {', '.join('?' * len(_SAMPLES.names))})"
)
#: Rows read or written per statement when a whole run streams through (import, export).
_BATCH = 5000
#: What an assertion result row is read as (its record, or its JSON).
_A = TypeVar("_A")
#: A running run's samples enter the search index this many at a time (one FTS5 segment
#: each, instead of one per commit).
_INDEX_EVERY = 256
_INSERT_ASSERTION = (
    f"INSERT INTO assertion_results (sample_id, {_ASSERTIONS.select()}) "
    f"VALUES (?, {', '.join('?' * len(_ASSERTIONS.names))})"
)


_CREATED = _SAMPLES.names.index("created_at")
_NOT_PASSED = tuple(str(o) for o in CaseOutcome if o is not CaseOutcome.PASS)


@dataclass(frozen=True, slots=True)
class StoredSample:
    """A sample as the store writes it: its `samples` row and its assertion results' rows."""

    suite: str
    case_id: str
    index: int
    row: list[Any]
    assertions: list[list[Any]]

    @classmethod
    def of(cls, s: SampleRecord) -> StoredSample:
        return cls(
            s.suite, s.case_id, s.index, _SAMPLES.row(s), [_ASSERTIONS.row(a) for a in s.assertions]
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any], run_id: str) -> StoredSample:
        """The rows of a sample's export JSON, checked as reading its record checks it but
        never built as one: an import of a merged night writes half a million."""
        row = _SAMPLES.json_row(data, run_id=run_id)
        assertions = [_ASSERTIONS.json_row(a) for a in data.get("assertions", ())]
        return cls(row[_SUITE], row[_CASE_ID], row[_INDEX], row, assertions)


_SUITE, _CASE_ID, _INDEX = (_SAMPLES.names.index(n) for n in ("suite", "case_id", "idx"))


def now_iso() -> str:
    """The store's timestamp format: UTC, ISO 8601, millisecond precision (as
    `datetime.isoformat(timespec="milliseconds")` writes it; every sample gets one, so the
    date and time of the current second are formatted once)."""
    global _second
    ms = time.time_ns() // 1_000_000
    second, millisecond = divmod(ms, 1000)
    if second != _second[0]:
        stamp = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second = (second, stamp)
    return f"{_second[1]}.{millisecond:03d}+00:00"


#: The last second `now_iso` formatted, and its text.
_second: tuple[int, str] = (-1, "")


def new_run_id() -> str:
    """A short random hex id; like git hashes, any unique prefix names the run."""
    return secrets.token_hex(6)


#: Every tool call of a sample (its answer's, and each step's of a tool loop) as
#: `name arguments` lines, read from the stored JSON: what search finds tool calls by.
_TOOLS = (
    "(SELECT group_concat(call, char(10)) FROM ("
    "SELECT json_extract(c.value, '$.name') || ' ' || json_extract(c.value, '$.arguments') AS call "
    "FROM json_each(coalesce(s.tool_calls, '[]')) c UNION ALL "
    "SELECT json_extract(t.value, '$.name') || ' ' || json_extract(t.value, '$.arguments') "
    "FROM json_each(coalesce(s.steps, '[]')) st, "
    "json_each(coalesce(json_extract(st.value, '$.tool_calls'), '[]')) t))"
)


#: What search calls a sample's failure reasons: its transport or provider error (as Step 2
#: shows it) and every failed assertion's reason, one per line.
_SEARCHED_REASONS = (
    "(SELECT group_concat(reason, char(10)) FROM ("
    "SELECT s.error AS reason WHERE s.error IS NOT NULL AND s.error != '' "
    "UNION ALL SELECT a.reason FROM assertion_results a "
    "WHERE a.sample_id = s.id AND a.status = 'failed'))"
)

#: What the index holds of a sample's output: its start and its tool calls.
_INDEXED_OUTPUT = (
    f"substr(s.output, 1, {SEARCH_PREFIX_CHARS}) || coalesce(char(10) || {_TOOLS}, '')"
)
#: Samples the index may lack for a search to index them first (a run's last few).
INDEXED_AT_SEARCH = 5_000
_TRIGRAM = 3
#: What a sample puts in the search index (followed by the WHERE choosing the samples).
_INDEX_SEARCH = (
    "INSERT INTO sample_search (rowid, case_id, output, reasons) "
    f"SELECT s.id, s.case_id, {_INDEXED_OUTPUT}, {_SEARCHED_REASONS} "
    "FROM samples s "
)


def _scanned(needle: str) -> str:
    """SQL that holds for a sample (`s`) where the index would find `needle`: in its case
    id, the start of its output, its tool calls, its error or a failed assertion's reason.
    LIKE folds ASCII letters only: other text is compared as `str.lower` folds it."""

    def holds(column: str) -> str:
        if needle.isascii():
            return f"{column} LIKE :like ESCAPE '\\'"
        return f"instr(py_lower({column}), :lower) > 0"

    reasons = "SELECT a.sample_id FROM assertion_results a WHERE a.status = 'failed' AND "
    return " OR ".join(
        (
            holds("s.case_id"),
            # the start of the output, looked at where the whole output holds it
            f"({holds('s.output')} AND {holds(f'substr(s.output, 1, {SEARCH_PREFIX_CHARS})')})",
            holds("s.error"),
            f"((s.tool_calls IS NOT NULL OR s.steps IS NOT NULL) AND {holds(_TOOLS)})",
            f"s.id IN ({reasons}{holds('a.reason')})",
        )
    )


class RunStore:
    """Read and write runs, case results and samples in one SQLite file.

    Safe to share between threads (one connection behind a lock), e.g. a TUI worker.
    """

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self._lock = _Guard(path)
        self._finished: dict[str, RunRecord] = {}
        #: Runs this process holds (`claim_run`), indexed for search while their samples
        #: are committed: run id → samples committed since its last indexing, None before
        #: its first batch.
        self._indexing: dict[str, int | None] = {}
        self.path = path

    @classmethod
    def open(cls, path: Path) -> RunStore:
        """Open (creating when missing) the store at `path`, with its parent directory."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=OFF")
            # Case-insensitive filters match as Python's `str.lower` does, in any script.
            db.create_function("py_lower", 1, _lower, deterministic=True)
            db.executescript(_SCHEMA)
            _add_missing_columns(db)
            db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except sqlite3.DatabaseError as exc:
            db.close()
            raise _store_error(exc, path) from None
        return cls(db, path)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; a full disk is StoreFull and a damaged file StoreCorrupt
        (SQLite may have rolled back on its own already: rolling back twice is no error)."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise _store_error(exc, self.path) from None

    # -- who runs a run ----------------------------------------------------------------------

    def claim_run(self, run_id: str) -> None:
        """Make this process the one running `run_id`; RunLocked naming the live holder
        when another process has it (a dead holder's claim is taken over)."""
        host, pid = socket.gethostname(), os.getpid()
        with self._transaction() as db:
            row = db.execute(
                "SELECT host, pid, since, heartbeat FROM run_holders WHERE run_id = ?", (run_id,)
            ).fetchone()
            if (
                row is not None
                and (row[0], row[1]) != (host, pid)
                and _alive(row[0], row[1], row[3])
            ):
                raise RunLocked(
                    f"run {run_id} is being run by process {row[1]} on {row[0]} (since "
                    f"{row[2]}); wait for it to end, or stop it, then resume again"
                )
            db.execute(
                "INSERT OR REPLACE INTO run_holders (run_id, host, pid, since, heartbeat) "
                "VALUES (?, ?, ?, ?, ?)",
                (run_id, host, pid, now_iso(), time.time()),
            )
        self._indexing[run_id] = None

    def heartbeat(self, run_id: str) -> None:
        """This process still runs `run_id`."""
        with self._transaction() as db:
            db.execute(
                "UPDATE run_holders SET heartbeat = ? WHERE run_id = ? AND host = ? AND pid = ?",
                (time.time(), run_id, socket.gethostname(), os.getpid()),
            )

    def release_run(self, run_id: str) -> None:
        self._indexing.pop(run_id, None)
        with self._transaction() as db:
            db.execute(
                "DELETE FROM run_holders WHERE run_id = ? AND host = ? AND pid = ?",
                (run_id, socket.gethostname(), os.getpid()),
            )

    def mark_interrupted(self, run_id: str) -> None:
        """Best effort after a failed write (a full disk): the run shows as interrupted."""
        try:
            with self._transaction() as db:
                db.execute(
                    "UPDATE runs SET status = ?, finished_at = ? WHERE id = ? AND status = ?",
                    (str(RunStatus.INTERRUPTED), now_iso(), run_id, str(RunStatus.RUNNING)),
                )
        except (StoreFull, StoreCorrupt):
            pass  # `redline runs` still shows it interrupted: its holder is gone

    # -- writing ---------------------------------------------------------------------------

    def begin_run(self, record: RunRecord) -> None:
        """Record a new run and its manifest; refuses an id already stored."""
        with self._transaction() as db:
            self._insert_run(db, record)

    def add_run(
        self,
        record: RunRecord,
        cases: Iterable[CaseRecord],
        samples: Iterable[SampleRecord | StoredSample],
        origin: CiOrigin | None = None,
    ) -> None:
        """Store a complete run in one transaction (import, merge): all of it or nothing.

        Its search index is built on its first search, not here: tokenising every output
        was a fifth of storing a merged night, and only a search needs it."""
        with self._transaction() as db:
            self._insert_run(db, record)
            self._insert_samples(db, samples)
            self._insert_cases(db, cases)
            if origin is not None:
                self._insert_origin(db, record.id, origin)

    def set_ci_origin(self, run_id: str, origin: CiOrigin) -> None:
        """Record (or replace) the CI run a stored run came from."""
        with self._transaction() as db:
            self._insert_origin(db, run_id, origin)

    def mark_artifact_seen(self, provider: str, repo: str, artifact_id: str, outcome: str) -> None:
        """Remember a CI artifact as read, so the next pull never downloads it again."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO ci_artifacts (provider, repo, artifact_id, outcome, "
                "seen_at) VALUES (?, ?, ?, ?, ?)",
                (provider, repo, artifact_id, outcome, now_iso()),
            )

    @staticmethod
    def _insert_origin(db: sqlite3.Connection, run_id: str, o: CiOrigin) -> None:
        db.execute(
            f"INSERT OR REPLACE INTO ci_origins (run_id, {_ORIGINS.select()}, pulled_at) "
            f"VALUES (?, {', '.join('?' * len(_ORIGINS.names))}, ?)",
            (run_id, *_ORIGINS.row(o), now_iso()),
        )

    def add_sample(self, sample: SampleRecord) -> None:
        """Store one finished sample with its assertion results; durable on return."""
        self.add_samples((sample,))

    def add_samples(self, samples: Iterable[SampleRecord]) -> None:
        """Store several samples in one transaction. A sample whose output is too large
        for SQLite is stored as a transport failure keeping the output's beginning.
        The samples of a run this process holds enter the search index while it runs
        (see `_insert_searched`), so closing the run has little left to index."""
        batch = list(samples)
        try:
            with self._transaction() as db:
                waiting = self._insert_searched(db, batch)
        except sqlite3.DataError:
            waiting = {}
            for sample in batch:
                try:
                    with self._transaction() as db:
                        waiting |= self._insert_searched(db, (sample,))
                except sqlite3.DataError:
                    with self._transaction() as db:
                        waiting |= self._insert_searched(db, (_too_large_to_store(sample),))
        self._indexing.update(waiting)  # committed: what is indexed now

    def _insert_searched(
        self, db: sqlite3.Connection, samples: Sequence[SampleRecord]
    ) -> dict[str, int]:
        """Insert the samples; a held run is indexed at its first batch (with what an
        earlier, killed process left unindexed) and then every `_INDEX_EVERY` samples,
        so the index grows by large steps and closing the run has little left to index.
        Each held run's samples left waiting for the index."""
        last = self._insert_samples(db, samples) + len(samples) - 1
        waiting = {}
        for run_id in {s.run_id for s in samples if s.run_id in self._indexing}:
            before = self._indexing[run_id]
            count = sum(1 for s in samples if s.run_id == run_id) + (before or 0)
            if before is None:
                self._index_for_search(db, run_id)
                count = 0
            elif count >= _INDEX_EVERY:
                self._index_since_last(db, run_id, last)
                count = 0
            waiting[run_id] = count
        return waiting

    def put_case(self, record: CaseRecord) -> None:
        """Write (or replace, on resume) one case's result in its run."""
        self.put_cases((record,))

    def put_cases(self, records: Iterable[CaseRecord]) -> None:
        with self._transaction() as db:
            self._insert_cases(db, records)

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        result: RunResult | None,
        finished_at: str,
    ) -> None:
        self._finished.pop(run_id, None)
        with self._transaction() as db:
            cur = db.execute(
                "UPDATE runs SET status = ?, result = ?, finished_at = ? WHERE id = ?",
                (str(status), None if result is None else str(result), finished_at, run_id),
            )
            if cur.rowcount == 0:
                raise RunNotFound(run_id, self.path)
            self._index_for_search(db, run_id)

    def reopen_run(self, run_id: str) -> None:
        """Mark an interrupted run as running again, for `--resume`."""
        self._finished.pop(run_id, None)
        with self._transaction() as db:
            db.execute(
                "UPDATE runs SET status = ?, result = NULL, finished_at = NULL WHERE id = ?",
                (str(RunStatus.RUNNING), run_id),
            )

    def supersede_samples(self, run_id: str, verdicts: Iterable[Verdict]) -> int:
        """Set aside a finished run's samples with these verdicts so their slots run again.

        Each one is kept in `superseded_samples` (verdict, error, raw output) as the evidence
        of the first attempt; the run's counts then see only the new sample of each slot.
        """
        wanted = [str(v) for v in verdicts]
        marks = ", ".join("?" * len(wanted))
        with self._transaction() as db:
            rows = db.execute(
                f"SELECT id FROM samples WHERE run_id = ? AND verdict IN ({marks})",
                (run_id, *wanted),
            ).fetchall()
            ids = [(int(r[0]),) for r in rows]
            db.executemany(
                "INSERT INTO superseded_samples (sample_id, run_id, suite, case_id, idx, verdict, "
                "finish_reason, error, output, attempts, created_at, superseded_at) "
                "SELECT id, run_id, suite, case_id, idx, verdict, finish_reason, error, output, "
                "attempts, created_at, ? FROM samples WHERE id = ?",
                [(now_iso(), i) for (i,) in ids],
            )
            db.executemany("DELETE FROM assertion_results WHERE sample_id = ?", ids)
            db.executemany("DELETE FROM samples WHERE id = ?", ids)
        self._finished.pop(run_id, None)
        return len(ids)

    def superseded(self, run_id: str) -> list[SupersededSample]:
        """The first attempts that `--retry-transport` replaced, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT suite, case_id, idx, verdict, error, output, superseded_at "
                "FROM superseded_samples WHERE run_id = ? ORDER BY sample_id",
                (run_id,),
            ).fetchall()
        return [
            SupersededSample(str(s), str(c), int(i), Verdict(v), e, decode_text(o), str(at))
            for s, c, i, v, e, o, at in rows
        ]

    def search(self, run_id: str, needle: str, limit: int) -> list[Any]:
        """Samples of a run whose case id, raw output, failure reasons or tool calls hold
        `needle` (case-insensitive), in suite, case and sample order, up to `limit`.

        The samples the trigram index covers are found through it; those it does not yet
        (an imported run's until `index_for_search` reaches them) are scanned, so a first
        search of a 500,000-sample run answers without building the index first. A few
        left out are indexed here; text under three characters is too short for trigrams
        and is scanned for over the whole run.
        Rows: (suite, case id, index, verdict, output, failure reasons, tool calls as
        `name arguments` lines).
        """
        if self._unindexed(run_id, INDEXED_AT_SEARCH) <= INDEXED_AT_SEARCH:
            self.index_for_search(run_id)
        columns = f"s.suite, s.case_id, s.idx, s.verdict, s.output, {_SEARCHED_REASONS}, {_TOOLS}"
        values = {
            "run": run_id,
            "like": "%" + _like_escape(needle) + "%",
            "lower": _lower(needle),
            "limit": limit,
        }
        with self._lock:
            last = self._indexed_up_to(self._db, run_id) if len(needle) >= _TRIGRAM else 0
            rows = []
            if last:
                values["match"] = '"' + needle.replace('"', '""') + '"'
                rows = self._db.execute(
                    f"SELECT {columns} FROM sample_search f JOIN samples s ON s.id = f.rowid "
                    "WHERE sample_search MATCH :match AND s.run_id = :run "
                    "ORDER BY s.suite, s.case_id, s.idx LIMIT :limit",
                    values,
                ).fetchall()
            values["last"] = last
            rows += self._db.execute(
                f"SELECT {columns} FROM samples s WHERE s.run_id = :run AND s.id > :last AND "
                f"({_scanned(needle)}) ORDER BY s.suite, s.case_id, s.idx LIMIT :limit",
                values,
            ).fetchall()
        rows.sort(key=lambda r: (r[0], r[1], r[2]))
        return [
            (
                str(r[0]),
                str(r[1]),
                int(r[2]),
                Verdict(r[3]),
                decode_text(r[4]),
                r[5] or "",
                r[6] or "",
            )
            for r in rows[:limit]
        ]

    def _unindexed(self, run_id: str, most: int) -> int:
        """How many of a run's samples the index lacks, counted up to `most` + 1."""
        with self._lock:
            return self._count_unindexed(self._db, run_id, most)

    @classmethod
    def _count_unindexed(cls, db: sqlite3.Connection, run_id: str, most: int) -> int:
        last = cls._indexed_up_to(db, run_id)
        (count,) = db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM samples WHERE run_id = ? AND id > ? LIMIT ?)",
            (run_id, last, most + 1),
        ).fetchone()
        return int(count)

    def index_for_search(self, run_id: str, most: int | None = None) -> bool:
        """Add a run's samples the search index does not cover yet (at most `most`, the
        oldest first, each call its own transaction: a caller in the background indexes
        a large run a part at a time); True once the index covers the whole run."""
        with self._transaction() as db:
            self._index_for_search(db, run_id, most)
            return self._count_unindexed(db, run_id, 0) == 0

    @staticmethod
    def _indexed_up_to(db: sqlite3.Connection, run_id: str) -> int:
        """The index covers the run's samples up to this id."""
        row = db.execute(
            "SELECT last_sample FROM sample_search_runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        return int(row[0]) if row else 0

    @classmethod
    def _index_for_search(
        cls, db: sqlite3.Connection, run_id: str, most: int | None = None
    ) -> None:
        last = cls._indexed_up_to(db, run_id)
        newest = db.execute(
            "SELECT max(id) FROM (SELECT id FROM samples WHERE run_id = ? AND id > ? "
            "ORDER BY id LIMIT ?)",
            (run_id, last, -1 if most is None else most),
        ).fetchone()[0]
        if newest is None:
            return
        db.execute(
            _INDEX_SEARCH + "WHERE s.run_id = ? AND s.id > ? AND s.id <= ?",
            (run_id, last, int(newest)),
        )
        cls._indexed(db, run_id, int(newest))

    @staticmethod
    def _indexed(db: sqlite3.Connection, run_id: str, newest: int) -> None:
        """Record that the index covers the run's samples up to id `newest`."""
        db.execute(
            "INSERT OR REPLACE INTO sample_search_runs (run_id, last_sample) VALUES (?, ?)",
            (run_id, newest),
        )

    @classmethod
    def _index_since_last(cls, db: sqlite3.Connection, run_id: str, newest: int) -> None:
        """Index a run's samples after its last indexed one, up to sample id `newest`, by
        id (only the newest rows of the table are read, never the run's earlier ones)."""
        last = cls._indexed_up_to(db, run_id)
        if last == 0:  # never indexed (sample ids start at 1)
            cls._index_for_search(db, run_id)
            return
        if last >= newest:
            return  # a search (from another process) indexed them already
        db.execute(_INDEX_SEARCH + "WHERE s.id > ? AND +s.run_id = ?", (last, run_id))
        cls._indexed(db, run_id, newest)

    def add_batch(self, batch: BatchRecord) -> None:
        """Record a batch the run submitted, before anything waits on it."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO batches (run_id, batch_id, provider, status, ended, counts, "
                "requests, submitted_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    batch.run_id,
                    batch.batch_id,
                    batch.provider,
                    batch.status,
                    int(batch.ended),
                    json.dumps(dict(batch.counts), sort_keys=True),
                    json.dumps(list(batch.requests)),
                    batch.submitted_at or now_iso(),
                    batch.updated_at or now_iso(),
                ),
            )

    def update_batch(
        self, run_id: str, batch_id: str, status: str, counts: Mapping[str, int], *, ended: bool
    ) -> None:
        """Where a batch stands, as the provider last said."""
        with self._transaction() as db:
            db.execute(
                "UPDATE batches SET status = ?, counts = ?, ended = ?, updated_at = ? "
                "WHERE run_id = ? AND batch_id = ?",
                (
                    status,
                    json.dumps(dict(counts), sort_keys=True),
                    int(ended),
                    now_iso(),
                    run_id,
                    batch_id,
                ),
            )

    def batches(self, run_id: str) -> list[BatchRecord]:
        """The batches a run submitted, oldest first."""
        rows = self._db.execute(
            "SELECT batch_id, provider, status, ended, counts, requests, submitted_at, "
            "updated_at FROM batches WHERE run_id = ? ORDER BY submitted_at, batch_id",
            (run_id,),
        ).fetchall()
        return [
            BatchRecord(
                run_id=run_id,
                batch_id=batch_id,
                provider=provider,
                status=status,
                ended=bool(ended),
                counts=json.loads(counts),
                requests=tuple(json.loads(requests)),
                submitted_at=submitted,
                updated_at=updated,
            )
            for batch_id, provider, status, ended, counts, requests, submitted, updated in rows
        ]

    def update_args(self, run_id: str, args: Mapping[str, Any]) -> None:
        """Replace a run's recorded arguments (how it was completed is part of its record)."""
        self._finished.pop(run_id, None)
        with self._transaction() as db:
            db.execute(
                "UPDATE runs SET args = ? WHERE id = ?",
                (json.dumps(dict(args), sort_keys=True, default=str), run_id),
            )

    def _insert_run(self, db: sqlite3.Connection, record: RunRecord) -> None:
        if db.execute("SELECT 1 FROM runs WHERE id = ?", (record.id,)).fetchone():
            raise RunAlreadyStored(record.id, self.path)
        db.execute(_RUNS.insert(), _RUNS.row(record))
        db.executemany(
            "INSERT INTO manifest (run_id, path, sha256) VALUES (?, ?, ?)",
            [(record.id, p, h) for p, h in sorted(record.manifest.items())],
        )

    @staticmethod
    def _insert_cases(db: sqlite3.Connection, records: Iterable[CaseRecord]) -> None:
        db.executemany(_CASES.insert("INSERT OR REPLACE"), [_CASES.row(r) for r in records])

    @staticmethod
    def _insert_samples(
        db: sqlite3.Connection, samples: Iterable[SampleRecord | StoredSample]
    ) -> int:
        """Samples as they come (an import streams them from its file), written a batch
        at a time so a long stream never piles up in memory; the first one's id.

        Inside the write transaction no one else adds a sample, so ids are given here,
        one after the other, and each batch is one statement per table."""
        first = next_id = 1 + int(
            db.execute("SELECT coalesce(max(id), 0) FROM samples").fetchone()[0]
        )
        rows: list[Any] = []
        assertions: list[Any] = []
        for s in samples:
            stored = s if isinstance(s, StoredSample) else StoredSample.of(s)
            row = stored.row
            if not row[_CREATED]:
                row[_CREATED] = now_iso()
            rows.append((next_id, *row))
            assertions.extend((next_id, *a) for a in stored.assertions)
            next_id += 1
            if len(rows) >= _BATCH:
                _write_batch(db, rows, assertions)
        _write_batch(db, rows, assertions)
        return first

    def put_triage(self, record: TriageRecord) -> None:
        """Record where the triage of one case stands (replacing the previous state)."""
        if not record.updated_at:
            record = replace(record, updated_at=now_iso())
        with self._transaction() as db:
            db.execute(_TRIAGE.insert("INSERT OR REPLACE"), _TRIAGE.row(record))

    # -- reading ---------------------------------------------------------------------------

    def triage(self, run_id: str) -> dict[tuple[str, str], TriageRecord]:
        """(suite, case id) → the stored triage state of each case of a run that has one."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_TRIAGE.select()} FROM triage WHERE run_id = ?", (run_id,)
            ).fetchall()
        records = [_TRIAGE.read(r) for r in rows]
        return {(r.suite, r.case_id): r for r in records}

    def runs(self, limit: int | None = None, kind: RunKind | None = None) -> list[RunRecord]:
        """Stored runs, newest first."""
        sql = f"SELECT {_RUNS.select()} FROM runs"
        params: list[Any] = []
        if kind is not None:
            sql += " WHERE kind = ?"
            params.append(str(kind))
        sql += " ORDER BY started_at DESC, seq DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
            return self._runs_from_rows(rows)

    def has_run(self, run_id: str) -> bool:
        """Whether a run with exactly this id is stored."""
        with self._lock:
            return (
                self._db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone()
                is not None
            )

    def ci_origins(self, run_ids: Sequence[str] | None = None) -> dict[str, CiOrigin]:
        """Run id → the CI run it was pulled from, for these runs (default: every pulled run)."""
        sql = f"SELECT run_id, {_ORIGINS.select()} FROM ci_origins"
        with self._lock:
            if run_ids is None:
                rows = self._db.execute(sql).fetchall()
            else:
                rows = []
                for chunk in _chunks(run_ids, 500):
                    marks = ",".join("?" * len(chunk))
                    rows += self._db.execute(
                        f"{sql} WHERE run_id IN ({marks})", list(chunk)
                    ).fetchall()
        return {str(r[0]): _ORIGINS.read(r[1:]) for r in rows}

    def seen_artifacts(self, provider: str, repo: str) -> set[str]:
        """Ids of the CI artifacts of `repo` a pull already read."""
        with self._lock:
            rows = self._db.execute(
                "SELECT artifact_id FROM ci_artifacts WHERE provider = ? AND repo = ?",
                (provider, repo),
            ).fetchall()
        return {str(r[0]) for r in rows}

    def latest_pulled_run(self, event: str | None = None) -> RunRecord | None:
        """The newest scheduled run pulled from CI (optionally from one CI event)."""
        sql = (
            f"SELECT {_RUNS.select('r')} FROM runs r "
            "JOIN ci_origins o ON o.run_id = r.id WHERE r.kind = ?"
        )
        params: list[Any] = [str(RunKind.RUN)]
        if event is not None:
            sql += " AND o.event = ?"
            params.append(event)
        sql += " ORDER BY r.started_at DESC, r.seq DESC LIMIT 1"
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
            return self._runs_from_rows(rows)[0] if rows else None

    def run(self, run_id: str) -> RunRecord:
        """The run with this id or unique id prefix."""
        if not run_id:
            raise UsageError("empty run id: give a run id or its prefix (see `redline runs`)")
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_RUNS.select()} FROM runs WHERE id = ?", (run_id,)
            ).fetchall()
            if not rows:
                pattern = _like_escape(run_id) + "%"
                rows = self._db.execute(
                    f"SELECT {_RUNS.select()} FROM runs WHERE id LIKE ? ESCAPE '\\' LIMIT 6",
                    (pattern,),
                ).fetchall()
            if not rows:
                raise RunNotFound(run_id, self.path)
            if len(rows) > 1:
                raise AmbiguousRunId(run_id, (r[0] for r in rows))
            return self._runs_from_rows(rows)[0]

    def latest_run(
        self, *, kind: RunKind | None = RunKind.RUN, result: RunResult | None = None
    ) -> RunRecord | None:
        sql = f"SELECT {_RUNS.select()} FROM runs WHERE 1 = 1"
        params: list[Any] = []
        if kind is not None:
            sql += " AND kind = ?"
            params.append(str(kind))
        if result is not None:
            sql += " AND result = ?"
            params.append(str(result))
        sql += " ORDER BY started_at DESC, seq DESC LIMIT 1"
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
            return self._runs_from_rows(rows)[0] if rows else None

    def cases(self, run_id: str) -> list[CaseRecord]:
        """One run's case results, ordered by suite and case id."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_CASES.select()} FROM cases WHERE run_id = ? ORDER BY suite, case_id",
                (run_id,),
            ).fetchall()
        return [_CASES.read(r) for r in rows]

    def cases_not_passed(self, run_id: str, limit: int) -> list[CaseRecord]:
        """The first `limit` case results of a run that are not a pass, in `cases` order:
        what a large run's summary lists without reading every case."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_CASES.select()} FROM cases WHERE run_id = ? AND result IN "
                f"({', '.join('?' * len(_NOT_PASSED))}) ORDER BY suite, case_id LIMIT ?",
                (run_id, *_NOT_PASSED, limit),
            ).fetchall()
        return [_CASES.read(r) for r in rows]

    def select_cases(
        self,
        run_id: str,
        where: str = "1",
        params: Sequence[Any] = (),
        order: str = "suite, case_id",
        limit: int = -1,
        offset: int = 0,
    ) -> list[CaseRecord]:
        """One page of a run's case results: `where` and `order` are SQL over the `cases`
        columns, built by the caller from code (values only ever go in `params`)."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_CASES.select()} FROM cases WHERE run_id = ? AND ({where}) "
                f"ORDER BY {order} LIMIT ? OFFSET ?",
                (run_id, *params, limit, offset),
            ).fetchall()
        return [_CASES.read(r) for r in rows]

    def case_values(
        self, run_id: str, columns: str, where: str = "1", params: Sequence[Any] = ()
    ) -> list[tuple[Any, ...]]:
        """`SELECT columns` (SQL over the `cases` columns: aggregates, DISTINCT) of a run's
        case results, without reading them as records."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {columns} FROM cases WHERE run_id = ? AND ({where})", (run_id, *params)
            ).fetchall()
        return [tuple(r) for r in rows]

    def outcome_counts(self, run_id: str) -> dict[CaseOutcome, int]:
        """How many of a run's cases had each outcome (outcomes no case had are left out)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT result, COUNT(*) FROM cases WHERE run_id = ? GROUP BY result", (run_id,)
            ).fetchall()
        return {CaseOutcome(r): int(n) for r, n in rows}

    def case(self, run_id: str, suite: str, case_id: str) -> CaseRecord | None:
        """This case's result in that run; None when the run did not run it."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {_CASES.select()} FROM cases "
                "WHERE run_id = ? AND suite = ? AND case_id = ?",
                (run_id, suite, case_id),
            ).fetchone()
        return None if row is None else _CASES.read(row)

    def samples(
        self, run_id: str, case_id: str | None = None, suite: str | None = None
    ) -> list[SampleRecord]:
        """A run's samples with their assertion results, ordered by suite, case, index."""
        sql = f"SELECT id, {_SAMPLES.select()} FROM samples WHERE run_id = ?"
        params: list[Any] = [run_id]
        if case_id is not None:
            sql += " AND case_id = ?"
            params.append(case_id)
        if suite is not None:
            sql += " AND suite = ?"
            params.append(suite)
        sql += " ORDER BY suite, case_id, idx"
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
            assertions = self._assertions_for([r[0] for r in rows], run_id, case_id is None)
        return [_SAMPLES.read(r[1:], assertions=assertions.get(r[0], ())) for r in rows]

    def iter_samples(self, run_id: str) -> Iterator[SampleRecord]:
        """A run's samples in the order of `samples`, read a batch at a time: an export of
        a run of any size holds one batch in memory, not the run."""
        for rows, assertions in self._sample_batches(run_id, _ASSERTIONS.read):
            for r in rows:
                yield _SAMPLES.read(r[1:], assertions=tuple(assertions.get(r[0], ())))

    def iter_sample_json(self, run_id: str) -> Iterator[dict[str, Any]]:
        """`record_json` of each of `iter_samples`, read from the rows without building the
        records: what an export writes, at a fraction of the cost."""
        for rows, assertions in self._sample_batches(run_id, _ASSERTIONS.read_json):
            for r in rows:
                yield _SAMPLES.read_json(r[1:], assertions=assertions.get(r[0], []))

    def _sample_batches(
        self, run_id: str, read: Callable[[Sequence[Any]], _A]
    ) -> Iterator[tuple[list[Any], dict[int, list[_A]]]]:
        """A run's sample rows (id first) in the order of `samples`, a batch at a time, each
        with its samples' assertion results read by `read`."""
        with self._lock:
            cursor = self._db.execute(
                f"SELECT id, {_SAMPLES.select()} FROM samples WHERE run_id = ? "
                "ORDER BY suite, case_id, idx",
                (run_id,),
            )
        while True:
            with self._lock:
                rows = cursor.fetchmany(_BATCH)
                assertions = self._assertion_rows([r[0] for r in rows], run_id, False, read)
            if not rows:
                return
            yield rows, assertions

    def sample_keys(self, run_id: str) -> set[tuple[str, str, int]]:
        """(suite, case id, index) of every sample stored for a run: what `--resume` skips."""
        with self._lock:
            rows = self._db.execute(
                "SELECT suite, case_id, idx FROM samples WHERE run_id = ?", (run_id,)
            ).fetchall()
        return {(str(s), str(c), int(i)) for s, c, i in rows}

    def sample_verdicts(self, run_id: str) -> dict[tuple[str, str], dict[int, Verdict]]:
        """(suite, case id) → sample index → verdict: what a resume continues from."""
        with self._lock:
            rows = self._db.execute(
                "SELECT suite, case_id, idx, verdict FROM samples WHERE run_id = ?", (run_id,)
            ).fetchall()
        verdicts: dict[tuple[str, str], dict[int, Verdict]] = {}
        for suite, case_id, index, verdict in rows:
            verdicts.setdefault((str(suite), str(case_id)), {})[int(index)] = Verdict(verdict)
        return verdicts

    def verdict_counts(self, run_id: str) -> dict[tuple[str, str], dict[Verdict, int]]:
        """(suite, case id) → stored samples per verdict, without reading the outputs."""
        with self._lock:
            rows = self._db.execute(
                "SELECT suite, case_id, verdict, COUNT(*) FROM samples WHERE run_id = ? "
                "GROUP BY suite, case_id, verdict",
                (run_id,),
            ).fetchall()
        counts: dict[tuple[str, str], dict[Verdict, int]] = {}
        for suite, case_id, verdict, n in rows:
            per = counts.setdefault((suite, case_id), dict.fromkeys(VERDICT_ORDER, 0))
            per[Verdict(verdict)] = int(n)
        return counts

    def usage(self, run_id: str) -> dict[tuple[str, str], list[SampleUsage]]:
        """(suite, case id) → each sample's latency, tokens and cost, without the outputs."""
        with self._lock:
            rows = self._db.execute(
                "SELECT suite, case_id, verdict, latency_ms, input_tokens, output_tokens, cost, "
                "cached_input_tokens, cache_write_tokens "
                "FROM samples WHERE run_id = ? ORDER BY suite, case_id, idx",
                (run_id,),
            ).fetchall()
        usage: dict[tuple[str, str], list[SampleUsage]] = {}
        for suite, case_id, verdict, *measured in rows:
            usage.setdefault((suite, case_id), []).append(SampleUsage(Verdict(verdict), *measured))
        return usage

    def token_history(
        self, model_id: str | None, runs: int
    ) -> dict[tuple[str, str], tuple[int, float, float, float, float]]:
        """(suite, case id) → (samples, mean input tokens, mean output tokens, mean cached
        and mean cache-written input tokens) over the answered samples of the last `runs`
        runs (of `model_id`, or of any model), replays excluded: what a cost estimate is
        built from."""
        sql = "SELECT id FROM runs WHERE kind != 'replay'"
        params: list[Any] = []
        if model_id is not None:
            # The local model's identity carries its file hash: `local:name@sha256:...`.
            sql += " AND (model_id = ? OR model_id LIKE ? ESCAPE '\\')"
            params += [model_id, _like_escape(model_id) + "@%"]
        sql += " ORDER BY started_at DESC, seq DESC LIMIT ?"
        params.append(runs)
        with self._lock:
            run_ids = [r[0] for r in self._db.execute(sql, params).fetchall()]
            if not run_ids:
                return {}
            rows = self._db.execute(
                "SELECT suite, case_id, COUNT(*), AVG(input_tokens), AVG(output_tokens), "
                "AVG(coalesce(cached_input_tokens, 0)), AVG(coalesce(cache_write_tokens, 0)) "
                f"FROM samples WHERE run_id IN ({', '.join('?' * len(run_ids))}) "
                "AND input_tokens IS NOT NULL AND output_tokens IS NOT NULL "
                "AND verdict != 'transport' GROUP BY suite, case_id",
                run_ids,
            ).fetchall()
        return {
            (s, c): (int(n), float(i), float(o), float(r), float(w)) for s, c, n, i, o, r, w in rows
        }

    def case_history(
        self, case_id: str, suite: str | None = None
    ) -> list[tuple[RunRecord, CaseRecord]]:
        """Every stored result of one case, oldest run first, all run kinds."""
        sql = (
            f"SELECT {_CASES.select('c')} "
            "FROM cases c JOIN runs r ON r.id = c.run_id WHERE c.case_id = ?"
        )
        params: list[Any] = [case_id]
        if suite is not None:
            sql += " AND c.suite = ?"
            params.append(suite)
        sql += " ORDER BY r.started_at, r.seq"
        with self._lock:
            case_rows = self._db.execute(sql, params).fetchall()
            run_ids = list(dict.fromkeys(r[0] for r in case_rows))
            runs = {r.id: r for r in self._runs_by_ids(run_ids)}
        return [(runs[r[0]], _CASES.read(r)) for r in case_rows]

    def manifest(self, run_id: str) -> dict[str, str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT path, sha256 FROM manifest WHERE run_id = ? ORDER BY path", (run_id,)
            ).fetchall()
        return {str(p): str(h) for p, h in rows}

    # -- internals -------------------------------------------------------------------------

    def _runs_by_ids(self, run_ids: Sequence[str]) -> list[RunRecord]:
        out: list[RunRecord] = []
        for chunk in _chunks(run_ids, 500):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT {_RUNS.select()} FROM runs WHERE id IN ({marks})", list(chunk)
            ).fetchall()
            out.extend(self._runs_from_rows(rows))
        return out

    def _runs_from_rows(self, rows: Sequence[Sequence[Any]]) -> list[RunRecord]:
        """Run records with their manifests; finished runs never change and are cached."""
        out: list[RunRecord] = []
        for row in rows:
            run_id = str(row[0])
            cached = self._finished.get(run_id)
            if cached is not None:
                out.append(cached)
                continue
            manifest = dict(
                self._db.execute(
                    "SELECT path, sha256 FROM manifest WHERE run_id = ?", (run_id,)
                ).fetchall()
            )
            record = _RUNS.read(row, manifest=manifest)
            if record.status is RunStatus.FINISHED:
                self._finished[run_id] = record
            elif record.status is RunStatus.RUNNING and self._holder_gone(run_id):
                record = replace(record, status=RunStatus.INTERRUPTED)
            out.append(record)
        return out

    def _holder_gone(self, run_id: str) -> bool:
        """Whether the process that was running `run_id` is gone (killed, crashed, its
        machine off, or it could not even record its end on a full disk): a run only it
        could finish shows as interrupted. Every run is claimed before it starts, so a
        running run nobody holds is one whose holder left."""
        row = self._db.execute(
            "SELECT host, pid, heartbeat FROM run_holders WHERE run_id = ?", (run_id,)
        ).fetchone()
        return row is None or not _alive(row[0], row[1], row[2])

    def _assertions_for(
        self, sample_ids: Sequence[int], run_id: str, whole_run: bool
    ) -> dict[int, tuple[AssertionResult, ...]]:
        found = self._assertion_rows(sample_ids, run_id, whole_run, _ASSERTIONS.read)
        return {k: tuple(v) for k, v in found.items()}

    def _assertion_rows(
        self,
        sample_ids: Sequence[int],
        run_id: str,
        whole_run: bool,
        read: Callable[[Sequence[Any]], _A],
    ) -> dict[int, list[_A]]:
        """Sample id → its assertion results in order, each row read by `read` (the whole
        run's in one query when `whole_run`, else those of `sample_ids`)."""
        found: dict[int, list[_A]] = {}
        if not sample_ids:
            return {}
        sql = f"SELECT a.sample_id, {_ASSERTIONS.select('a')} FROM assertion_results a "
        if whole_run:
            rows: Iterable[Sequence[Any]] = self._db.execute(
                sql + "JOIN samples s ON s.id = a.sample_id WHERE s.run_id = ? "
                "ORDER BY a.sample_id, a.idx",
                (run_id,),
            )
        else:
            collected: list[Sequence[Any]] = []
            for chunk in _chunks(sample_ids, 500):
                marks = ",".join("?" * len(chunk))
                collected.extend(
                    self._db.execute(
                        sql + f"WHERE a.sample_id IN ({marks}) ORDER BY a.sample_id, a.idx",
                        list(chunk),
                    )
                )
            rows = collected
        for row in rows:
            found.setdefault(row[0], []).append(read(row[1:]))
        return found


def _write_batch(db: sqlite3.Connection, samples: list[Any], assertions: list[Any]) -> None:
    """Write and empty both lists of rows."""
    db.executemany(_INSERT_SAMPLE, samples)
    db.executemany(_INSERT_ASSERTION, assertions)
    samples.clear()
    assertions.clear()


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass(frozen=True)
class SupersededSample:
    """A slot's first attempt (a transport failure, say), replaced by a retry."""

    suite: str
    case_id: str
    index: int
    verdict: Verdict
    error: str | None
    output: str
    superseded_at: str


class _Guard:
    """The store's lock (one connection shared between threads). A damaged file or a full
    disk met while it is held is said as StoreCorrupt / StoreFull, naming the file."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.RLock()
        self._path = path

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.release()
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(exc, sqlite3.DatabaseError) and code in (*_CORRUPT, *_FULL):
            raise _store_error(exc, self._path) from None


def _alive(host: str, pid: int, heartbeat: float) -> bool:
    """A holder is alive while its heartbeat is fresh and, on this host, its pid exists."""
    if time.time() - heartbeat > STALE_S:
        return False
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _store_error(exc: sqlite3.DatabaseError, path: Path) -> Exception:
    code = getattr(exc, "sqlite_errorcode", None)
    if code in _FULL:
        return StoreFull(path)
    if code in _CORRUPT or type(exc) is sqlite3.DatabaseError:
        return StoreCorrupt(path, str(exc))
    return exc


def _too_large_to_store(sample: SampleRecord) -> SampleRecord:
    size = len(sample.output)
    return replace(
        sample,
        output=sample.output[:KEPT_PREFIX_CHARS],
        verdict=Verdict.TRANSPORT,
        error=(
            f"output too large for the store ({size:,} characters): its first "
            f"{KEPT_PREFIX_CHARS:,} are kept"
        ),
    )


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """Columns of record fields added after a store was created: an older store gains them."""
    for table in (_RUNS, _CASES, _SAMPLES, _ASSERTIONS, _TRIAGE, _ORIGINS):
        table.add_missing_columns(db)


def _lower(text: str | bytes | None) -> str | None:
    return None if text is None else decode_text(text).lower()


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
