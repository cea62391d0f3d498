"""Cached prompt tokens: recorded per sample from each API's usage, priced apart, shown in
compare (the migration review), kept through export and import, used by the estimate."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from redline.cli import main
from redline.config import Config, Price, parse_config
from redline.errors import ConfigError
from redline.providers.factory import make_provider
from redline.running.exchange import RESULTS_FILE, SAMPLES_FILE, export_run, import_run
from redline.running.store import RunStore
from redline.running.usage import usage_of_samples
from redline.vocabulary.completion import ChatRequest, Completion
from runfactory import OK, CaseSpec, RunSpec, open_store, write_config, write_run
from servers import LoopbackLLMServer

#: A long user message, so the prompt has more tokens than the cached part.
USER = "Invoice 7 from ACME for 120 EUR, due on the first of March, paid by card. " * 3

CACHE_PRICES = (
    "input_per_mtok = 1.0\noutput_per_mtok = 2.0\n"
    "cached_input_per_mtok = 0.1\ncache_write_per_mtok = 1.25\n"
)


def _config(server: LoopbackLLMServer, tmp_path: Path) -> Config:
    text = server.redline_toml().replace(
        "input_per_mtok = 1.0\noutput_per_mtok = 2.0\n", CACHE_PRICES
    )
    text += '[prices."loopback-anthropic:claude-fake-2025-01-01"]\n' + CACHE_PRICES
    path = tmp_path / "redline.toml"
    path.write_text(text, encoding="utf-8")
    return parse_config(path)


def _complete(config: Config, alias: str, user: str) -> Completion:
    async def go() -> Completion:
        provider = make_provider(config.model(alias), config)
        try:
            return await provider.complete(ChatRequest(model=alias, system="Extract.", user=user))
        finally:
            await provider.aclose()

    return asyncio.run(go())


def test_openai_cached_tokens_are_part_of_the_prompt_and_priced_at_the_cached_rate(
    llm_server: LoopbackLLMServer, loopback_key: str, tmp_path: Path
) -> None:
    config = _config(llm_server, tmp_path)
    plain = _complete(config, "fake", USER)
    cached = _complete(config, "fake", USER + " CACHED:20")

    assert plain.cached_input_tokens is None and plain.input_tokens is not None
    assert cached.cached_input_tokens == 20
    assert cached.input_tokens == plain.input_tokens  # the cached ones are counted in it
    assert cached.input_tokens is not None and cached.output_tokens is not None
    fresh = cached.input_tokens - 20
    expected = (fresh * 1.0 + 20 * 0.1 + cached.output_tokens * 2.0) / 1e6
    assert cached.cost == pytest.approx(expected)
    assert plain.cost is not None and cached.cost < plain.cost


def test_anthropic_cache_reads_and_writes_count_as_input_and_are_priced_apart(
    llm_server: LoopbackLLMServer, loopback_key: str, tmp_path: Path
) -> None:
    config = _config(llm_server, tmp_path)
    plain = _complete(config, "fake-anthropic", USER + " CACHED:0 CACHE_WRITE:0")
    cached = _complete(config, "fake-anthropic", USER + " CACHED:12 CACHE_WRITE:8")

    # Anthropic's `input_tokens` leaves both out: redline's input tokens are the whole prompt.
    assert cached.input_tokens == plain.input_tokens
    assert (cached.cached_input_tokens, cached.cache_write_tokens) == (12, 8)
    assert cached.input_tokens is not None and cached.output_tokens is not None
    fresh = cached.input_tokens - 20
    expected = (fresh * 1.0 + 12 * 0.1 + 8 * 1.25 + cached.output_tokens * 2.0) / 1e6
    assert cached.cost == pytest.approx(expected)


def test_without_cache_prices_cached_tokens_cost_what_fresh_input_does() -> None:
    price = Price(1.0, 2.0)
    assert price.cost(1000, 100, 600, 200) == price.cost(1000, 100)
    assert Price(1.0, 2.0, 0.1, 1.25).cost(1000, 100, 600, 200) == pytest.approx(
        (200 * 1.0 + 600 * 0.1 + 200 * 1.25 + 100 * 2.0) / 1e6
    )


def test_cache_prices_are_read_and_a_bad_one_is_reported_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "redline.toml"
    path.write_text(
        '[models]\ndefault = "openai:gpt-x"\n[prices.default]\n'
        "input_per_mtok = 2.0\noutput_per_mtok = 8.0\ncached_input_per_mtok = 0.5\n",
        encoding="utf-8",
    )
    price = parse_config(path).price("openai:gpt-x")
    assert price == Price(2.0, 8.0, 0.5, None)

    path.write_text(
        '[models]\ndefault = "openai:gpt-x"\n[prices.default]\n'
        'input_per_mtok = 2.0\noutput_per_mtok = 8.0\ncache_write_per_mtok = "cheap"\n'
        "cache_read_per_mtok = 0.5\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(path)
    text = str(caught.value)
    assert "redline.toml:6" in text and "cache_write_per_mtok must be US dollars" in text
    assert "unknown key(s) cache_read_per_mtok" in text and "cached_input_per_mtok" in text


def test_cached_tokens_survive_export_and_import_and_are_left_out_when_absent(
    tmp_path: Path,
) -> None:
    spec = RunSpec(
        "cache1",
        [
            CaseSpec(
                "long-prompt",
                [OK] * 2,
                input_tokens=1000,
                output_tokens=50,
                cached_input_tokens=900,
                cache_write_tokens=0,
            ),
            CaseSpec("fresh", [OK] * 2, input_tokens=1000, output_tokens=50),
        ],
    )
    with RunStore.open(tmp_path / "a.db") as store:
        write_run(store, spec)
        export_run(store, "cache1", tmp_path / "export")
    lines = (tmp_path / "export" / SAMPLES_FILE).read_text(encoding="utf-8").splitlines()
    assert sum('"cached_input_tokens": 900' in line for line in lines) == 2
    assert sum("cached_input_tokens" in line for line in lines) == 2, "absent: not written"
    assert (tmp_path / "export" / RESULTS_FILE).is_file()
    with RunStore.open(tmp_path / "b.db") as fresh:
        import_run(fresh, tmp_path / "export")
        usage = usage_of_samples(fresh.samples("cache1"), Price(1.0, 2.0, 0.1))
    assert (usage.cached_input_tokens, usage.cache_write_tokens) == (1800, 0)
    assert usage.cost == pytest.approx((2 * (100 + 90) + 2 * 1000 + 4 * 50 * 2.0) / 1e6)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_config(tmp_path)
    with (tmp_path / "redline.toml").open("a", encoding="utf-8") as fh:
        fh.write(
            '[prices."local:model-a"]\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n'
            "cached_input_per_mtok = 0.3\ncache_write_per_mtok = 3.75\n"
        )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "220")
    return tmp_path


def _runs(repo: Path, cached_b: int | None) -> None:
    def cases(cached: int | None) -> list[CaseSpec]:
        return [
            CaseSpec(
                f"c{i}", [OK] * 5, input_tokens=2000, output_tokens=100, cached_input_tokens=cached
            )
            for i in range(8)
        ]

    with open_store(repo) as store:
        write_run(store, RunSpec("runa", cases(None)))
        write_run(
            store, RunSpec("runb", cases(cached_b), started_at="2026-01-02T00:00:00.000+00:00")
        )


def test_compare_shows_cached_tokens_and_prices_them_in_the_cost(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _runs(repo, cached_b=1800)
    assert main(["compare", "runa", "runb"]) == 0
    out = capsys.readouterr().out
    assert "cached input tokens (total)" in out
    assert "cached input tokens/call" in out
    # A: 2000 fresh at $3 + 100 out at $15 = $0.0075/call; B: 200 fresh, 1800 cached.
    assert "$7.50" in out and "$2.64" in out


def test_compare_without_any_cached_tokens_shows_no_cache_lines(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _runs(repo, cached_b=None)
    assert main(["compare", "runa", "runb"]) == 0
    assert "cached" not in capsys.readouterr().out


def test_token_history_carries_the_cached_share_the_estimate_prices(tmp_path: Path) -> None:
    spec = RunSpec(
        "hist1",
        [
            CaseSpec(
                "shared-prompt",
                [OK] * 4,
                input_tokens=1000,
                output_tokens=100,
                cached_input_tokens=800,
            )
        ],
    )
    with RunStore.open(tmp_path / "h.db") as store:
        write_run(store, spec)
        history = store.token_history("local:model-a", 5)
    samples, tokens_in, tokens_out, cached, written = history[("suite-a", "shared-prompt")]
    assert (samples, tokens_in, tokens_out, cached, written) == (4, 1000.0, 100.0, 800.0, 0.0)
    price = Price(3.0, 15.0, 0.3)
    assert price.cost_of(tokens_in, tokens_out, cached, written) == pytest.approx(
        (200 * 3.0 + 800 * 0.3 + 100 * 15.0) / 1e6
    )
