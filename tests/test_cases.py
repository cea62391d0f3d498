from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from casefiles import CASE_HEAD, SUITE_YAML, write_suite
from redline.assertions import load_optional_types
from redline.assertions.base import _REGISTRY, TYPE_MODULES
from redline.config import load_config, parse_config
from redline.errors import Problem, ProblemsError
from redline.suite.cases import load_suite, load_suites

REPO = Path(__file__).resolve().parents[1]

GOOD_CASE = CASE_HEAD + "assert:\n  - type: contains\n    value: hello\n"


def problems_of(folder: Path, config_dir: Path | None = None) -> list[Problem]:
    config = load_config(config_dir) if config_dir is not None else None
    with pytest.raises(ProblemsError) as caught:
        load_suite(folder, config)
    return caught.value.problems


def only_problem(folder: Path) -> Problem:
    found = problems_of(folder)
    assert len(found) == 1, "\n".join(map(str, found))
    return found[0]


def test_suite_and_case_load_with_resolved_defaults(tmp_path: Path) -> None:
    suite = load_suite(
        write_suite(
            tmp_path,
            {
                "0042-amount.yaml": GOOD_CASE,
                "0043-quality.yaml": "tier: quality\nsamples: 5\n" + GOOD_CASE,
            },
        )
    )
    assert suite.name == "demo" and suite.model == "local" and suite.samples == 3
    contract, quality = suite.cases
    assert contract.id == "0042-amount"
    assert (contract.tier, contract.samples, contract.required) == ("contract", 3, 3)
    assert (quality.tier, quality.samples, quality.required) == ("quality", 5, 4)
    assert quality.required_for(10) == 8
    assert contract.required_for(10) == 10
    assert contract.provenance == {"ticket": "T-1", "reported": "2026-02-03", "note": "test"}
    assert suite.render(contract) == ("Extract it.", "hello")


def test_fixtures_are_read_verbatim(tmp_path: Path) -> None:
    scan = "PT SINAR JAYA\r\nABADI  \t\r\nTOTAL\u00a0Rp 12.500.000,-\r\n".encode()
    case = CASE_HEAD.replace("hello", "file://fixtures/scan.txt") + "assert: [{type: is-json}]\n"
    suite = load_suite(write_suite(tmp_path, {"c.yaml": case}, files={"fixtures/scan.txt": scan}))
    assert suite.cases[0].vars["document"].encode() == scan
    assert suite.render(suite.cases[0])[1].encode() == scan
    assert suite.cases[0].files == ((tmp_path / "demo/fixtures/scan.txt").resolve(),)


def test_rerun_against_an_older_prompt_is_a_replace(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, {"c.yaml": GOOD_CASE}))
    older = dataclasses.replace(suite, system_template="Old prompt for {{document}}.")
    assert older.render(older.cases[0])[0] == "Old prompt for hello."


def test_retired_cases_are_not_loaded(tmp_path: Path) -> None:
    folder = write_suite(
        tmp_path,
        {"live.yaml": GOOD_CASE},
        files={"retired/old.yaml": "id: old\nassert: [{type: javascript}]\n"},
    )
    suite = load_suite(folder)
    assert [c.id for c in suite.cases] == ["live"]
    assert suite.retired_files == (folder.resolve() / "retired/old.yaml",)
    assert [s.name for s in load_suites([tmp_path])] == ["demo"]


# -- one test per kind of problem, each asserting the reported line ------


def test_unknown_key_with_did_you_mean(tmp_path: Path) -> None:
    problem = only_problem(write_suite(tmp_path, {"c.yaml": GOOD_CASE + "expect_refusl: true\n"}))
    assert problem.path.endswith("demo/c.yaml")
    assert (problem.line, problem.column) == (7, 1)
    assert "unknown key 'expect_refusl' (did you mean 'expect_refusal'?)" in problem.message


def test_unknown_assertion_parameter_with_did_you_mean(tmp_path: Path) -> None:
    case = CASE_HEAD + "assert:\n  - type: contains\n    vaule: hello\n"
    problems = problems_of(write_suite(tmp_path, {"c.yaml": case}))
    assert [p.line for p in problems] == [5, 6]
    assert "needs `value:`" in problems[0].message
    assert "(did you mean 'value'?)" in problems[1].message


def test_wrong_type(tmp_path: Path) -> None:
    problem = only_problem(write_suite(tmp_path, {"c.yaml": "samples: three\n" + GOOD_CASE}))
    assert (problem.line, problem.column) == (1, 10)
    assert "`samples` must be a whole number, not a string" in problem.message


def test_wrong_type_in_suite_yaml(tmp_path: Path) -> None:
    suite_yaml = SUITE_YAML.replace("tier: contract", "tier: contrat")
    problem = only_problem(write_suite(tmp_path, {"c.yaml": GOOD_CASE}, suite_yaml=suite_yaml))
    assert problem.path.endswith("demo/suite.yaml")
    assert problem.line == 7
    assert "did you mean 'contract'?" in problem.message


def test_missing_fixture_file(tmp_path: Path) -> None:
    case = CASE_HEAD.replace("hello", "file://fixtures/SUP-2411.txt") + "assert: [{type: is-json}]"
    problem = only_problem(write_suite(tmp_path, {"c.yaml": case}))
    assert problem.line == 3
    assert "fixture demo/fixtures/SUP-2411.txt does not exist" in problem.message.replace(
        str(tmp_path) + "/", ""
    )
    assert "relative to the case file" in problem.hint


def test_invalid_json_schema(tmp_path: Path) -> None:
    case = CASE_HEAD + "assert:\n  - type: is-json\n    value: file://s.json\n"
    folder = write_suite(tmp_path, {"c.yaml": case}, files={"s.json": '{"type": "objekt"}'})
    problem = only_problem(folder)
    assert problem.line == 6
    assert "invalid JSON Schema" in problem.message and "objekt" in problem.message


def test_bad_regex(tmp_path: Path) -> None:
    case = CASE_HEAD + "assert:\n  - type: regex\n    value: 'total: (\\d+'\n"
    problem = only_problem(write_suite(tmp_path, {"c.yaml": case}))
    assert problem.line == 6
    assert "bad regular expression: missing ), unterminated subpattern" in problem.message


def test_python_syntax_error(tmp_path: Path) -> None:
    case = CASE_HEAD + "assert:\n  - type: python\n    value: json['total_idr'] === 12500000\n"
    problem = only_problem(write_suite(tmp_path, {"c.yaml": case}))
    assert problem.line == 6
    assert problem.message.startswith("python: syntax error")


def test_unknown_assertion_type(tmp_path: Path) -> None:
    case = CASE_HEAD + "assert:\n  - type: javascript\n    value: JSON.parse(output)\n"
    problem = only_problem(write_suite(tmp_path, {"c.yaml": case}))
    assert (problem.line, problem.column) == (5, 11)
    assert "unknown assertion type 'javascript'" in problem.message
    assert "type: python" in problem.hint


def test_a_promptfoo_rubric_points_at_the_judge_that_ships(tmp_path: Path) -> None:
    case = CASE_HEAD + "assert:\n  - type: llm-rubric\n    value: is concise\n"
    problem = only_problem(write_suite(tmp_path, {"c.yaml": case}))
    assert "unknown assertion type 'llm-rubric'" in problem.message
    assert "type: judge" in problem.hint and "rubric: file://" in problem.hint
    assert "later" not in problem.hint


def test_misspelled_assertion_type_gets_a_suggestion(tmp_path: Path) -> None:
    case = CASE_HEAD + "assert:\n  - type: not-contain\n    value: x\n"
    problem = only_problem(write_suite(tmp_path, {"c.yaml": case}))
    assert "(did you mean 'not-contains'?)" in problem.message


def test_model_alias_not_pinned_in_config(tmp_path: Path) -> None:
    (tmp_path / "redline.toml").write_text('[models]\nprod = "openai:gpt-4.1-2025-04-14"\n')
    folder = write_suite(tmp_path, {"c.yaml": GOOD_CASE})
    found = problems_of(folder, tmp_path)
    assert len(found) == 1
    assert found[0].line == 5
    assert "model alias 'local' is not pinned in redline.toml (pinned: prod)" in found[0].message


def test_model_id_instead_of_alias(tmp_path: Path) -> None:
    suite_yaml = SUITE_YAML.replace("model: local", "model: openai:gpt-4o")
    problem = only_problem(write_suite(tmp_path, {"c.yaml": GOOD_CASE}, suite_yaml=suite_yaml))
    assert problem.line == 5
    assert "must be an alias" in problem.message


def test_invalid_yaml(tmp_path: Path) -> None:
    problem = only_problem(write_suite(tmp_path, {"c.yaml": GOOD_CASE + "  - type: [oops\n"}))
    assert problem.message.startswith("not valid YAML")
    # The unclosed `[` is only noticed at the end of the file; it opened on line 7.
    assert (problem.line, problem.column) == (7, 11)
    assert "at line 8, column 1 (the end of the file)" in problem.message


def test_prompt_variable_missing_in_case(tmp_path: Path) -> None:
    case = "provenance: {note: x}\nvars:\n  doc: hello\nassert: [{type: is-json}]\n"
    problem = only_problem(write_suite(tmp_path, {"c.yaml": case}))
    assert problem.line == 2
    assert "{{document}}" in problem.message


def test_a_bad_var_is_reported_once_not_again_where_it_is_used(tmp_path: Path) -> None:
    case = (
        "provenance: {note: x}\nvars:\n  document: file://fixtures/scan.txt\n"
        "assert:\n  - type: contains\n    value: '{{document}}'\n"
    )
    folder = write_suite(tmp_path, {"c.yaml": case}, files={"fixtures/scan.txt": b"Caf\xe9\r\n"})
    problem = only_problem(folder)
    assert problem.line == 3
    assert "scan.txt, line 1: not UTF-8 text: byte 0xe9" in problem.message
    assert "UTF-8" in problem.hint


def test_missing_provenance(tmp_path: Path) -> None:
    case = "vars: {document: x}\nassert: [{type: is-json}]\n"
    problem = only_problem(write_suite(tmp_path, {"c.yaml": case}))
    assert problem.line == 1 and "provenance" in problem.message


def test_required_above_samples(tmp_path: Path) -> None:
    problem = only_problem(write_suite(tmp_path, {"c.yaml": "required: 4\n" + GOOD_CASE}))
    assert problem.line == 1
    assert "between 1 and samples (3)" in problem.message


def test_retired_marker_outside_retired_folder(tmp_path: Path) -> None:
    case = GOOD_CASE + "retired: {date: 2026-03-01, reason: marginal for weeks}\n"
    problem = only_problem(write_suite(tmp_path, {"c.yaml": case}))
    assert problem.line == 7
    assert "marked retired but is not in retired/" in problem.message


def test_duplicate_case_ids_and_keys(tmp_path: Path) -> None:
    folder = write_suite(
        tmp_path,
        {"a.yaml": "id: same\n" + GOOD_CASE, "b.yaml": "id: same\n" + GOOD_CASE + "id: x\n"},
    )
    messages = [str(p) for p in problems_of(folder)]
    assert any("b.yaml:8:1: duplicate key 'id'" in m for m in messages), messages


def test_all_problems_in_all_files_are_listed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_optional_types()  # registered now, so nothing registers it behind the test's back
    monkeypatch.delitem(_REGISTRY, "judge", raising=False)
    monkeypatch.delitem(TYPE_MODULES, "judge")  # as if the judge module were absent
    broken_suite = SUITE_YAML + "temprature: 0.2\n"
    write_suite(
        tmp_path / "one",
        {
            "a.yaml": GOOD_CASE + "tier: gold\n",
            "b.yaml": CASE_HEAD + "assert:\n  - type: regex\n    value: '('\n"
            "  - type: python\n    value: 'output ==='\n  - type: judge\n    value: rubric.md\n",
        },
        suite_yaml=broken_suite,
    )
    write_suite(tmp_path / "two", {"c.yaml": CASE_HEAD + "assert: [{type: max-chars, value: x}]"})
    with pytest.raises(ProblemsError) as caught:
        load_suites([tmp_path])
    found = [(Path(p.path).name, p.line) for p in caught.value.problems]
    assert found == [
        ("a.yaml", 7),
        ("b.yaml", 6),
        ("b.yaml", 8),
        ("b.yaml", 9),
        ("suite.yaml", 8),
        ("c.yaml", 4),
    ]
    assert "not available in this installation" in caught.value.problems[3].message


@pytest.mark.parametrize("suite_yaml", ["name: demo\nprompt: [\n", "- a list\n"])
def test_a_broken_suite_yaml_does_not_hide_the_problems_of_its_cases(
    tmp_path: Path, suite_yaml: str
) -> None:
    folder = write_suite(
        tmp_path,
        {"a.yaml": GOOD_CASE + "tier: gold\n", "b.yaml": GOOD_CASE},
        suite_yaml=suite_yaml,
    )
    found = [(Path(p.path).name, p.line) for p in problems_of(folder)]
    assert found == [("a.yaml", 7), ("suite.yaml", 3 if "[" in suite_yaml else 1)]


def test_missing_path_is_a_problem(tmp_path: Path) -> None:
    with pytest.raises(ProblemsError, match="does not exist"):
        load_suites([tmp_path / "nope"])


def test_a_case_file_given_as_a_path_is_not_reported_missing(tmp_path: Path) -> None:
    folder = write_suite(tmp_path, {"0042-amount.yaml": GOOD_CASE})
    with pytest.raises(ProblemsError) as caught:
        load_suites([folder / "0042-amount.yaml"])
    (problem,) = caught.value.problems
    assert "does not exist" not in problem.message
    assert "is a file, not a suite folder" in problem.message
    assert "--case 0042-amount" in problem.hint


def test_the_repository_suites_validate_clean() -> None:
    config = parse_config(REPO / "pyproject.toml")
    suites = load_suites([REPO / "cases"], config)
    names = {s.name: s for s in suites}
    assert set(names) == {"invoice-extract", "support-reply", "explainer", "refund-agent"}
    assert len(names["invoice-extract"].cases) >= 6
    assert len(names["support-reply"].cases) >= 6
    assert len(names["explainer"].cases) >= 4
    assert all(c.provenance.get("ticket") for s in suites for c in s.cases)
    assert sum(c.samples for s in suites for c in s.cases) <= 60
    scan = names["invoice-extract"].case("0042-amount-suffix").vars["document"]
    assert "Rp 12.500.000,-" in scan and "PT SINAR JAYA\nABADI" in scan
    crlf = names["invoice-extract"].case("0057-crlf-nbsp-scan").vars["document"]
    assert "\r\n" in crlf and "\u00a0" in crlf


def test_an_unclosed_quote_is_reported_where_it_opened_with_pyyaml_context(
    tmp_path: Path,
) -> None:
    case = 'provenance:\n  note: "the quote never closes\nvars: {document: x}\nassert: []\n'
    problem = only_problem(write_suite(tmp_path, {"quote.yaml": case}))
    assert (problem.line, problem.column) == (2, 9)
    assert "while scanning a quoted scalar at line 2, column 9" in problem.message
    assert "found unexpected end of stream at line 5, column 1 (the end of the file)" in (
        problem.message
    )


def test_a_yaml_error_inside_the_file_points_at_the_problem_and_names_its_context(
    tmp_path: Path,
) -> None:
    case = "provenance: {note: x}\nvars:\n  document: x\n assert: []\n"
    problem = only_problem(write_suite(tmp_path, {"c.yaml": case}))
    assert problem.line == 4
    assert "while parsing a block mapping at line 1, column 1" in problem.message


def test_a_case_file_that_is_not_utf8_is_reported_at_the_first_bad_byte(tmp_path: Path) -> None:
    case = b"provenance: {note: x}\nvars:\n  document: x\n" + b"# caf\xe9\nassert: []\n"
    problem = only_problem(write_suite(tmp_path, {}, files={"c.yaml": case}))
    assert (problem.line, problem.column) == (4, 6)
    assert "not UTF-8 text: byte 0xe9" in problem.message
