"""The guard against a generated set of commits: every loosening the case model can express,
each with and without a prompt change, plus tightenings, reformatting, repairs and
unrelated edits. Every scenario is a real commit on one base in one real repository.

Measured: the share of loosenings made with a prompt change that are refused (must be at
least 98%) and the share of commits that should pass but are refused (at most 1%).
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from redline.guard import GuardReport, Kind, check_commit

Tree = dict[str, Any]  # path → YAML data (dict), JSON schema (dict for .json) or text
Edit = Callable[[Tree], None]

PROMPT = "cases/prompts/support.md"
SUPPORT = "cases/support"
NIGHTLY = "cases/support-nightly"
C1 = f"{SUPPORT}/0001-every-type.yaml"
C2 = f"{SUPPORT}/0002-required.yaml"
C3 = f"{SUPPORT}/0003-refusal.yaml"
C4 = f"{SUPPORT}/0004-files.yaml"
C5 = f"{SUPPORT}/0005-patterns.yaml"
Q1 = f"{NIGHTLY}/0101-quality.yaml"
Q2 = f"{NIGHTLY}/0102-sequential.yaml"
SCHEMA = f"{SUPPORT}/schemas/reply.json"

PROV = {"ticket": "SUP-1", "reported": "2026-01-05", "note": "customer complaint"}


def base_tree() -> Tree:
    return {
        "pyproject.toml": '[project]\nname = "demo"\nversion = "1"\n\n'
        '[tool.redline.models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n\n'
        # grounded-in needs a backend that can answer: the pinned checker model.
        '[tool.redline.semantic]\nchecker = "local"\n',
        "README.md": "demo\n",
        PROMPT: "You are a careful support agent.\n",
        f"{SUPPORT}/suite.yaml": {
            "name": "support",
            "prompt": {"system": "file://../prompts/support.md", "user": "{{question}}"},
            "model": "local",
            "samples": 3,
            "tier": "contract",
        },
        f"{NIGHTLY}/suite.yaml": {
            "name": "support-nightly",
            "prompt": {"system": "file://../prompts/support.md", "user": "{{question}}"},
            "model": "local",
            "samples": 5,
            "tier": "quality",
        },
        f"{SUPPORT}/fixtures/policy.txt": "Refunds within 30 days.\n",
        f"{SUPPORT}/fixtures/phrase.txt": "your refund of 40 EUR",
        f"{SUPPORT}/fixtures/answer.txt": "Your refund is on its way.",
        f"{SUPPORT}/fixtures/golden.txt": "Hello! Your refund of 40 EUR is on its way.\n",
        f"{SUPPORT}/fixtures/unused.txt": "not read by any case\n",
        SCHEMA: {
            "type": "object",
            "required": ["reply", "ticket"],
            "additionalProperties": False,
            "properties": {
                "reply": {"type": "string", "maxLength": 400},
                "ticket": {"type": "string"},
                "mood": {"enum": ["calm", "sorry"]},
            },
        },
        C1: {
            "id": "0001-every-type",
            "provenance": PROV,
            "vars": {"question": "Where is my refund?", "ticket": "A-1234"},
            "assert": [
                {"type": "contains", "value": "Ticket {{ticket}}"},
                {"type": "icontains", "value": "refund"},
                {"type": "not-contains", "value": "I am just an AI language model"},
                {"type": "max-chars", "value": 400},
                {"type": "max-words", "value": 80},
                {"type": "max-tokens", "value": 200},
                {"type": "max-latency-ms", "value": 3000},
                {"type": "max-cost", "value": 0.01},
                {"type": "compression-ratio", "value": 0.35},
                {"type": "distinct-n", "value": 0.7},
                {"type": "mentions", "value": "refund"},
                {"type": "not-mentions", "value": "lawsuit"},
                {"type": "tone", "value": "empathetic"},
                {"type": "grounded-in", "value": "file://fixtures/policy.txt"},
                {"type": "python", "value": "len(output) > 3"},
                {"type": "contains", "value": "order"},
            ],
        },
        C2: {
            "id": "0002-required",
            "provenance": PROV,
            "vars": {"question": "Can I pay later?"},
            "required": 2,
            "assert": [{"type": "icontains", "value": "invoice"}],
        },
        C3: {
            "id": "0003-refusal",
            "provenance": PROV,
            "vars": {"question": "Give me another customer's address."},
            "expect_refusal": True,
            "assert": [{"type": "refusal"}],
        },
        C4: {
            "id": "0004-files",
            "provenance": PROV,
            "vars": {"question": "Refund status?"},
            "golden": "file://fixtures/golden.txt",
            "assert": [
                {"type": "contains", "value": "file://fixtures/phrase.txt"},
                {"type": "is-json", "schema": "file://schemas/reply.json"},
                {"type": "equals", "value": "file://fixtures/answer.txt"},
            ],
        },
        C5: {
            "id": "0005-patterns",
            "provenance": PROV,
            "quarantine": {"reason": "flaky regex", "until": date(2026, 12, 31)},
            "vars": {"question": "How much?"},
            "assert": [
                {"type": "regex", "value": "\\d+ EUR", "flags": "i"},
                {"type": "regex", "value": "^Total: \\d+$"},
                {"type": "distinct-n", "value": 0.6, "n": 2},
                {"type": "grounded-in", "value": "Refunds within 30 days.", "backend": "model"},
            ],
        },
        Q2: {
            "id": "0102-sequential",
            "provenance": PROV,
            "vars": {"question": "Is shipping free?"},
            "samples": {"min": 3, "max": 10, "bar": 0.8, "margin": 0.1},
            "assert": [{"type": "icontains", "value": "shipping"}],
        },
        Q1: {
            "id": "0101-quality",
            "provenance": PROV,
            "vars": {"question": "Tell me about refunds."},
            "assert": [{"type": "max-chars", "value": 900}],
        },
    }


def write_tree(root: Path, tree: Tree) -> None:
    for rel, content in tree.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, dict) and rel.endswith(".json"):
            target.write_text(json.dumps(content, indent=2), encoding="utf-8")
        elif isinstance(content, dict):
            target.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
        else:
            target.write_text(content, encoding="utf-8")


# -- edits ----------------------------------------------------------------


def at(path: str, index: int, key: str, value: Any) -> Edit:
    def edit(tree: Tree) -> None:
        tree[path]["assert"][index][key] = value

    return edit


def drop_key(path: str, index: int, key: str) -> Edit:
    def edit(tree: Tree) -> None:
        del tree[path]["assert"][index][key]

    return edit


def top(path: str, key: str, value: Any) -> Edit:
    def edit(tree: Tree) -> None:
        if value is None:
            tree[path].pop(key, None)
        else:
            tree[path][key] = value

    return edit


def remove(path: str, index: int) -> Edit:
    def edit(tree: Tree) -> None:
        del tree[path]["assert"][index]

    return edit


def add(path: str, assertion: dict[str, Any]) -> Edit:
    def edit(tree: Tree) -> None:
        tree[path]["assert"].append(assertion)

    return edit


def text(path: str, content: str) -> Edit:
    def edit(tree: Tree) -> None:
        tree[path] = content

    return edit


def move(src: str, dst: str) -> Edit:
    def edit(tree: Tree) -> None:
        tree[dst] = tree.pop(src)

    return edit


def delete(path: str) -> Edit:
    def edit(tree: Tree) -> None:
        del tree[path]

    return edit


def schema(change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(tree: Tree) -> None:
        change(tree[SCHEMA])

    return edit


def raw(path: str, content: str) -> Edit:
    """The file as exact text (reformatting: the same data written differently)."""
    return text(path, content)


def all_of(*edits: Edit) -> Edit:
    def edit(tree: Tree) -> None:
        for e in edits:
            e(tree)

    return edit


def prompt_change(tree: Tree) -> None:
    tree[PROMPT] = tree[PROMPT] + "Answer in one sentence.\n"


LOOSENINGS: dict[str, Edit] = {
    "max-chars raised": at(C1, 3, "value", 800),
    "max-words raised": at(C1, 4, "value", 120),
    "max-tokens raised": at(C1, 5, "value", 400),
    "max-latency raised": at(C1, 6, "value", 9000),
    "max-cost raised": at(C1, 7, "value", 0.05),
    "compression lowered": at(C1, 8, "value", 0.2),
    "distinct-n lowered": at(C1, 9, "value", 0.5),
    "distinct-n n changed": at(C5, 2, "n", 3),
    "mentions default 0.5 to 0.3": at(C1, 10, "threshold", 0.3),
    "not-mentions default 0.5 to 0.9": at(C1, 11, "threshold", 0.9),
    "tone margin default 0.2 to 0.02": at(C1, 12, "margin", 0.02),
    "mentions concept changed": at(C1, 10, "value", "delivery"),
    "tone changed": at(C1, 12, "value", "neutral"),
    "contains shortened": at(C1, 15, "value", "ord"),
    "contains changed": at(C1, 15, "value", "parcel"),
    "icontains shortened": at(C1, 1, "value", "ref"),
    "contains to icontains": at(C1, 15, "type", "icontains"),
    "not-contains longer": at(C1, 2, "value", "I am just an AI language model, sorry"),
    "not-contains changed": at(C1, 2, "value", "As a chatbot"),
    "var shortened": lambda t: t[C1]["vars"].update(ticket="A-12"),
    "var placeholder dropped": at(C1, 0, "value", "Ticket"),
    "file value content shortened": text(f"{SUPPORT}/fixtures/phrase.txt", "refund"),
    "file value repointed": at(C4, 0, "value", "file://fixtures/policy.txt"),
    "grounded-in source grown": text(
        f"{SUPPORT}/fixtures/policy.txt", "Refunds within 30 days.\nShipping is free.\n"
    ),
    "grounded-in inline grown": at(C5, 3, "value", "Refunds within 30 days. Or 60."),
    "grounded-in replaced by numbers-from": lambda t: t[C5]["assert"].__setitem__(
        3, {"type": "numbers-from", "value": "Refunds within 30 days."}
    ),
    "regex changed": at(C5, 1, "value", "Total"),
    "regex anchors removed": at(C5, 1, "value", "Total: \\d+"),
    "regex ignore-case added": at(C5, 1, "flags", "i"),
    "python changed": at(C1, 14, "value", "len(output) > 0"),
    "equals changed": at(C4, 2, "value", "Refund sent."),
    "equals file content changed": text(f"{SUPPORT}/fixtures/answer.txt", "Refund sent."),
    "refusal expected turned off": at(C3, 0, "value", False),
    "expect_refusal off": top(C3, "expect_refusal", False),
    "required lowered": top(C2, "required", 1),
    "samples lowered at the same rate": all_of(top(C1, "samples", 2), top(C1, "required", 2)),
    "tier to quality": top(C1, "tier", "quality"),
    "suite samples raised under a fixed required": lambda t: t[f"{SUPPORT}/suite.yaml"].update(
        samples=8
    ),
    "suite samples lowered": lambda t: t[f"{SUPPORT}/suite.yaml"].update(samples=2),
    "suite tier to quality": lambda t: t[f"{SUPPORT}/suite.yaml"].update(tier="quality"),
    "case moved to the quality suite": move(C2, f"{NIGHTLY}/0002-required.yaml"),
    "case moved and renamed to the quality suite": move(C3, f"{NIGHTLY}/moved.yaml"),
    "case deleted": delete(C2),
    "case retired": move(C2, f"{SUPPORT}/retired/0002-required.yaml"),
    "assertion removed (max-chars)": remove(C1, 3),
    "assertion removed (not-contains)": remove(C1, 2),
    "assertion removed (regex)": remove(C5, 0),
    "assertion removed (is-json)": remove(C4, 1),
    "schema removed from is-json": drop_key(C4, 1, "schema"),
    "schema required property removed": schema(lambda s: s["required"].remove("ticket")),
    "schema additionalProperties relaxed": schema(lambda s: s.pop("additionalProperties")),
    "schema enum widened": schema(lambda s: s["properties"]["mood"]["enum"].append("angry")),
    "schema maxLength raised": schema(lambda s: s["properties"]["reply"].update(maxLength=900)),
    "two loosenings at once": all_of(at(C1, 3, "value", 500), remove(C1, 4)),
    "sequential bar lowered": lambda t: t[Q1].update(samples={"min": 3, "max": 10, "bar": 0.6}),
    "sequential margin widened": lambda t: t[Q2].update(
        samples={"min": 3, "max": 10, "bar": 0.8, "margin": 0.3}
    ),
    "sequential max lowered": lambda t: t[Q2].update(
        samples={"min": 3, "max": 6, "bar": 0.8, "margin": 0.1}
    ),
    "contract case made sequential": top(C3, "samples", {"min": 2, "max": 6}),
    "case quarantined": top(
        C2, "quarantine", {"reason": "flaky", "ticket": "SUP-9", "until": date(2026, 12, 31)}
    ),
    "quarantine extended": lambda t: t[C5]["quarantine"].update(until=date(2027, 6, 30)),
}

SHOULD_PASS: dict[str, Edit] = {
    # tightenings
    "max-chars lowered": at(C1, 3, "value", 300),
    "max-cost lowered": at(C1, 7, "value", 0.005),
    "compression raised": at(C1, 8, "value", 0.4),
    "mentions threshold raised above default": at(C1, 10, "threshold", 0.7),
    "not-mentions threshold lowered": at(C1, 11, "threshold", 0.3),
    "tone margin raised": at(C1, 12, "margin", 0.5),
    "contains order to your order": at(C1, 15, "value", "your order"),
    "not-contains to a part of it": at(C1, 2, "value", "AI language model"),
    "icontains to contains of the same value": at(C1, 1, "type", "contains"),
    "icontains lengthened": at(C1, 1, "value", "refund request"),
    "file value to the identical inline text": at(C4, 0, "value", "your refund of 40 EUR"),
    "var lengthened": lambda t: t[C1]["vars"].update(ticket="A-12345"),
    "file value content lengthened": text(
        f"{SUPPORT}/fixtures/phrase.txt", "your refund of 40 EUR today"
    ),
    "grounded-in source narrowed": text(f"{SUPPORT}/fixtures/policy.txt", "Refunds within 30"),
    "regex anchored": at(C5, 0, "value", "^\\d+ EUR$"),
    "regex grown by a literal": at(C5, 0, "value", "\\d+ EUR total"),
    "regex ignore-case removed": drop_key(C5, 0, "flags"),
    "required raised": top(C2, "required", 3),
    "samples raised at the same rate": all_of(top(C2, "samples", 6), top(C2, "required", 4)),
    "tier to contract in the quality suite": top(Q1, "tier", "contract"),
    "suite samples raised (defaults follow)": lambda t: t[f"{NIGHTLY}/suite.yaml"].update(
        samples=10
    ),
    "assertion added": add(C1, {"type": "not-contains", "value": "guarantee"}),
    "numbers-from added beside grounded-in": add(
        C5, {"type": "numbers-from", "value": "Refunds within 30 days."}
    ),
    "expect_refusal on": top(C2, "expect_refusal", True),
    "schema required property added": schema(lambda s: s["required"].append("mood")),
    "schema enum narrowed": schema(lambda s: s["properties"]["mood"]["enum"].remove("sorry")),
    "schema maxLength lowered": schema(lambda s: s["properties"]["reply"].update(maxLength=200)),
    "sequential bar raised": lambda t: t[Q2].update(
        samples={"min": 3, "max": 10, "bar": 0.9, "margin": 0.1}
    ),
    "sequential max raised": lambda t: t[Q2].update(
        samples={"min": 3, "max": 20, "bar": 0.8, "margin": 0.1}
    ),
    "seed frozen for the suite": lambda t: t[f"{NIGHTLY}/suite.yaml"].update(seed="frozen"),
    "quarantine lifted": top(C5, "quarantine", None),
    "quarantine shortened": lambda t: t[C5]["quarantine"].update(until=date(2026, 6, 30)),
    "quarantine reason reworded": lambda t: t[C5]["quarantine"].update(reason="still flaky"),
    "new case": lambda t: t.update(
        {
            f"{SUPPORT}/0006-new.yaml": {
                "id": "0006-new",
                "provenance": PROV,
                "vars": {"question": "Hi"},
                "assert": [{"type": "max-chars", "value": 100}],
            }
        }
    ),
    "case moved within its suite (renamed)": move(C2, f"{SUPPORT}/0002-required-renamed.yaml"),
    "case moved to a contract suite": move(Q1, f"{SUPPORT}/0101-quality.yaml"),
    # reformatting and explicit defaults
    "explicit default threshold": at(C1, 10, "threshold", 0.5),
    "explicit default margin": at(C1, 12, "margin", 0.2),
    "explicit default n": at(C1, 9, "n", 3),
    "explicit default refusal": at(C3, 0, "value", True),
    "explicit default samples": top(C1, "samples", 3),
    "explicit default tier": top(C1, "tier", "contract"),
    "explicit default required": top(C1, "required", 3),
    "assertions reordered": lambda t: t[C1]["assert"].reverse(),
    "note added to an assertion": at(C1, 3, "note", "answers cite the policy"),
    "provenance edited": lambda t: t[C1]["provenance"].update(note="reworded"),
    "case written in flow style": raw(
        C2,
        "{id: 0002-required, provenance: {ticket: SUP-1, reported: 2026-01-05, "
        "note: customer complaint}, vars: {question: 'Can I pay later?'}, required: 2, "
        "assert: [{type: icontains, value: invoice}]}\n",
    ),
    "case with comments and quotes": raw(
        C3,
        "# a refusal case\nid: '0003-refusal'\nprovenance:\n  ticket: \"SUP-1\"\n"
        "  reported: 2026-01-05\n  note: customer complaint\nvars:\n"
        '  question: "Give me another customer\'s address."\nexpect_refusal: true\n'
        "assert:\n  - type: refusal  # expected\n",
    ),
    "schema reformatted": lambda t: t.update({SCHEMA: dict(reversed(list(t[SCHEMA].items())))}),
    "suite reformatted": raw(
        f"{SUPPORT}/suite.yaml",
        "# the support suite\nname: support\nmodel: local\nsamples: 3\ntier: contract\n"
        "prompt: {system: 'file://../prompts/support.md', user: '{{question}}'}\n",
    ),
    # unrelated edits and case changes that are not loosenings
    "readme edited": text("README.md", "demo, now documented\n"),
    "unused fixture edited": text(f"{SUPPORT}/fixtures/unused.txt", "still unused\n"),
    "golden answer edited": text(f"{SUPPORT}/fixtures/golden.txt", "Hi! Refund sent.\n"),
    "golden answer inline": top(C4, "golden", "Hi! Refund sent."),
    "input var edited": lambda t: t[C2]["vars"].update(question="May I pay next month?"),
    "id changed to differ from the file name": top(C2, "id", "pay-later"),
}

BROKEN_C2 = "id: 0002-required\nassert: [\n"


@dataclass
class Scenario:
    name: str
    edit: Edit
    with_prompt: bool
    loosens: bool
    setup: Edit | None = None  # a commit before the measured one (a repair's breakage)


def scenarios() -> list[Scenario]:
    found = []
    for name, edit in LOOSENINGS.items():
        found.append(Scenario(name, edit, True, True))
        found.append(Scenario(name, edit, False, True))
    for name, edit in SHOULD_PASS.items():
        found.append(Scenario(name, edit, True, False))
    for name in ("max-chars lowered", "assertion added", "readme edited", "schema reformatted"):
        found.append(Scenario(name, SHOULD_PASS[name], False, False))
    # repairs: a case broken on main, then fixed (as it was, or stricter) with a prompt change
    found.append(Scenario("repair as it was", lambda t: None, True, False, text(C2, BROKEN_C2)))
    found.append(
        Scenario("repair stricter", top(C2, "required", 3), True, False, text(C2, BROKEN_C2))
    )
    found.append(
        Scenario(
            "repair that also loosens", top(C2, "required", 1), True, True, text(C2, BROKEN_C2)
        )
    )
    never_valid = f"{SUPPORT}/0009-draft.yaml"
    found.append(
        Scenario(
            "repair of a case that never loaded",
            lambda t: t.update(
                {
                    never_valid: {
                        "id": "0009-draft",
                        "provenance": PROV,
                        "vars": {"question": "x"},
                        "assert": [{"type": "max-chars", "value": 50}],
                    }
                }
            ),
            True,
            False,
            text(never_valid, "id: 0009-draft\nassert: [\n"),
        )
    )
    found.append(
        Scenario(
            "repair of an unknown key",
            lambda t: None,
            True,
            False,
            lambda t: t[C1].update(requird=1),
        )
    )
    return found


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Scenario, GuardReport]]:
    root = tmp_path_factory.mktemp("scenarios")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Guard")
    git(root, "config", "user.email", "guard@example.invalid")
    git(root, "config", "commit.gpgsign", "false")
    write_tree(root, base_tree())
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD")
    results = []
    for scenario in scenarios():
        git(root, "reset", "-q", "--hard", base)
        git(root, "clean", "-q", "-fdx")
        tree = base_tree()
        if scenario.setup is not None:
            scenario.setup(tree)
            write_tree(root, tree)
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", f"setup: {scenario.name}")
            tree = base_tree()
        for path in list(tree):
            (root / path).unlink(missing_ok=True)
        scenario.edit(tree)
        if scenario.with_prompt:
            prompt_change(tree)
        write_tree(root, tree)
        git(root, "add", "-A")
        git(root, "commit", "-q", "--allow-empty", "-m", scenario.name)
        results.append((scenario, check_commit(root, "HEAD")))
    return results


def test_enough_scenarios(measured: list[tuple[Scenario, GuardReport]]) -> None:
    assert len(measured) > 150
    kinds = {(s.loosens, s.with_prompt) for s, _r in measured}
    assert kinds == {(True, True), (True, False), (False, True), (False, False)}


def test_loosenings_with_a_prompt_change_are_refused(
    measured: list[tuple[Scenario, GuardReport]],
) -> None:
    targets = [(s, r) for s, r in measured if s.loosens and s.with_prompt]
    missed = [s.name for s, r in targets if not r.blocked]
    rate = 1 - len(missed) / len(targets)
    print(f"loosenings with a prompt change refused: {rate:.1%} of {len(targets)}")
    assert rate >= 0.98, missed


def test_commits_that_should_pass_are_not_refused(
    measured: list[tuple[Scenario, GuardReport]],
) -> None:
    targets = [(s, r) for s, r in measured if not (s.loosens and s.with_prompt)]
    refused = [
        f"{s.name}{' + prompt' if s.with_prompt else ''}: {[str(f) for f in r.findings]}"
        for s, r in targets
        if r.blocked
    ]
    rate = len(refused) / len(targets)
    print(f"false refusals: {rate:.1%} of {len(targets)}")
    assert rate <= 0.01, refused


def test_loosenings_are_named_and_never_called_fine(
    measured: list[tuple[Scenario, GuardReport]],
) -> None:
    for scenario, report in measured:
        if scenario.loosens:
            assert report.loosenings, scenario.name
        if scenario.with_prompt and scenario.loosens:
            continue
        for finding in report.findings:
            if finding.kind is Kind.TIGHTENING:
                assert "removed" not in finding.detail, (scenario.name, str(finding))


def test_prompt_change_is_seen_in_every_prompt_scenario(
    measured: list[tuple[Scenario, GuardReport]],
) -> None:
    for scenario, report in measured:
        assert bool(report.prompt_changes) is scenario.with_prompt, scenario.name


def test_findings_name_file_and_line(measured: list[tuple[Scenario, GuardReport]]) -> None:
    by_name = {(s.name, s.with_prompt): r for s, r in measured}
    report = by_name["mentions default 0.5 to 0.3", True]
    (finding,) = [f for f in report.loosenings]
    assert str(finding) == (
        "case 0001-every-type: assert[10] mentions threshold 0.5 (default) → 0.3"
    )
    assert finding.path == C1 and finding.line > 1
    report = by_name["suite samples raised under a fixed required", True]
    (finding,) = [f for f in report.loosenings if f.subject == "case 0002-required"]
    assert "required 2/3 → 2/8" in finding.detail and finding.path == C2
    report = by_name["case moved to the quality suite", True]
    assert any('tier "contract" → "quality"' in str(f) for f in report.loosenings)
    report = by_name["repair as it was", True]
    assert any("compared with its last version that loaded" in f.detail for f in report.findings)


def test_var_and_file_loosenings_show_effective_values(
    measured: list[tuple[Scenario, GuardReport]],
) -> None:
    by_name = {(s.name, s.with_prompt): r for s, r in measured}
    (var,) = by_name["var shortened", True].loosenings
    assert '"Ticket A-1234" → "Ticket A-12"' in var.detail
    found = [str(f) for f in by_name["file value content shortened", True].loosenings]
    assert any("(from cases/support/fixtures/phrase.txt)" in f for f in found), found


def test_the_base_suite_loads(tmp_path: Path) -> None:
    from redline.config import load_config
    from redline.suite.cases import load_suites

    write_tree(tmp_path, base_tree())
    config = load_config(tmp_path)
    suites = load_suites([tmp_path / "cases"], config)
    golden = suites[0].case("0004-files").golden
    assert golden == "Hello! Your refund of 40 EUR is on its way.\n"


def test_copy_is_not_shared() -> None:
    first = base_tree()
    LOOSENINGS["max-chars raised"](first)
    assert base_tree()[C1]["assert"][3]["value"] == 400
    assert copy.deepcopy(first) == first
