"""Riding a provider's rate limit, against loopback servers that enforce one: concurrency
grows while the headers show room (never above max_concurrency), a 429 backs off and its
Retry-After is honoured by every request, a tokens limit is kept by pacing, both header
formats are read, garbled or missing headers change nothing, and the run says what
happened."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ratelimit_server import RateLimitedServer
from redline.cli import main
from redline.config import parse_config
from redline.providers.ratelimit import parse_reset, rate_limit_note, read_limits
from redline.running.run_record import RATE_LIMIT_ARG
from redline.running.runner import RunOptions, run_suites
from redline.running.store import RunStore
from redline.suite.cases import load_suites
from redline.vocabulary.records import RunRecord
from redline.vocabulary.verdicts import Verdict

KEY_ENV = "REDLINE_RL_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-rate-limit-test")


def _project(
    tmp_path: Path,
    server: RateLimitedServer,
    *,
    api: str = "openai",
    cases: int = 10,
    samples: int = 10,
    concurrency: int = 4,
    provider: str = "",
) -> Path:
    base = f"{server.url}/v1" if api == "openai" else server.url
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "redline.toml").write_text(
        f"concurrency = {concurrency}\n"
        '[models]\nfake = "limited:fake-model-2025-01-01"\n'
        f'[providers.limited]\ntype = "{api}"\nbase_url = "{base}"\n'
        f'api_key_env = "{KEY_ENV}"\ntimeout_s = 20\n{provider}',
        encoding="utf-8",
    )
    suite = tmp_path / "cases" / "limited"
    suite.mkdir(parents=True)
    (suite / "system.txt").write_text("Answer briefly.\n", encoding="utf-8")
    (suite / "suite.yaml").write_text(
        "name: limited\nprompt:\n  system: system.txt\n  user: 'Message: {{msg}}'\n"
        f"model: fake\nsamples: {samples}\ntier: quality\nmax_tokens: 30\n",
        encoding="utf-8",
    )
    for n in range(cases):
        (suite / f"c{n:03d}.yaml").write_text(
            f"id: c{n:03d}\nprovenance: {{ticket: RL-{n}, reported: 2026-12-01, note: test}}\n"
            f"vars:\n  msg: 'where is my order {n}? it has been two weeks now'\n"
            "assert:\n  - type: contains\n    value: ok\n",
            encoding="utf-8",
        )
    return tmp_path / "redline.toml"


def _run(config_path: Path) -> tuple[RunRecord, RunStore]:
    config = parse_config(config_path)
    suites = load_suites([config_path.parent / "cases" / "limited"], config)
    store = RunStore.open(config.store_path)
    return run_suites(suites, config, store, RunOptions()), store


def _verdicts(store: RunStore, record: RunRecord) -> dict[Verdict, int]:
    counts: dict[Verdict, int] = {}
    for sample in store.samples(record.id):
        counts[sample.verdict] = counts.get(sample.verdict, 0) + 1
    return counts


# -- reading the headers --------------------------------------------------------------


def test_reset_durations_and_times_are_read_in_every_format_the_apis_send() -> None:
    assert parse_reset("1s") == 1.0
    assert parse_reset("6m0s") == 360.0
    assert parse_reset("20ms") == pytest.approx(0.02)
    assert parse_reset("1h2m3.5s") == pytest.approx(3723.5)
    assert parse_reset("0.5") == 0.5
    now = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    later = (now + timedelta(seconds=7)).isoformat().replace("+00:00", "Z")
    assert parse_reset(later, now=now.timestamp()) == pytest.approx(7.0)
    for garbled in ("soon", "", "5 parsecs", "1s2", "2026-13-45T00:00:00Z", "-3"):
        assert parse_reset(garbled) in (None, 0.0), garbled
    assert parse_reset("soon") is None and parse_reset(None) is None


def test_both_header_formats_are_read_and_garbled_limits_are_left_out() -> None:
    openai = read_limits(
        {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "499",
            "x-ratelimit-reset-requests": "120ms",
            "x-ratelimit-limit-tokens": "lots",
            "x-ratelimit-remaining-tokens": "1000",
        }
    )
    assert [(r.name, r.limit, r.remaining, r.reset_s) for r in openai] == [
        ("requests", 500, 499, pytest.approx(0.12))
    ]
    anthropic = read_limits(
        {
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "49",
            "anthropic-ratelimit-requests-reset": "2026-12-01T12:00:01Z",
            "anthropic-ratelimit-input-tokens-limit": "20000",
            "anthropic-ratelimit-input-tokens-remaining": "19000",
            "anthropic-ratelimit-output-tokens-limit": "4000",
            "anthropic-ratelimit-output-tokens-remaining": "-1",
            "anthropic-ratelimit-tokens-limit": "20000",
            "anthropic-ratelimit-tokens-remaining": "19000",
        }
    )
    # `tokens` repeats the tightest of input/output; a negative remaining is garbled.
    assert sorted(r.name for r in anthropic) == ["input-tokens", "requests"]
    assert read_limits({"x-ratelimit-limit-requests": "0", "retry-after": "1"}) == []


# -- riding the limit -----------------------------------------------------------------


def test_headroom_grows_concurrency_up_to_the_maximum_and_never_above(tmp_path: Path) -> None:
    with RateLimitedServer(requests=1e7, tokens=1e9, latency_ms=30) as server:
        path = _project(tmp_path, server, cases=20, samples=20, provider="max_concurrency = 12\n")
        record, store = _run(path)
    info = record.args[RATE_LIMIT_ARG]
    assert _verdicts(store, record) == {Verdict.OK: 400}
    assert server.stats.most_in_flight <= 12  # counted by the server
    assert server.stats.most_in_flight > 4  # it grew from the configured 4
    assert (info["start"], info["maximum"]) == (4, 12)
    assert info["limits_per_min"] == {}  # a generous limit is never drawn on
    assert 4 < info["peak"] <= 12
    assert server.stats.throttled == 0


def test_a_429_halves_concurrency_and_every_request_waits_out_its_retry_after(
    tmp_path: Path,
) -> None:
    # No rate-limit headers: the only signal is the 429 and its Retry-After.
    with RateLimitedServer(requests=6, window_s=1.0, latency_ms=10, headers=False) as server:
        path = _project(tmp_path, server, cases=4, samples=5, concurrency=8)
        record, store = _run(path)
    assert _verdicts(store, record) == {Verdict.OK: 20}  # a 429 is never a model failure
    info = record.args[RATE_LIMIT_ARG]
    assert info["throttled"] >= 1
    assert info["lowest"] < 8
    arrivals = server.stats.arrivals
    first = next(i for i, a in enumerate(arrivals) if a[1] == 429)
    t0, _, told = arrivals[first]
    assert told is not None and told > 0.05
    # Requests already on the wire when the 429 was sent may still arrive; after a few
    # milliseconds nothing does until the pause is over.
    early = [t for t, _, _ in arrivals[first + 1 :] if t0 + 0.02 < t < t0 + told - 0.02]
    assert early == []


def test_a_tokens_limit_is_kept_by_pacing_where_fixed_concurrency_hits_it(
    tmp_path: Path,
) -> None:
    # Requests are plentiful; tokens are not: ~13 input + 30 output tokens a request.
    limits = {"requests": 1e6, "tokens": 500.0, "window_s": 1.0, "latency_ms": 20.0}
    with RateLimitedServer(**limits) as fixed_server:  # type: ignore[arg-type]
        fixed_path = _project(
            tmp_path / "fixed",
            fixed_server,
            cases=4,
            samples=10,
            concurrency=8,
            provider="adaptive_concurrency = false\n",
        )
        _run(fixed_path)
    with RateLimitedServer(**limits) as server:  # type: ignore[arg-type]
        path = _project(tmp_path / "adaptive", server, cases=4, samples=10, concurrency=8)
        record, store = _run(path)
    assert fixed_server.stats.throttled > 2  # the limit binds: concurrency alone hits it
    assert server.stats.throttled <= 1
    assert _verdicts(store, record) == {Verdict.OK: 40}
    info = record.args[RATE_LIMIT_ARG]
    assert info["waits"] > 0
    assert set(info["limits_per_min"]) == {"tokens"}  # the one limit it drew on


def test_anthropic_input_and_output_token_limits_are_paced(tmp_path: Path) -> None:
    with RateLimitedServer(
        requests=1e6, tokens=400, output_tokens=900, window_s=1.0, latency_ms=20
    ) as server:
        path = _project(tmp_path, server, api="anthropic", cases=4, samples=10, concurrency=8)
        record, store = _run(path)
    assert server.stats.throttled <= 1
    assert _verdicts(store, record) == {Verdict.OK: 40}
    limits = record.args[RATE_LIMIT_ARG]["limits_per_min"]
    assert "input-tokens" in limits and "requests" not in limits
    assert 400 * 60 * 0.8 < limits["input-tokens"] < 400 * 60 * 1.25  # read from the resets


def test_garbled_headers_change_nothing(tmp_path: Path) -> None:
    with RateLimitedServer(requests=1e7, tokens=1e9, latency_ms=10, garbled=True) as server:
        path = _project(tmp_path, server, cases=10, samples=10, concurrency=4)
        record, store = _run(path)
    assert _verdicts(store, record) == {Verdict.OK: 100}
    assert server.stats.most_in_flight <= 4
    assert RATE_LIMIT_ARG not in record.args  # nothing happened worth keeping


def test_without_headers_or_429s_a_run_is_as_today(tmp_path: Path) -> None:
    with RateLimitedServer(requests=1e7, latency_ms=10, headers=False) as server:
        path = _project(tmp_path, server, cases=10, samples=10, concurrency=6)
        record, store = _run(path)
    assert _verdicts(store, record) == {Verdict.OK: 100}
    assert server.stats.most_in_flight == 6
    assert RATE_LIMIT_ARG not in record.args


def test_adaptation_off_keeps_the_configured_concurrency(tmp_path: Path) -> None:
    with RateLimitedServer(requests=1e7, tokens=1e9, latency_ms=10) as server:
        path = _project(
            tmp_path,
            server,
            cases=10,
            samples=10,
            concurrency=3,
            provider="adaptive_concurrency = false\n",
        )
        record, _ = _run(path)
    assert server.stats.most_in_flight == 3
    assert RATE_LIMIT_ARG not in record.args


def test_retries_on_429_are_bounded_and_end_as_transport_not_as_wrong(tmp_path: Path) -> None:
    # One request per 1,000 s: every later one is refused (with a Retry-After only).
    with RateLimitedServer(requests=1, window_s=1000, latency_ms=1, headers=False) as server:
        path = _project(
            tmp_path,
            server,
            cases=1,
            samples=3,
            concurrency=1,
            provider="max_retries = 2\nbackoff_max_s = 0.05\n",
        )
        record, store = _run(path)
    assert _verdicts(store, record) == {Verdict.OK: 1, Verdict.TRANSPORT: 2}
    failed = [s for s in store.samples(record.id) if s.verdict is Verdict.TRANSPORT]
    assert all("429" in (s.error or "") and "3 attempts" in (s.error or "") for s in failed)
    assert server.stats.throttled == 6  # two samples × three attempts


def test_the_run_summary_and_the_stored_run_say_what_happened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with RateLimitedServer(requests=20, tokens=1e9, window_s=1.0, latency_ms=20) as server:
        path = _project(tmp_path, server, cases=4, samples=10, concurrency=2)
        monkeypatch.chdir(tmp_path)
        code = main(["run"])
    out = capsys.readouterr().out
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("rate limit:"))
    assert "wait" in line and "concurrency 2" in line and "requests/min" in line
    store = RunStore.open(parse_config(path).store_path)
    record = store.runs()[0]
    assert rate_limit_note(record.args[RATE_LIMIT_ARG]) == line
