"""Fixtures for the triage TUI tests: a fixed store and a real git repository around it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from triage_repo import TriageRepo, make_repo, open_triage
from triage_store import build_store

from redline.running.store import RunStore


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fixed_store(tmp_path: Path) -> Iterator[RunStore]:
    store = build_store(tmp_path / "store" / "redline.db")
    yield store
    store.close()


@pytest.fixture
def triage_repo(tmp_path: Path, fixed_store: RunStore) -> TriageRepo:
    """A repository whose TOML points at no server: enough for every screen but the rerun."""
    toml = '[models]\nfake = "openai:fake-model-2026-01"\n'
    root = tmp_path / "repo"
    root.mkdir()
    repo, case_path = make_repo(root, toml)
    return TriageRepo(root, repo, open_triage(root, fixed_store), case_path)
