"""HTTP providers against the real loopback server: what each failure becomes, and retries."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

from redline.config import Config, parse_config
from redline.errors import ConfigError
from redline.providers.base import Provider
from redline.providers.factory import make_provider
from redline.providers.retries import RetryPolicy, parse_retry_after
from redline.vocabulary.completion import ChatRequest, Completion, FinishReason
from redline.vocabulary.messages import ResponseFormat
from servers import REFUSAL_TEXT, TRUNCATED_JSON, VALID_JSON, LoopbackLLMServer

SYSTEM = "You extract invoice fields as JSON."


def _complete(config: Config, alias: str, user: str, **fields: object) -> Completion:
    return _complete_many(config, alias, [user], **fields)[0]


def _complete_many(
    config: Config, alias: str, users: list[str], **fields: object
) -> list[Completion]:
    async def go() -> list[Completion]:
        provider = make_provider(config.model(alias), config)
        try:
            requests = [
                ChatRequest(model=alias, system=SYSTEM, user=u, **fields)  # type: ignore[arg-type]
                for u in users
            ]
            return list(await asyncio.gather(*(provider.complete(r) for r in requests)))
        finally:
            await provider.aclose()

    return asyncio.run(go())


def _config(server: LoopbackLLMServer, tmp_path: Path, **settings: object) -> Config:
    path = tmp_path / "redline.toml"
    path.write_text(server.redline_toml(**settings), encoding="utf-8")  # type: ignore[arg-type]
    return parse_config(path)


ALIASES = ["fake", "fake-anthropic"]


@pytest.mark.parametrize("alias", ALIASES)
@pytest.mark.parametrize(
    ("mode", "text", "finish"),
    [
        ("json", VALID_JSON, FinishReason.STOP),
        ("preamble", "Here is the JSON you asked for:\n" + VALID_JSON, FinishReason.STOP),
        ("length", TRUNCATED_JSON, FinishReason.LENGTH),
        ("refusal", REFUSAL_TEXT, FinishReason.STOP),
        ("refusal-stop", REFUSAL_TEXT, FinishReason.REFUSAL),
    ],
)
def test_answers_keep_raw_text_and_finish_reason(
    loopback_config: Config,
    loopback_key: str,
    llm_server: LoopbackLLMServer,
    alias: str,
    mode: str,
    text: str,
    finish: FinishReason,
) -> None:
    result = _complete(loopback_config, alias, f"Invoice 7. MODE:{mode}")

    assert result.error is None
    assert result.text == text
    assert result.finish_reason is finish
    assert result.attempts == 1
    assert result.output_tokens == len(text.split())
    assert result.input_tokens is not None and result.input_tokens > 0
    assert result.latency_ms is not None and result.latency_ms > 0
    assert llm_server.count() == 1


def test_degenerate_loop_is_returned_verbatim(loopback_config: Config, loopback_key: str) -> None:
    result = _complete(loopback_config, "fake", "MODE:loop")

    assert result.text.startswith("the answer is the answer is")
    assert len(result.text) > 1000
    assert result.finish_reason is FinishReason.STOP


def test_cost_comes_from_the_price_table_only_when_priced(
    loopback_config: Config, loopback_key: str
) -> None:
    priced = _complete(loopback_config, "fake", "MODE:json")
    unpriced = _complete(loopback_config, "fake-anthropic", "MODE:json")

    assert priced.input_tokens is not None and priced.output_tokens is not None
    expected = (priced.input_tokens * 1.0 + priced.output_tokens * 2.0) / 1e6
    assert priced.cost == pytest.approx(expected)
    assert unpriced.cost is None


@pytest.mark.parametrize("alias", ALIASES)
@pytest.mark.parametrize(
    ("mode", "error_part"),
    [
        ("reset", "transport error"),
        ("500", "HTTP 500"),
        ("invalid", "malformed response body"),
        ("missing", "malformed response body"),
        ("429 RETRY_AFTER:0", "HTTP 429"),
    ],
)
def test_transport_failures_are_retried_then_reported(
    loopback_config: Config,
    loopback_key: str,
    llm_server: LoopbackLLMServer,
    alias: str,
    mode: str,
    error_part: str,
) -> None:
    result = _complete(loopback_config, alias, f"MODE:{mode}")

    assert result.error is not None and error_part in result.error
    assert "3 attempts" in result.error
    assert result.text == ""
    assert result.finish_reason is None
    assert result.attempts == 3
    assert llm_server.count() == 3


@pytest.mark.parametrize("alias", ALIASES)
def test_a_slow_server_times_out_on_every_attempt(
    llm_server: LoopbackLLMServer, loopback_key: str, tmp_path: Path, alias: str
) -> None:
    config = _config(llm_server, tmp_path, timeout_s=0.3, max_retries=1)

    result = _complete(config, alias, "MODE:slow DELAY_MS:1500")

    assert result.error is not None and "timeout" in result.error
    assert result.attempts == 2
    assert llm_server.count(mode="slow") == 2


@pytest.mark.parametrize(
    ("mode", "attempts"),
    [
        ("500 FAILS:1", 2),
        ("reset FAILS:2", 3),
        ("invalid FAILS:1", 2),
        ("slow FAILS:1 DELAY_MS:1000", 2),
    ],
)
def test_a_transient_failure_recovers_within_the_retry_budget(
    llm_server: LoopbackLLMServer, loopback_key: str, tmp_path: Path, mode: str, attempts: int
) -> None:
    config = _config(llm_server, tmp_path, timeout_s=0.3, max_retries=2)

    result = _complete(config, "fake", f"MODE:{mode}")

    assert result.error is None
    assert result.text == VALID_JSON
    assert result.attempts == attempts
    assert [r.attempt for r in llm_server.requests] == list(range(1, attempts + 1))


def test_client_errors_are_not_retried_and_name_the_key_variable(
    loopback_config: Config, loopback_key: str, llm_server: LoopbackLLMServer
) -> None:
    result = _complete(loopback_config, "fake", "MODE:401")

    assert result.attempts == 1
    assert llm_server.count() == 1
    assert result.error is not None
    assert "HTTP 401" in result.error and "REDLINE_LOOPBACK_KEY" in result.error
    assert loopback_key not in result.error


@pytest.mark.parametrize("alias", ALIASES)
def test_retry_after_seconds_is_honoured(
    llm_server: LoopbackLLMServer, loopback_key: str, tmp_path: Path, alias: str
) -> None:
    config = _config(llm_server, tmp_path, backoff_base_s=0.01, backoff_max_s=5.0)

    result = _complete(config, alias, "MODE:429 FAILS:1 RETRY_AFTER:1")

    assert result.error is None and result.attempts == 2
    first, second = llm_server.requests
    assert (first.status, second.status) == (429, 200)
    assert 1.0 <= second.at - first.at < 4.0


def test_retry_after_is_capped_by_backoff_max(
    llm_server: LoopbackLLMServer, loopback_key: str, tmp_path: Path
) -> None:
    config = _config(llm_server, tmp_path, backoff_base_s=0.01, backoff_max_s=0.3)

    result = _complete(config, "fake", "MODE:429 FAILS:1 RETRY_AFTER:120")

    assert result.error is None and result.attempts == 2
    first, second = llm_server.requests
    assert 0.3 <= second.at - first.at < 5.0


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=7), usegmt=True)

    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(later, now=now.timestamp()) == pytest.approx(7.0)
    assert parse_retry_after(format_datetime(now, usegmt=True), now=now.timestamp() + 9) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    assert RetryPolicy(backoff_max_s=2.0).retry_after_s("60") == 2.0


def test_backoff_is_exponential_with_full_jitter() -> None:
    policy = RetryPolicy(max_retries=6, backoff_base_s=0.5, backoff_max_s=3.0)
    rng = random.Random(7)

    for retry, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (6, 3.0)]:
        waits = [policy.backoff_s(retry, rng) for _ in range(200)]
        assert all(0.0 <= w <= ceiling for w in waits)
        assert max(waits) > 0.8 * ceiling
        assert min(waits) < 0.2 * ceiling


def test_flaky_server_gives_four_good_answers_in_five(
    loopback_config: Config, loopback_key: str
) -> None:
    results = _complete_many(loopback_config, "fake", ["Case 3 MODE:flaky"] * 5, seed=None)

    assert sorted(r.text == VALID_JSON for r in results) == [False, True, True, True, True]
    assert all(r.error is None for r in results)


def test_openai_request_carries_prompts_sampling_seed_and_schema(
    loopback_config: Config, loopback_key: str, llm_server: LoopbackLLMServer
) -> None:
    schema: dict[str, object] = {"type": "object", "required": ["total_idr"]}

    _complete(
        loopback_config,
        "fake",
        "Invoice text",
        max_tokens=200,
        temperature=0.7,
        seed=42,
        response_format=ResponseFormat(schema),
    )

    (sent,) = llm_server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {loopback_key}"
    assert sent.body == {
        "model": "fake-model-2025-01-01",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Invoice text"},
        ],
        "max_tokens": 200,
        "temperature": 0.7,
        "seed": 42,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema},
        },
    }


def test_openai_request_omits_unset_sampling_fields(
    loopback_config: Config, loopback_key: str, llm_server: LoopbackLLMServer
) -> None:
    _complete(loopback_config, "fake", "hello")

    (sent,) = llm_server.requests
    assert set(sent.body) == {"model", "messages"}


def test_anthropic_request_uses_messages_api_headers_and_defaults(
    loopback_config: Config, loopback_key: str, llm_server: LoopbackLLMServer
) -> None:
    result = _complete(loopback_config, "fake-anthropic", "Invoice text", seed=5)

    (sent,) = llm_server.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == loopback_key
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.body == {
        "model": "claude-fake-2025-01-01",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Invoice text"}],
        "system": SYSTEM,
    }
    assert result.model == "claude-fake-2025-01-01"
    assert result.input_tokens is not None
    assert result.output_tokens == len(VALID_JSON.split())


def test_concurrent_requests_all_complete(
    loopback_config: Config, loopback_key: str, llm_server: LoopbackLLMServer
) -> None:
    llm_server.latency_ms = 50
    users = [f"Case {i} MODE:echo" for i in range(32)]

    results = _complete_many(loopback_config, "fake", users)

    assert [r.text for r in results] == [f"Case {i}" for i in range(32)]
    assert llm_server.count() == 32


@pytest.mark.parametrize("alias", ALIASES)
def test_the_key_is_redacted_from_an_error_body_that_echoes_it(
    loopback_config: Config, loopback_key: str, alias: str
) -> None:
    provider = make_provider(loopback_config.model(alias), loopback_config)

    result = _complete(loopback_config, alias, "MODE:500")

    assert result.error is not None and "request credentials: " in result.error
    assert "[redacted]" in result.error
    assert loopback_key not in result.error
    assert loopback_key not in repr(result)
    assert loopback_key not in repr(provider)


@pytest.mark.parametrize("alias", ALIASES)
def test_a_long_token_echoed_across_the_error_snippet_cut_leaves_no_part_of_it(
    loopback_config: Config, monkeypatch: pytest.MonkeyPatch, alias: str
) -> None:
    # OAuth access tokens used as bearer keys run to hundreds of characters: the echo of
    # one straddles the 300-character cut of the error body.
    token = "eyJhbGciOiJSUzI1NiJ9." + "".join(f"{i:04d}q" for i in range(120))
    monkeypatch.setenv("REDLINE_LOOPBACK_KEY", token)

    result = _complete(loopback_config, alias, "MODE:500")

    assert result.error is not None and "[redacted]" in result.error
    assert token[:24] not in result.error


def test_missing_key_is_a_config_error_before_any_request(
    loopback_config: Config, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REDLINE_LOOPBACK_KEY", raising=False)
    monkeypatch.setenv("SOME_OTHER_SECRET", "sk-other-value")

    with pytest.raises(ConfigError) as caught:
        make_provider(loopback_config.model("fake"), loopback_config)

    message = str(caught.value)
    assert "REDLINE_LOOPBACK_KEY" in message and "'fake'" in message
    assert "sk-other-value" not in message
    assert llm_server.count() == 0


def test_env_mapping_overrides_the_process_environment(
    loopback_config: Config, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REDLINE_LOOPBACK_KEY", raising=False)

    async def go() -> Completion:
        env = {"REDLINE_LOOPBACK_KEY": "sk-from-mapping"}
        provider = make_provider(loopback_config.model("fake"), loopback_config, env)
        try:
            return await provider.complete(ChatRequest(model="fake", system="", user="hi"))
        finally:
            await provider.aclose()

    assert asyncio.run(go()).error is None
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-from-mapping"


def test_every_provider_config_problem_is_reported_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config's problems all at load, at their lines; the environment's (a missing
    key) when the provider is built, before any request."""
    monkeypatch.delenv("VLLM_KEY", raising=False)
    path = tmp_path / "redline.toml"
    path.write_text(
        '[models]\nqwen = "vllm:qwen2.5-7b-instruct"\n\n'
        '[providers.vllm]\ntype = "openai"\napi_key_env = "VLLM_KEY"\nheaders = "x"\n',
        encoding="utf-8",
    )

    with pytest.raises(ConfigError) as caught:
        parse_config(path)

    lines = str(caught.value).splitlines()
    assert len(lines) == 2
    assert any("redline.toml:7:1:" in line and "unknown option 'headers'" in line for line in lines)
    assert any("redline.toml:4:1:" in line and "base_url is required" in line for line in lines)

    path.write_text(
        path.read_text(encoding="utf-8").replace('headers = "x"', 'base_url = "http://h:1/v1"'),
        encoding="utf-8",
    )
    config = parse_config(path)
    with pytest.raises(ConfigError, match="VLLM_KEY"):
        make_provider(config.model("qwen"), config)


def test_an_empty_key_variable_means_no_key_is_sent(
    llm_server: LoopbackLLMServer, tmp_path: Path
) -> None:
    config = _config(llm_server, tmp_path, key_env="")

    result = _complete(config, "fake", "hi")

    assert result.error is None
    assert "authorization" not in llm_server.requests[0].headers


def test_made_providers_satisfy_the_protocol(loopback_config: Config, loopback_key: str) -> None:
    provider = make_provider(loopback_config.model("fake"), loopback_config)

    assert isinstance(provider, Provider)
    assert provider.identity() == "loopback:fake-model-2025-01-01"
    assert provider.max_parallel is None


def test_one_provider_survives_successive_event_loops(
    loopback_config: Config, loopback_key: str, llm_server: LoopbackLLMServer
) -> None:
    provider = make_provider(loopback_config.model("fake"), loopback_config)
    request = ChatRequest(model="fake", system="", user="MODE:json")

    first = asyncio.run(provider.complete(request))
    second = asyncio.run(provider.complete(request))
    asyncio.run(provider.aclose())

    assert (first.error, second.error) == (None, None)
    assert llm_server.count() == 2
