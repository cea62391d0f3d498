"""A judged run rides one rate limit: the judge's calls go through the same limiter as the
run's model calls to that endpoint (its base URL and key), so their tokens count against
the same buckets and the run does not find the limit through 429s; `calibrate` paces its
judge calls by the same limiter."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from casefiles import slop_rubric
from ratelimit_server import RateLimitedServer
from redline.config import parse_config
from redline.judge.calibration import calibrate
from redline.judge.call import judge_provider
from redline.judge.labels import Label
from redline.judge.rubric import load_rubric
from redline.providers.base import ride_rate_limit
from redline.providers.ratelimit import endpoint_limiter
from redline.running.execution import rate_limiter
from redline.running.run_record import RATE_LIMIT_ARG
from redline.running.runner import RunOptions, run_suites
from redline.running.store import RunStore
from redline.suite.cases import load_suites
from redline.vocabulary.completion import ChatRequest

KEY_ENV = "REDLINE_RL_KEY"
MODEL = "fake-model-2025-01-01"
JUDGE = "judge-model-2025-01-01"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-rate-limit-test")


def _project(
    tmp_path: Path, server: RateLimitedServer, *, judge_table: str = "", cases: int = 5
) -> Path:
    """Model and judge on one endpoint; `judge_table` puts the judge on a provider entry
    of its own (same base URL and key) with those settings."""
    judge_provider_name = "judgeside" if judge_table else "limited"
    tmp_path.mkdir(exist_ok=True)
    provider = f'type = "openai"\nbase_url = "{server.url}/v1"\napi_key_env = "{KEY_ENV}"\n'
    (tmp_path / "redline.toml").write_text(
        "concurrency = 8\n"
        f'[models]\nfake = "limited:{MODEL}"\njudge = "{judge_provider_name}:{JUDGE}"\n'
        f"[providers.limited]\n{provider}timeout_s = 20\n"
        + (f"[providers.judgeside]\n{provider}{judge_table}" if judge_table else ""),
        encoding="utf-8",
    )
    suite = tmp_path / "cases" / "limited"
    (suite / "rubrics").mkdir(parents=True)
    (suite / "rubrics" / "slop.yaml").write_text(
        slop_rubric("judge") + "max_tokens: 200\n", encoding="utf-8"
    )
    (suite / "system.txt").write_text("Answer briefly.\n", encoding="utf-8")
    (suite / "suite.yaml").write_text(
        "name: limited\nprompt:\n  system: system.txt\n  user: 'Message: {{msg}}'\n"
        "model: fake\nsamples: 6\ntier: quality\nmax_tokens: 30\n",
        encoding="utf-8",
    )
    for n in range(cases):
        (suite / f"c{n:03d}.yaml").write_text(
            f"id: c{n:03d}\nprovenance: {{ticket: RL-{n}, reported: 2026-12-01, note: test}}\n"
            f"vars:\n  msg: 'where is my order {n}? it has been two weeks now'\n"
            "assert:\n  - type: contains\n    value: ok\n"
            "  - type: judge\n    rubric: rubrics/slop.yaml\n",
            encoding="utf-8",
        )
    return tmp_path / "redline.toml"


def _judged_run(config_path: Path) -> dict[str, object]:
    config = parse_config(config_path)
    suites = load_suites([config_path.parent / "cases" / "limited"], config)
    with RunStore.open(config.store_path) as store:
        record = run_suites(suites, config, store, RunOptions(judge=True))
    info = record.args[RATE_LIMIT_ARG]
    assert isinstance(info, dict)
    return info


#: Tokens are what binds: a judge call asks ~10× a model call's tokens.
_LIMITS = {"requests": 1e6, "tokens": 3000.0, "window_s": 1.0, "latency_ms": 20.0}


def test_a_judged_run_keeps_the_limit_its_judge_shares(tmp_path: Path) -> None:
    with RateLimitedServer(**_LIMITS) as apart:  # type: ignore[arg-type]
        # The judge on its own entry with adaptation off: its calls are not counted. It
        # retries its 429s for as long as it takes, so that every call is answered in the end.
        off = "adaptive_concurrency = false\nmax_retries = 30\nbackoff_max_s = 2\n"
        _judged_run(_project(tmp_path / "apart", apart, judge_table=off, cases=10))
    with RateLimitedServer(**_LIMITS) as shared:  # type: ignore[arg-type]
        info = _judged_run(_project(tmp_path / "shared", shared, cases=10))
    for server in (apart, shared):
        assert server.stats.answered_by_model == {MODEL: 60, JUDGE: 60}
        # The judge's calls are most of the tokens: the limit binds on them.
        tokens = server.stats.tokens_by_model
        assert tokens[JUDGE] > 4 * tokens[MODEL] and sum(tokens.values()) > 4 * _LIMITS["tokens"]
    assert apart.stats.throttled > 3  # what a run hits when its limiter does not count them
    requests = shared.stats.answered + shared.stats.throttled
    assert shared.stats.throttled <= 0.01 * requests
    assert info["waits"] > 0 and "tokens" in info["limits_per_min"]  # type: ignore[operator]


def test_one_limiter_per_endpoint_whoever_sends(tmp_path: Path) -> None:
    with RateLimitedServer(requests=1e6) as server:
        other = server.url.replace("127.0.0.1", "localhost")
        text = (
            f'[models]\nfake = "limited:{MODEL}"\njudge = "limited:{JUDGE}"\n'
            f'elsewhere = "other:{MODEL}"\n'
            f'[providers.limited]\ntype = "openai"\nbase_url = "{server.url}/v1"\n'
            f'api_key_env = "{KEY_ENV}"\n'
            f'[providers.other]\ntype = "openai"\nbase_url = "{other}/v1"\n'
            f'api_key_env = "{KEY_ENV}"\n'
        )
        (tmp_path / "redline.toml").write_text(text, encoding="utf-8")
        config = parse_config(tmp_path / "redline.toml")

        async def limiters() -> list[object]:
            run_side = judge_provider(config.model("fake"), config)
            judge_side = judge_provider(config.model("judge"), config)
            elsewhere = judge_provider(config.model("elsewhere"), config)
            ridden = ride_rate_limit(run_side, 8)
            await judge_side.complete(ChatRequest(model=JUDGE, system="", user="hi"))
            found = [ridden, rate_limiter(judge_side), ride_rate_limit(elsewhere, 8)]
            found.append(endpoint_limiter(f"{server.url}/v1/", "another key", 8, 8))
            for provider in (run_side, judge_side, elsewhere):
                await provider.aclose()
            return found

        ridden, judged, elsewhere, other_key = asyncio.run(limiters())
    assert judged is ridden  # the judge's request went through the run's limiter
    assert elsewhere is not ridden and other_key is not ridden


async def _calibrate(config_path: Path, labels: list[Label]) -> int:
    config = parse_config(config_path)
    rubric = load_rubric(config_path.parent / "cases" / "limited" / "rubrics" / "slop.yaml")
    model = config.model("judge")
    provider = judge_provider(model, config)
    try:
        result = await calibrate(rubric, labels, provider, model, concurrency=8)
    finally:
        await provider.aclose()
    return result.calibration.n


def test_calibrate_paces_its_judge_calls_by_the_endpoint_limit(tmp_path: Path) -> None:
    """`redline calibrate` sends every labelled output to the judge at its concurrency: once
    the first answers tell the limit, it is kept by pacing, not found through 429s."""
    labels = [
        Label(f"s{i}", f"Output {i}, straight to the point.", i % 2 == 0, "qa", "2026-12-01")
        for i in range(40)
    ]
    servers = {}
    for name, table in (("fixed", "adaptive_concurrency = false\n"), ("paced", "")):
        with RateLimitedServer(**_LIMITS) as server:  # type: ignore[arg-type]
            path = _project(tmp_path / name, server, judge_table=table)
            assert asyncio.run(_calibrate(path, labels)) == len(labels)
        servers[name] = server.stats
    fixed, paced = servers["fixed"], servers["paced"]
    assert fixed.answered == paced.answered == len(labels)
    assert fixed.throttled > 3 * max(1, paced.throttled)
    # What 429s the paced calls met, they met in the first burst, before any answer had
    # told the limiter where the limit is.
    first_answer = min(t for t, status, _ in paced.arrivals if status == 200)
    latency = _LIMITS["latency_ms"] / 1000
    assert all(t < first_answer + latency for t, status, _ in paced.arrivals if status == 429)
