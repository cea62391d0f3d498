"""The README and the documentation site: their examples must be what redline accepts."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from redline.casemodel import CASE_KEYS, SUITE_KEYS, case_keys, declared_types
from redline.cli import build_parser
from redline.config import CONFIG_KEYS, load_config
from redline.documents.yamlsource import load_text
from redline.provider_options import PROVIDER_KINDS
from redline.reference import reference_markdown
from redline.semantic.settings import semantic_settings
from redline.suite.cases import Case, load_suite, load_suites

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: The README and every page of the documentation site, by path.
PAGES = {"README.md": README} | {
    f"docs/{page.name}": page.read_text(encoding="utf-8")
    for page in sorted((ROOT / "docs").glob("*.md"))
}
DOCS = list(PAGES.values())


def blocks(language: str, pages: list[str] = DOCS) -> list[str]:
    """Every `language` example in the given pages (the README and the docs/ pages)."""
    return [
        block
        for text in pages
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
    "rubrics/slop.yaml": (ROOT / "cases/explainer/rubrics/slop.yaml").read_text(encoding="utf-8"),
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


def yaml_examples(page: str) -> dict[str, list[str]]:
    """A page's YAML examples by what they are: a suite, a case, a fragment of one (placed
    in a case), a list of assertions (placed under `assert:`), or a CI workflow."""
    examples = blocks("yaml", [PAGES[page]])
    kinds: dict[str, list[str]] = {
        "suites": [e for e in examples if re.match(r"# cases/\S+/suite\.yaml", e)],
        "fragments": [e for e in examples if e.startswith("# in ")],
        "assertions": [e for e in examples if e.lstrip().startswith("- type:")],
        "workflows": [e for e in examples if e.startswith(("strategy:", "# .github/"))],
    }
    kinds["cases"] = [e for e in examples if e.startswith("# cases/") and e not in kinds["suites"]]
    sorted_out = [e for kind in kinds.values() for e in kind]
    assert sorted(sorted_out) == sorted(examples), f"{page}: an example of no known kind"
    return kinds


def load_page_examples(root: Path, page: str) -> dict[str, Case]:
    """Every case-file example of one page, loaded by redline's own loader in a suite (the
    page's own suite example, else the README's), by case id."""
    kinds = yaml_examples(page)
    suite_yaml = (kinds["suites"] or yaml_examples("README.md")["suites"])[0]
    written = {f"case-{i}.yaml": case for i, case in enumerate(dict.fromkeys(kinds["cases"]))}
    whole = CASE_HEAD + "assert: [{type: is-json}]\n"
    written |= {f"fragment-{i}.yaml": whole + f for i, f in enumerate(kinds["fragments"])}
    written |= {
        f"assertions-{i}.yaml": CASE_HEAD + "assert:\n" + a
        for i, a in enumerate(kinds["assertions"])
    }
    for workflow in kinds["workflows"]:
        node, problems = load_text(workflow, f"{page} workflow")
        assert node is not None and not problems
    if not written:
        return {}
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(CHECKER_CONFIG, encoding="utf-8")
    suite = load_suite(example_suite(root, suite_yaml, written), load_config(root))
    for i, other in enumerate(kinds["suites"][1:]):
        assert load_suite(example_suite(root / str(i), other, {"c.yaml": kinds["cases"][0]})).cases
    return {case.id: case for case in suite.cases}


@pytest.mark.parametrize("page", [p for p in PAGES if "```yaml" in PAGES[p]])
def test_every_yaml_example_parses(tmp_path: Path, page: str) -> None:
    """Each YAML example of each page, read by redline's own loader."""
    loaded = load_page_examples(tmp_path, page)
    assert len(loaded) >= len(set(yaml_examples(page)["cases"]))


def test_the_examples_load_as_what_they_say(tmp_path: Path) -> None:
    """Every kind of example is there, and each loads as what its page says it is."""
    every = [yaml_examples(page) for page in PAGES]
    assert all(any(kinds[kind] for kinds in every) for kind in every[0])
    readme = load_page_examples(tmp_path / "readme", "README.md")
    assert readme["0042-amount-suffix"].golden == EXAMPLE_FILES["golden/SUP-2411.json.txt"]
    semantic = load_page_examples(tmp_path / "semantic", "docs/semantic.md")
    assert [a.type_name for a in semantic["assertions-0"].assertions] == [
        "numbers-from",
        "grounded-in",
        "not-mentions",
    ]
    cases = load_page_examples(tmp_path / "cases", "docs/writing-cases.md")
    fragments = yaml_examples("docs/writing-cases.md")["fragments"]
    held, sampled, own = (
        next(i for i, f in enumerate(fragments) if key in f)
        for key in ("\nquarantine:", "\nsamples: {min", "\nrequired:")
    )
    assert cases[f"fragment-{held}"].quarantine is not None
    assert cases[f"fragment-{sampled}"].sampling is not None
    assert (cases[f"fragment-{own}"].tier, cases[f"fragment-{own}"].required) == ("quality", 4)
    # The same fragment is a suite setting too.
    suite_yaml = yaml_examples("docs/writing-cases.md")["suites"][0]
    sampling = fragments[sampled].split("\n", 1)[1]
    suite_with = suite_yaml.replace("samples: 3\n", sampling)
    case = yaml_examples("docs/writing-cases.md")["cases"][0]
    assert load_suite(example_suite(tmp_path / "sampled", suite_with, {"c.yaml": case})).cases


def test_writing_cases_shows_every_assertion_type_and_key(tmp_path: Path) -> None:
    """The page on writing cases has an example of every declared assertion type, and
    names every suite and case key."""
    cases = load_page_examples(tmp_path, "docs/writing-cases.md")
    shown = {a.type_name for case in cases.values() for a in case.assertions}
    assert shown >= set(declared_types())
    page = PAGES["docs/writing-cases.md"]
    for key in SUITE_KEYS | CASE_KEYS:
        assert f"| `{key}`" in page or f", `{key}`" in page, key


def test_the_configuration_example_parses(tmp_path: Path) -> None:
    """The configuration example loads as it is, and with every commented setting on."""
    [config] = blocks("toml", [PAGES["docs/configuration.md"]])
    (tmp_path / "pyproject.toml").write_text(config, encoding="utf-8")
    loaded = load_config(tmp_path)
    assert loaded.model("local").id == "local:smollm2-135m-instruct-q4_1"
    everything = COMMENTED_SETTING.sub("", config)
    assert everything.count("[tool.redline") > config.count("\n[tool.redline")
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "company-ca.pem").write_text("", encoding="utf-8")  # its ca_bundle
    (tmp_path / "pyproject.toml").write_text(everything, encoding="utf-8")
    loaded = load_config(tmp_path)
    assert sorted(loaded.models) == ["candidate", "default", "local"]
    assert loaded.price("openai:gpt-4.1-2025-04-14") is not None
    assert loaded.max_run_cost == 5.0 and loaded.provider("vllm").type == "openai"
    assert semantic_settings(loaded).checker == "default"


@pytest.mark.parametrize(
    "example", [e for e in blocks("toml") if e.startswith(("# redline.toml", "[tool.redline"))]
)
def test_every_configuration_example_loads(tmp_path: Path, example: str) -> None:
    """Each configuration example of each page, in the file its first line names."""
    name = "redline.toml" if example.startswith("# redline.toml") else "pyproject.toml"
    (tmp_path / name).write_text(example, encoding="utf-8")
    (tmp_path / "certs").mkdir(exist_ok=True)
    (tmp_path / "certs" / "company-root-ca.pem").write_text("", encoding="utf-8")
    loaded = load_config(tmp_path)
    assert loaded.models or loaded.providers


def test_every_toml_example_is_a_configuration_or_the_install_overrides() -> None:
    """The only other TOML the docs show is the overrides a project adds before
    installing redline's `local` extra: the very ones redline's own lock file uses."""
    others = [e for e in blocks("toml") if not e.startswith(("# redline.toml", "[tool.redline"))]
    assert others
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for example in others:
        assert example.startswith("# pyproject.toml\n[tool.uv]")
        overrides = tomllib.loads(example)["tool"]["uv"]["override-dependencies"]
        assert overrides == project["tool"]["uv"]["override-dependencies"]


def test_every_command_the_readme_names_exists() -> None:
    commands = set(re.findall(r"(?:`|uv run )redline ([a-z]+)", README))
    assert {"run", "triage", "guard", "baseline", "rerun"} <= commands
    for command in sorted(commands):
        with pytest.raises(SystemExit) as exit_info:
            build_parser().parse_args([command, "--help"])
        assert exit_info.value.code == 0, command


def test_the_readme_is_a_front_door_and_the_site_holds_every_page() -> None:
    """The README stays short; every page under docs/ is in the site's navigation (a page
    left out would be built but never reachable), and every page the nav names exists."""
    assert len(README.encode("utf-8")) <= 15_000
    nav = re.findall(r"^\s+- [^:\n]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text("utf-8"), re.M)
    pages = sorted(p.removeprefix("docs/") for p in PAGES if p.startswith("docs/"))
    assert sorted(nav) == pages
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).is_file(), link


def test_the_quickstart_counts_are_this_repositorys_suites(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "17 cases × 3 samples", "of 51", "of 17": the Quickstart's counts are what its
    first command runs, in the README and in Getting started alike."""
    monkeypatch.chdir(ROOT)
    suites = load_suites([ROOT / "cases"], load_config(ROOT))
    cases = [c for s in suites for c in s.cases]
    samples = {c.samples for c in cases}
    assert len(samples) == 1
    [per_case] = samples
    for page in ("README.md", "docs/getting-started.md"):
        text = PAGES[page]
        assert f"four suites (`cases/`, {len(cases)} cases × {per_case} samples)" in text
        assert len(suites) == 4
        assert f"of {len(cases) * per_case} in our runs" in text.replace("\n", " ")
        assert f"of {len(cases)})" in text


def test_the_reference_page_is_generated_from_the_declarations() -> None:
    """docs/reference.md is what `python -m redline.reference` writes today: a key added
    to (or removed from) a declaration shows up on the page, or this test says to
    regenerate it."""
    page = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    assert page == reference_markdown(), (
        "docs/reference.md is stale: uv run python -m redline.reference > docs/reference.md"
    )
    for name in declared_types():
        assert f"### `{name}`" in page
    for key in SUITE_KEYS | case_keys() | CONFIG_KEYS:
        assert f"`{key}`" in page, key
    for kind in PROVIDER_KINDS.values():
        assert all(f"| `{option}` |" in page for option in kind.keys), kind.name
