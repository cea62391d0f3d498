"""The README is the front door: its examples must be what redline actually accepts."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from exampleapp import write_app
from redline.cli import build_parser
from redline.config import load_config
from redline.documents.yamlsource import load_text
from redline.semantic.settings import semantic_settings
from redline.suite.cases import load_suite

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


DOCS = [README] + [
    page.read_text(encoding="utf-8")
    for page in sorted((Path(__file__).resolve().parents[1] / "docs").glob("*.md"))
]


def blocks(language: str) -> list[str]:
    """Every `language` example in the README and the docs/ pages."""
    return [
        block
        for text in DOCS
        for block in re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)
    ]


#: Files the README's examples name, so the loader can read every one of them.
EXAMPLE_FILES = {
    "prompts/system.txt": "Extract the invoice in {{document}} as JSON.",
    "prompts/user.txt": "{{document}}",
    "fixtures/SUP-2411.txt": "PT SINAR JAYA  TOTAL Rp 12.500.000,-",
    "fixtures/policy.txt": "Refunds are paid within 14 days.",
    "golden/SUP-2411.json.txt": '{"total_idr": 12500000}',
    "schemas/invoice.schema.json": '{"type": "object", "required": ["total_idr"]}',
}
#: What a fragment of a case needs around it to be a whole case.
CASE_HEAD = "provenance: {ticket: SUP-1, note: readme}\nvars: {document: x}\n"
#: The README's commented-out settings, switched on: every one must load as well.
COMMENTED_SETTING = re.compile(r"^# (?=\[|[a-z_]+ = )", flags=re.MULTILINE)
#: The checker the semantic examples name (a loopback URL: loading never calls it).
CHECKER_CONFIG = """\
[tool.redline.models]
local = "local:smollm2-135m-instruct-q4_1"
checker = "openai:gpt-4.1-2025-04-14"
[tool.redline.providers.openai]
base_url = "http://127.0.0.1:9/v1"
api_key_env = ""
[tool.redline.semantic]
checker = "checker"
grounded_in = "model"
mentions = "model"
"""


def example_suite(root: Path, suite_yaml: str, cases: dict[str, str]) -> Path:
    """The README's suite folder, with the given case files beside suite.yaml."""
    folder = root / "cases" / "invoice-extract"
    for name, text in {**EXAMPLE_FILES, "suite.yaml": suite_yaml, **cases}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_every_yaml_example_parses(tmp_path: Path) -> None:
    """Each YAML example, read by redline's own loader: a suite, a case, a fragment of one
    (placed in a case), a list of assertions (placed under `assert:`), or the CI workflow."""
    examples = blocks("yaml")
    suites = [e for e in examples if e.startswith("# cases/") and "/suite.yaml" in e.split("\n")[0]]
    cases = [e for e in examples if e.startswith("# cases/") and e not in suites]
    fragments = [e for e in examples if e.startswith("# in ")]
    assertions = [e for e in examples if e.lstrip().startswith("- type:")]
    workflows = [e for e in examples if e.startswith("strategy:")]
    targets = [e for e in suites if "\ntarget:" in e]  # suites of an app (docs/targets.md)
    suites = [e for e in suites if e not in targets]
    assert suites and cases and fragments and assertions and workflows and targets
    assert len(examples) == len(suites + targets + cases + fragments + assertions + workflows)
    for i, text in enumerate(targets):
        app = write_app(tmp_path / f"app-{i}")
        (app / "suite.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
        assert load_suite(app).target is not None
    written = {f"case-{i}.yaml": case for i, case in enumerate(cases)}
    whole = CASE_HEAD + "assert: [{type: is-json}]\n"
    written |= {f"fragment-{i}.yaml": whole + f for i, f in enumerate(fragments)}
    written |= {
        f"assertions-{i}.yaml": CASE_HEAD + "assert:\n" + a for i, a in enumerate(assertions)
    }
    (tmp_path / "pyproject.toml").write_text(CHECKER_CONFIG, encoding="utf-8")
    suite = load_suite(example_suite(tmp_path, suites[0], written), load_config(tmp_path))
    loaded = {case.id: case for case in suite.cases}
    assert loaded["0042-amount-suffix"].golden == EXAMPLE_FILES["golden/SUP-2411.json.txt"]
    assert [a.type_name for a in loaded["assertions-0"].assertions] == [
        "numbers-from",
        "grounded-in",
        "not-mentions",
    ]
    assert loaded["fragment-0"].quarantine is not None
    assert loaded["fragment-1"].sampling is not None
    # The same fragment is a suite setting too; every other suite example loads as well.
    suite_with = suites[0].replace("samples: 3\n", fragments[1].split("\n", 1)[1])
    for i, other in enumerate([suite_with, *suites[1:]]):
        assert load_suite(example_suite(tmp_path / str(i), other, {"c.yaml": cases[0]})).cases
    for workflow in workflows:
        node, problems = load_text(workflow, "README workflow")
        assert node is not None and not problems


def test_the_configuration_example_parses(tmp_path: Path) -> None:
    """The configuration example loads as it is, and with every commented setting on."""
    [config] = blocks("toml")
    (tmp_path / "pyproject.toml").write_text(config, encoding="utf-8")
    loaded = load_config(tmp_path)
    assert loaded.model("local").id == "local:smollm2-135m-instruct-q4_1"
    everything = COMMENTED_SETTING.sub("", config)
    assert everything.count("[tool.redline") > config.count("\n[tool.redline")
    (tmp_path / "pyproject.toml").write_text(everything, encoding="utf-8")
    loaded = load_config(tmp_path)
    assert sorted(loaded.models) == ["candidate", "default", "local"]
    assert loaded.price("openai:gpt-4.1-2025-04-14") is not None
    assert loaded.max_run_cost == 5.0 and loaded.provider("vllm").type == "openai"
    assert semantic_settings(loaded).checker == "default"


def test_every_command_the_readme_names_exists() -> None:
    commands = set(re.findall(r"(?:`|uv run )redline ([a-z]+)", README))
    assert {"run", "triage", "guard", "baseline", "rerun"} <= commands
    for command in sorted(commands):
        with pytest.raises(SystemExit) as exit_info:
            build_parser().parse_args([command, "--help"])
        assert exit_info.value.code == 0, command
