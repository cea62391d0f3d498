"""Stopping a sample once its verdict is settled: which partial outputs settle, how a
streamed generation is read and stopped, and what the stored sample says about it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from casefiles import case_with, done, write_suite
from redline.assertions import evaluate_sample, settled_failure
from redline.config import parse_config
from redline.errors import ConfigError
from redline.providers.http_provider import Answer
from redline.providers.local_stream import ChunkStream
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.verdicts import Verdict

REPLY = (
    "Thanks for writing, and sorry the parcel was late. The express fee of Rp 35.000 "
    "goes back to your card within five working days; you will get an email when the "
    "refund is on its way. If anything else went wrong with order A-55120, just reply "
    "here and we will sort it out."
)


def _cut(text: str, tokens: int | None = None) -> Completion:
    return done(
        text, output_tokens=tokens, latency_ms=5.0, cost=0.0, finish_reason=FinishReason.LENGTH
    )


def test_prose_before_the_json_settles_at_once_naming_the_check(tmp_path: Path) -> None:
    case = case_with(tmp_path, "- type: is-json\n- type: not-contains\n  value: Here is\n")
    failure = settled_failure(case)
    assert failure is not None

    assert failure(_cut("")) is None
    assert failure(_cut('{"total": 12')) is None  # JSON still being written
    assert failure(_cut("```json\n{")) is not None
    reason = failure(_cut("Sure! The total"))
    assert reason is not None and reason.startswith("is-json: not JSON")

    # The verdict of the output cut there is the settled one, not `truncated`.
    stopped = evaluate_sample(case, _cut("Sure! The total"))
    assert stopped.settled and stopped.verdict is Verdict.MALFORMED


def test_a_banned_phrase_or_a_spent_budget_settles_the_verdict(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        """\
        - type: not-contains
          value: valued customer
        - type: max-words
          value: 12
        - type: contains
          value: refund
        """,
    )
    failure = settled_failure(case)
    assert failure is not None
    assert failure(_cut("Sorry about the delay")) is None
    reason = failure(_cut("Dear valued customer, we"))
    assert reason == "not-contains 'valued customer': contains 'valued customer' at character 5"
    over = failure(_cut("one two three four five six seven eight nine ten eleven twelve 13"))
    assert over is not None and over.startswith("max-words 12: 13 words (max 12)")
    # The missing `contains` might still come: the verdict is `wrong` on the banned phrase.
    assert evaluate_sample(case, _cut("Dear valued customer, we")).verdict is Verdict.WRONG


def test_a_passing_reply_is_never_settled_at_any_point_of_its_writing(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        """\
        - type: compression-ratio
          value: 0.35
        - type: distinct-n
          value: 0.70
          n: 3
        - type: max-words
          value: 150
        - type: max-chars
          value: 1000
        - type: not-contains
          value: As an AI
        - type: max-tokens
          value: 200
        """,
    )
    failure = settled_failure(case)
    assert failure is not None
    assert evaluate_sample(case, done(REPLY, output_tokens=70)).verdict is Verdict.OK
    for end in range(1, len(REPLY) + 1):
        assert failure(_cut(REPLY[:end], tokens=end // 4)) is None, REPLY[:end]


def test_a_token_loop_settles_once_it_shows(tmp_path: Path) -> None:
    case = case_with(tmp_path, "- type: compression-ratio\n  value: 0.35\n")
    failure = settled_failure(case)
    assert failure is not None
    loop = "Idempotency means safe retries. " * 12
    reason = failure(_cut(loop))
    assert reason is not None and "repetitive" in reason


def test_a_case_with_no_check_that_can_settle_has_nothing_to_ask(tmp_path: Path) -> None:
    case = case_with(tmp_path, "- type: python\n  value: len(output) > 3\n")
    assert settled_failure(case) is None


def _chunk(content: str | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    delta = {} if content is None else {"content": content}
    return {
        "choices": [{"index": 0, "finish_reason": finish, "delta": delta}],
        "model": "model.gguf",
        **extra,
    }


def _timings(generated: int, read: int = 30, cached: int = 10) -> dict[str, int]:
    return {"prompt_n": read, "cache_n": cached, "predicted_n": generated}


def _as_completion(answer: Answer) -> Completion:
    return Completion(
        text=answer.text,
        finish_reason=answer.finish_reason,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
    )


def test_a_finished_stream_keeps_its_text_finish_reason_and_reported_usage() -> None:
    stream = ChunkStream(None, _as_completion)
    assert not stream(
        {
            "choices": [
                {"index": 0, "finish_reason": None, "delta": {"role": "assistant", "content": None}}
            ]
        }
    )
    for i, piece in enumerate(["Par", "is", "."], start=1):
        assert not stream(_chunk(piece, timings=_timings(i)))
    assert not stream(_chunk(finish="stop", timings=_timings(3)))
    assert not stream({"choices": [], "usage": {"prompt_tokens": 41, "completion_tokens": 3}})

    answer = stream.answer()
    assert (answer.text, answer.finish_reason) == ("Paris.", FinishReason.STOP)
    assert (answer.input_tokens, answer.output_tokens) == (41, 3)
    assert stream.stopped is None and stream.error is None


def test_without_usage_the_counts_come_from_the_timings_or_the_chunks() -> None:
    timed = ChunkStream(None, _as_completion)
    for i in range(1, 6):
        timed(_chunk("ab", timings=_timings(i, read=7, cached=20)))
    timed(_chunk(finish="length", timings=_timings(5, read=7, cached=20)))
    assert (timed.answer().input_tokens, timed.answer().output_tokens) == (27, 5)

    bare = ChunkStream(None, _as_completion)
    for _ in range(4):
        bare(_chunk("ab"))
    bare(_chunk(finish="length"))
    answer = bare.answer()
    assert (answer.input_tokens, answer.output_tokens) == (None, 4)
    assert answer.finish_reason is FinishReason.LENGTH


def test_a_stream_is_looked_at_after_1_2_4_8_tokens_then_every_8_and_stops_when_settled() -> None:
    seen: list[tuple[str, FinishReason | None, int | None]] = []

    def settled(partial: Completion) -> str | None:
        seen.append((partial.text, partial.finish_reason, partial.output_tokens))
        return "is-json: not JSON" if (partial.output_tokens or 0) >= 24 else None

    stream = ChunkStream(settled, _as_completion)
    stopped_at = None
    for i in range(1, 60):
        if stream(_chunk("x", timings=_timings(i))):
            stopped_at = i
            break
    assert [tokens for _, _, tokens in seen] == [1, 2, 4, 8, 16, 24]
    assert all(reason is FinishReason.LENGTH for _, reason, _ in seen)
    assert stopped_at == 24 and stream.stopped == "is-json: not JSON"
    answer = stream.answer()
    assert (answer.text, answer.finish_reason, answer.output_tokens) == (
        "x" * 24,
        FinishReason.LENGTH,
        24,
    )


def test_a_stream_that_could_still_pass_is_never_stopped() -> None:
    stream = ChunkStream(lambda partial: None, _as_completion)
    assert not any(stream(_chunk("y", timings=_timings(i))) for i in range(1, 40))
    stream(_chunk(finish="stop", timings=_timings(39)))
    assert stream.stopped is None and stream.answer().finish_reason is FinishReason.STOP


def test_an_error_chunk_ends_the_stream_as_the_samples_error() -> None:
    stream = ChunkStream(None, _as_completion)
    assert stream({"error": {"code": 400, "message": "max_tokens out of range"}})
    assert stream.error == "max_tokens out of range"
    broken = ChunkStream(None, _as_completion)
    assert broken(["not", "a", "chunk"])
    assert broken.error is not None


@pytest.mark.parametrize(
    ("written", "expected"), [("", True), ("stop_when_settled = false\n", False)]
)
def test_stopping_is_on_unless_the_config_turns_it_off(
    tmp_path: Path, written: str, expected: bool
) -> None:
    path = tmp_path / "redline.toml"
    path.write_text(written + '[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n')
    assert parse_config(path).stop_when_settled is expected


def test_a_stop_setting_that_is_not_true_or_false_is_a_config_error_at_its_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "redline.toml"
    path.write_text('concurrency = 2\nstop_when_settled = "no"\n')
    with pytest.raises(ConfigError, match=r"redline.toml:2:.*stop_when_settled.*true or false"):
        parse_config(path)


_HEAD = "provenance: {ticket: T-1, reported: 2026-01-02, note: stop}\n"


def _project(root: Path, *, stop: bool) -> None:
    setting = "" if stop else "stop_when_settled = false\n"
    (root / "redline.toml").write_text(
        f'{setting}[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n'
        "[providers.local]\nthreads = 2\n",
        encoding="utf-8",
    )
    write_suite(
        root,
        {
            "poem.yaml": f"id: poem\n{_HEAD}vars:\n  q: Write a poem about the sea.\n"
            "assert:\n  - type: is-json\n",
            "capital.yaml": f"id: capital\n{_HEAD}vars:\n  q: What is the capital of France?\n"
            "assert:\n  - type: max-chars\n    value: 2000\n  - type: not-contains\n"
            "    value: zqzqzq\n  - type: compression-ratio\n    value: 0.05\n",
        },
        suite_yaml="name: demo\nprompt:\n  system: system.txt\n  user: '{{q}}'\n"
        "model: local\nsamples: 2\ntier: quality\nmax_tokens: 40\nseed: 11\n",
        system="You are a poet. Answer in verse.\n",
    )


@pytest.mark.slow
def test_real_model_stops_prose_before_json_early_and_keeps_its_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from redline.cli import main
    from redline.running.store import RunStore

    monkeypatch.chdir(tmp_path)
    _project(tmp_path, stop=False)
    assert main(["run", "demo", "--quiet"]) in (0, 1, 3)
    _project(tmp_path, stop=True)
    assert main(["run", "demo", "--quiet"]) in (0, 1, 3)
    capsys.readouterr()
    with RunStore.open(tmp_path / ".redline" / "redline.db") as store:
        full_run, stopped_run = sorted(store.runs(), key=lambda r: r.started_at)
        full = {(s.case_id, s.index): s for s in store.samples(full_run.id)}
        cut = {(s.case_id, s.index): s for s in store.samples(stopped_run.id)}

    for index in (0, 1):
        whole, early = full["poem", index], cut["poem", index]
        assert whole.stopped_early is None and whole.verdict is Verdict.MALFORMED
        assert whole.output_tokens == 40 or whole.finish_reason is FinishReason.STOP
        # Stopped after a few tokens, the reason recorded, the verdict the same.
        assert early.seed == whole.seed and early.verdict is Verdict.MALFORMED
        assert early.stopped_early is not None and early.stopped_early.startswith("is-json")
        assert early.finish_reason is FinishReason.LENGTH
        assert early.output_tokens is not None and early.output_tokens <= 8
        assert early.input_tokens == whole.input_tokens
        assert whole.output.startswith(early.output) and len(early.output) < len(whole.output)
        # A sample that can still pass is never stopped: it is generated as with the option
        # off (it was looked at several times on the way) and keeps that verdict.
        passing, unchecked = cut["capital", index], full["capital", index]
        assert passing.stopped_early is None and (passing.output_tokens or 0) > 8
        assert passing.output == unchecked.output and passing.verdict is unchecked.verdict
        assert passing.verdict in (Verdict.OK, Verdict.TRUNCATED)

    assert main(["show", stopped_run.id, "poem"]) == 0
    shown = capsys.readouterr().out
    assert shown.count("stopped early: redline ended the generation after") == 2
    assert main(["show", full_run.id, "poem"]) == 0
    assert "stopped early" not in capsys.readouterr().out


def test_the_html_report_says_which_samples_redline_stopped_and_why(tmp_path: Path) -> None:
    from redline.report import build_run_report
    from redline.report.html import html_report
    from runfactory import MALFORMED, CaseSpec, RunSpec, open_store, write_run

    why = "is-json: not JSON (Expecting value at line 1 column 1); output starts '<b>Sure'"
    spec = CaseSpec("c", [MALFORMED, MALFORMED], output_tokens=4, stopped_early=[why, None])
    with open_store(tmp_path) as store:
        write_run(store, RunSpec("s", [spec]))
        page = html_report(build_run_report(store, "s"))
    assert page.count("stopped early: redline ended the generation after 4 tokens") == 1
    assert "output starts &#x27;&lt;b&gt;Sure" in page and "<b>Sure" not in page
