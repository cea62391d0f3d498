"""Shared fixtures: the loopback LLM server (see tests/servers.py) and a config for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from redline.config import Config, parse_config
from servers import LoopbackLLMServer

LOOPBACK_KEY_ENV = "REDLINE_LOOPBACK_KEY"
LOOPBACK_KEY = "sk-loopback-7f3a9c-never-store-me"


@pytest.fixture(scope="session")
def _loopback_server() -> Iterator[LoopbackLLMServer]:
    with LoopbackLLMServer() as server:
        yield server


@pytest.fixture
def llm_server(_loopback_server: LoopbackLLMServer) -> LoopbackLLMServer:
    """The running loopback server, with its records and counters cleared for this test."""
    _loopback_server.reset()
    return _loopback_server


@pytest.fixture
def loopback_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """Sets $REDLINE_LOOPBACK_KEY (the key the loopback config names) and returns its value."""
    monkeypatch.setenv(LOOPBACK_KEY_ENV, LOOPBACK_KEY)
    return LOOPBACK_KEY


@pytest.fixture
def loopback_config(llm_server: LoopbackLLMServer, tmp_path: Path) -> Config:
    """A Config from `tmp_path/redline.toml` pinning `fake` and `fake-anthropic` to the server.

    Short timeouts and backoff (2 s, 2 retries, 10-50 ms waits) keep retry tests fast.
    """
    path = tmp_path / "redline.toml"
    path.write_text(llm_server.redline_toml(key_env=LOOPBACK_KEY_ENV), encoding="utf-8")
    return parse_config(path)
