"""Tool cases: what their checks and their loops cost, each beside its plain-text figure.

Run: uv run python bench/bench_tools.py [--outputs 20000] [--samples 400]

(1) Layer 1 throughput, one core, best of 3 (CPU time of this process): the explainer
    case 0201's full Layer 1 on plain-text outputs, beside the same case with the tool
    checks added (tool-called with an argument schema and a Python expression, tool-args-
    valid, tool-not-called, and the malformed-arguments check every call gets) on outputs
    that carry two tool calls each (one in ten with arguments that are not JSON). Target:
    within 10% of plain text.
(2) Per-sample CPU of a 3-step tool loop (four requests: three calls answered from the
    fixtures, then the answer) through `run_suites` against the loopback server in its own
    process, beside a one-request plain case, both at concurrency 16. The loop's figure is
    per sample, so about four requests' worth is expected.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench_layer1 import REPEATS, best_of, outputs, rate
from loopback import start_server
from redline.assertions import evaluate_sample
from redline.config import parse_config
from redline.running.options import RunOptions
from redline.running.runner import run_suites
from redline.running.store import RunStore
from redline.suite.cases import load_suite, load_suites
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.messages import Step, ToolCall, ToolResult

REPO = Path(__file__).resolve().parents[1]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "pattern": "^A-[0-9]+$"}},
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "issue_refund",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "amount_idr": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
                },
                "required": ["order_id", "amount_idr"],
            },
        },
    },
]
TOOL_ASSERTS = """\
  - type: tool-called
    value: issue_refund
    args: {properties: {amount_idr: {maximum: 185000}}}
    python: "args['order_id'].startswith('A-')"
  - {type: tool-args-valid}
  - {type: tool-not-called, value: cancel_order}
"""


def _tool_case(folder: Path) -> Path:
    """The explainer suite, its case 0201 with the tool checks added and the tools declared."""
    suite = folder / "explainer"
    shutil.copytree(REPO / "cases" / "explainer", suite)
    (suite / "tools.json").write_text(json.dumps(TOOLS), "utf-8")
    with (suite / "suite.yaml").open("a", encoding="utf-8") as fh:
        fh.write("\ntools: file://tools.json\n")
    case = suite / "0201-api-idempotency.yaml"
    case.write_text(case.read_text("utf-8").replace("assert:\n", "assert:\n" + TOOL_ASSERTS, 1))
    return suite


def _calls(i: int) -> tuple[ToolCall, ...]:
    amount = 1_850_000 if i % 10 == 3 else 185_000  # one in ten refunds ten times the price
    refund = json.dumps({"order_id": "A-1042", "amount_idr": amount, "reason": "damaged"})
    if i % 10 == 7:
        refund = refund[:-3]  # arguments that are not JSON: the sample is malformed
    return (
        ToolCall(f"call_{i}_0", "lookup_order", json.dumps({"order_id": "A-1042"})),
        ToolCall(f"call_{i}_1", "issue_refund", refund),
    )


def _loop_answer(i: int) -> Completion:
    """A stored tool-loop sample as the agent case sees it: two steps of calls (one in ten
    refunding ten times the price, one in ten with arguments that are not JSON), a reply."""
    lookup, refund = _calls(i)
    reply = (
        "I'm sorry about the mugs. I refunded Rp 185.000 (refund R-7731); it reaches your "
        "card in 3-5 working days."
    )
    steps = (
        Step("", FinishReason.TOOL_CALLS, (lookup,), (ToolResult(lookup.id, lookup.name, "{}"),)),
        Step("", FinishReason.TOOL_CALLS, (refund,), (ToolResult(refund.id, refund.name, "{}"),)),
        Step(reply, FinishReason.STOP),
    )
    return Completion(reply, FinishReason.STOP, output_tokens=40, steps=steps)


def layer1(count: int) -> float:
    plain_case = load_suite(REPO / "cases" / "explainer").case("0201-api-idempotency")
    agent_case = load_suite(REPO / "cases" / "refund-agent").case("0302-refund-ten-times-the-price")
    texts = outputs(count)
    plain = [Completion(text=t, finish_reason=FinishReason.STOP, output_tokens=256) for t in texts]
    loops = [_loop_answer(i) for i in range(count)]
    with tempfile.TemporaryDirectory() as tmp:
        both_case = load_suite(_tool_case(Path(tmp))).case("0201-api-idempotency")
    both = [
        dataclasses.replace(c, finish_reason=FinishReason.TOOL_CALLS, tool_calls=_calls(i))
        for i, c in enumerate(plain)
    ]
    plain_types = ", ".join(a.type_name for a in plain_case.assertions)
    agent_types = ", ".join(a.type_name for a in agent_case.assertions)
    print(f"(1) Layer 1, CPU of this process, one core, best of {REPEATS}; {count:,} outputs")
    print(f"    plain text: explainer 0201 ({plain_types})")
    print("      on ~1 KB outputs, one in ten a token loop")
    print(f"    tool case: refund-agent 0302 ({agent_types})")
    print("      on 3-step loop samples (two calls, a reply), one in ten over-refunding,")
    print("      one in ten with arguments that are not JSON")
    plain_s, plain_verdicts = best_of(
        REPEATS, lambda: [evaluate_sample(plain_case, c).verdict for c in plain]
    )
    agent_s, agent_verdicts = best_of(
        REPEATS, lambda: [evaluate_sample(agent_case, c).verdict for c in loops]
    )
    both_s, _ = best_of(REPEATS, lambda: [evaluate_sample(both_case, c).verdict for c in both])
    ratio = (count / agent_s) / (count / plain_s)
    print(f"    plain text:                 {rate(count, plain_s)}")
    print(f"    tool case:                  {rate(count, agent_s)}")
    print(
        f"    tool case / plain text throughput {ratio:.2f}x (target >= 0.90): "
        f"{'met' if ratio >= 0.90 else 'MISSED'}"
    )
    added = (both_s - plain_s) / count * 1e6
    print(
        "    the text case plus tool-called, tool-args-valid, tool-not-called on outputs "
        f"with two calls:\n                                {rate(count, both_s)}; "
        f"+{added:.1f} µs/output ({both_s / plain_s - 1:+.0%}) for the tool checks"
    )
    print(
        f"    (sanity: tool case {agent_verdicts.count('ok')} ok, "
        f"{agent_verdicts.count('wrong')} wrong, {agent_verdicts.count('malformed')} malformed; "
        f"plain {plain_verdicts.count('ok')} ok)"
    )
    return ratio


LOOP_CASE = """\
id: loop
provenance: {ticket: T-1, note: bench}
messages:
  - role: user
    content: >-
      Refund A-1 please. MODE:tool STEPS:3 CALL:lookup_order ARGS:{"order_id":"A-1"}
tool_results:
  - {tool: lookup_order, content: '{"status": "delivered", "paid_idr": 185000}'}
max_steps: 5
assert:
  - {type: tool-called, value: lookup_order, times: 3}
  - {type: tool-args-valid}
  - {type: contains, value: delivered}
"""
PLAIN_CASE = """\
id: plain
provenance: {ticket: T-1, note: bench}
messages: [{role: user, content: "MODE:json Invoice 1 from PT Sinar Jaya"}]
assert: [{type: is-json}, {type: contains, value: Sinar}]
"""


def loop_cpu(samples: int) -> tuple[float, float]:
    """(CPU s per sample of the loop case, of the plain case), each in a run of its own."""
    proc, url = start_server(latency_ms=5.0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "redline.toml").write_text(
                'concurrency = 16\n[models]\nfake = "loopback:fake-model-2025-01-01"\n'
                f'[providers.loopback]\ntype = "openai"\nbase_url = "{url}/v1"\n'
                'api_key_env = "BENCH_KEY"\ntimeout_s = 10\n',
                "utf-8",
            )
            os.environ["BENCH_KEY"] = "bench-key"
            config = parse_config(root / "redline.toml")
            figures = []
            for name, text in (("loop", LOOP_CASE), ("plain", PLAIN_CASE)):
                suite = root / name
                suite.mkdir()
                (suite / "system.txt").write_text("You are the refunds agent.", "utf-8")
                (suite / "tools.json").write_text(json.dumps(TOOLS), "utf-8")
                (suite / "suite.yaml").write_text(
                    f"name: {name}\nprompt: {{system: system.txt}}\nmodel: fake\n"
                    f"samples: {samples}\ntools: file://tools.json\n",
                    "utf-8",
                )
                (suite / f"{name}.yaml").write_text(text, "utf-8")
                suites = load_suites([suite], config)
                with RunStore.open(root / f"{name}.db") as store:
                    started = time.process_time()
                    record = run_suites(suites, config, store, RunOptions())
                    cpu = time.process_time() - started
                    sampled = store.samples(record.id)
                    assert all(s.verdict == "ok" for s in sampled), {s.verdict for s in sampled}
                    if name == "loop":
                        assert all(len(s.steps) == 4 for s in sampled)
                figures.append(cpu / samples)
            return figures[0], figures[1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--outputs", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=400)
    args = parser.parse_args()
    layer1(args.outputs)
    loop, plain = loop_cpu(args.samples)
    print(f"(2) run_suites against the loopback server, concurrency 16, {args.samples} samples")
    print(f"    3-step tool loop (4 requests): {loop * 1000:.2f} ms CPU per sample")
    print(f"    plain one-request case:        {plain * 1000:.2f} ms CPU per sample")
    print(f"    loop / plain {loop / plain:.2f}x (per request {loop / plain / 4:.2f}x)")


if __name__ == "__main__":
    main()
