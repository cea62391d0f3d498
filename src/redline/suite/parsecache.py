"""What `redline validate` found in each case file, kept by content so the next full check
reads only the files that changed.

An entry is keyed by the SHA-256 of the case file's bytes and of its context: redline's
version and this cache's schema, the working directory (problems name paths relative to
it), the suite folder and name, the bytes of the suite's own files (suite.yaml, prompt
files, templates), the configuration file's bytes. It records what validate reports of a
case that loaded cleanly, and the SHA-256 of every other file the case read (fixtures,
schemas, datasets): an entry whose inputs changed is read again. A case file with problems
is never kept, so each of its problems is found, where it is, on every check. The cache is
a SQLite file beside the store; deleting it loses nothing, and a redline of another version
empties it on opening.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from redline.version import __version__
from redline.vocabulary.sequential import SequentialPlan
from redline.vocabulary.tiers import Tier

#: Bump when an entry's fields, the key's parts or the file's tables change.
SCHEMA = 2
CACHE_FILE = "parsed.db"
#: How long a process waits for another one writing its entries.
_WRITE_WAIT_S = 60.0


@dataclass(frozen=True)
class CheckedCase:
    """A case that loaded cleanly, as `redline validate` counts it."""

    id: str
    suite: str
    #: The case file's resolved path, as text: a parallel check hands its shares' cases to
    #: one process, and text crosses in a fraction of a `Path`'s time.
    path: str
    tier: Tier
    samples: int
    required: int
    assertions: int
    sampling: SequentialPlan | None = None


def _version() -> str:
    return f"{SCHEMA}:{__version__}"


def _digest(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


class ParseCache:
    """The cache file, read whole when first asked and written once, when closed."""

    def __init__(self, path: Path | None) -> None:
        """`path` None: a check that keeps nothing (`--no-cache`)."""
        self.path = path
        self._entries: dict[str, str] | None = None
        self._new: dict[str, str] = {}
        #: Each input file's SHA-256, read once per check (many cases share a fixture).
        self._hashes: dict[Path, str | None] = {}
        self.hits = 0
        self.misses = 0

    def context(self, suite: str, folder: Path, files: Iterable[Path], config: Path | None) -> str:
        """The part of every key that is not the case file: what else shapes its reading."""
        parts = [
            f"{SCHEMA}\x00{__version__}\x00{os.getcwd()}\x00{folder}\x00{suite}".encode(),
        ]
        for path in (*files, *((config,) if config is not None else ())):
            parts.append(str(path).encode())
            parts.append((self.file_hash(path) or "missing").encode())
        return _digest(parts)

    def key(self, context: str, data: bytes) -> str:
        return _digest((context.encode(), data))

    def file_hash(self, path: Path) -> str | None:
        if path not in self._hashes:
            try:
                self._hashes[path] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                self._hashes[path] = None
        return self._hashes[path]

    def get(self, key: str, path: str) -> CheckedCase | None:
        """The case kept under `key`, when every file it read is unchanged (an entry that
        cannot be read is as good as none)."""
        text = self._load().get(key)
        try:
            case = None if text is None else self._entry(json.loads(text), path)
        except (ValueError, KeyError, TypeError):
            case = None
        if case is None:
            self.misses += 1
            return None
        self.hits += 1
        return case

    def _entry(self, entry: dict[str, Any], path: str) -> CheckedCase | None:
        if any(self.file_hash(Path(p)) != h for p, h in entry["inputs"]):
            return None
        sampling = entry["sampling"]
        return CheckedCase(
            id=entry["id"],
            suite=entry["suite"],
            path=path,
            tier=Tier(entry["tier"]),
            samples=entry["samples"],
            required=entry["required"],
            assertions=entry["assertions"],
            sampling=None if sampling is None else SequentialPlan(**sampling),
        )

    def put(self, key: str, case: CheckedCase, inputs: Iterable[Path]) -> None:
        if self.path is None:
            return  # nothing is kept
        hashes = [(str(p), self.file_hash(p)) for p in inputs]
        if any(h is None for _, h in hashes):
            return
        fields: Mapping[str, object] = {
            "id": case.id,
            "suite": case.suite,
            "tier": str(case.tier),
            "samples": case.samples,
            "required": case.required,
            "assertions": case.assertions,
            "sampling": None if case.sampling is None else asdict(case.sampling),
            "inputs": hashes,
        }
        self._new[key] = json.dumps(fields)

    def _load(self) -> dict[str, str]:
        if self._entries is None:
            self._entries = {}
            if self.path is not None and self.path.is_file():
                try:
                    with contextlib.closing(sqlite3.connect(self.path)) as db:
                        stored = db.execute("SELECT version FROM meta").fetchone()
                        if stored is not None and stored[0] == _version():
                            self._entries = dict(db.execute("SELECT key, entry FROM entries"))
                except sqlite3.Error:
                    pass  # no usable cache: every file is read
        return self._entries

    def close(self) -> None:
        """Write the new entries; a cache that cannot be written is skipped, never an error,
        and a file that is not a readable cache is replaced (each process of a parallel check
        writes its own entries, one after the other)."""
        if not self._new or self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._write()
            except sqlite3.OperationalError:
                pass  # locked past the timeout, or the disk is full: the next check reads more
            except sqlite3.DatabaseError:
                self.path.unlink()
                self._write()
        except (OSError, sqlite3.Error):
            pass
        self._new.clear()

    def _write(self) -> None:
        assert self.path is not None
        with contextlib.closing(
            sqlite3.connect(self.path, timeout=_WRITE_WAIT_S, isolation_level=None)
        ) as db:
            # A cache: a crash of the machine mid-write may lose it, and a lost cache is
            # only a slower check, so the write does not wait for the disk.
            db.execute("PRAGMA synchronous = OFF")
            db.execute("BEGIN IMMEDIATE")
            db.execute("CREATE TABLE IF NOT EXISTS meta (version TEXT NOT NULL)")
            stored = db.execute("SELECT version FROM meta").fetchone()
            if stored is None or stored[0] != _version():
                db.execute("DROP TABLE IF EXISTS entries")
                db.execute("DELETE FROM meta")
                db.execute("INSERT INTO meta VALUES (?)", (_version(),))
            db.execute(
                "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, entry TEXT) "
                "WITHOUT ROWID"
            )
            # In key order: each insert lands beside the last, not at a random page.
            db.executemany(
                "INSERT OR REPLACE INTO entries VALUES (?, ?)", sorted(self._new.items())
            )
            db.execute("COMMIT")


__all__ = ["CACHE_FILE", "SCHEMA", "CheckedCase", "ParseCache"]
