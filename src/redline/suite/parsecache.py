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

from redline.version import __version__
from redline.vocabulary.sequential import SequentialPlan
from redline.vocabulary.tiers import Tier

#: Bump when an entry's fields or the key's parts change.
SCHEMA = 1
CACHE_FILE = "parsed.db"


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
        """The case kept under `key`, when every file it read is unchanged."""
        text = self._load().get(key)
        entry = None if text is None else json.loads(text)
        if entry is None or any(self.file_hash(Path(p)) != h for p, h in entry["inputs"]):
            self.misses += 1
            return None
        self.hits += 1
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
                    with contextlib.closing(self._connect()) as db:
                        self._entries = dict(db.execute("SELECT key, entry FROM entries"))
                except sqlite3.Error:
                    pass  # no usable cache: every file is read
        return self._entries

    def _connect(self) -> sqlite3.Connection:
        assert self.path is not None
        db = sqlite3.connect(self.path)
        db.execute("CREATE TABLE IF NOT EXISTS meta (version TEXT NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, entry TEXT)")
        version = f"{SCHEMA}:{__version__}"
        stored = db.execute("SELECT version FROM meta").fetchone()
        if stored is None or stored[0] != version:
            db.execute("DELETE FROM entries")
            db.execute("DELETE FROM meta")
            db.execute("INSERT INTO meta VALUES (?)", (version,))
            db.commit()
        return db

    def take_new(self) -> dict[str, str]:
        """The entries made since the last close, handed over (a worker's to its parent)."""
        new, self._new = self._new, {}
        return new

    def adopt(self, entries: Mapping[str, str]) -> None:
        """Entries another process made, written with this cache's own."""
        self._new.update(entries)

    def close(self) -> None:
        """Write the new entries; a cache that cannot be written is skipped, never an error."""
        if not self._new or self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.closing(self._connect()) as db:
                # In key order: each insert lands beside the last, not at a random page.
                rows = sorted(self._new.items())
                db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?)", rows)
                db.commit()
        except (OSError, sqlite3.Error):
            pass
        self._new.clear()


__all__ = ["CACHE_FILE", "SCHEMA", "CheckedCase", "ParseCache"]
