"""`redline rerun`: triage step 1 from the command line, against the real loopback server."""

from __future__ import annotations

from pathlib import Path

import pytest
from triage_repo import BASE_USER_PROMPT, make_repo
from triage_store import RED_RUN, build_store

from redline.cli import ExitCode, main
from redline.records import RunKind
from redline.rerun import Conclusion
from redline.store import RunStore
from servers import LoopbackLLMServer

FAILING_BASE_PROMPT = "MODE:echo Your refund of 12k for {{name}} was approved."


@pytest.mark.parametrize(
    ("base_prompt", "samples", "conclusion", "code"),
    [
        (BASE_USER_PROMPT, 20, Conclusion.REGRESSION, ExitCode.RED),
        (FAILING_BASE_PROMPT, 20, Conclusion.CASE_AT_FAULT, ExitCode.GREEN),
        (BASE_USER_PROMPT, 2, Conclusion.UNDECIDED, ExitCode.INCONCLUSIVE),
    ],
)
def test_rerun_command_concludes_and_links_the_rerun(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    llm_server: LoopbackLLMServer,
    loopback_key: str,
    base_prompt: str,
    samples: int,
    conclusion: Conclusion,
    code: ExitCode,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    repo, _ = make_repo(root, llm_server.redline_toml(), base_user_prompt=base_prompt)
    (root / ".redline").mkdir()
    build_store(root / ".redline" / "redline.db", with_rerun=False).close()
    monkeypatch.chdir(root)

    assert main(["rerun", RED_RUN, "0042-amount-suffix", "--samples", str(samples)]) == code

    out = capsys.readouterr().out
    assert conclusion.value in out
    assert f"prompt at {repo.commit('main').hexsha[:12]}" in out  # the merge-base by default
    sent = {r.body["messages"][-1]["content"] for r in llm_server.requests}
    assert sent == {base_prompt.replace("{{name}}", "Ana")}
    with RunStore.open(root / ".redline" / "redline.db") as store:
        rerun = store.runs(kind=RunKind.RERUN)[0]
        assert rerun.parent_id == RED_RUN
        assert len(store.samples(rerun.id)) == samples
        assert len(store.samples(RED_RUN)) == 45


def test_rerun_of_an_unknown_case_is_a_usage_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    llm_server: LoopbackLLMServer,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make_repo(root, llm_server.redline_toml())
    (root / ".redline").mkdir()
    build_store(root / ".redline" / "redline.db", with_rerun=False).close()
    monkeypatch.chdir(root)
    assert main(["rerun", RED_RUN, "no-such-case"]) == ExitCode.USAGE
    assert "has no case 'no-such-case'" in capsys.readouterr().err
    assert llm_server.requests == []
