"""Realistic histories for cause analysis: a real git repository, real runs on the loopback server.

The server's answers depend on the model id (see `model_pass_rates` in servers.py):
`good-model` is always right, `flaky-model` right 4 times in 5, `bad-model` always wrong.
A prompt that drops "12,000" from the template makes every model's echo fail the case.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import git
import pytest

from redline.config import Config, parse_config
from redline.deciding.cause import Diagnosis, Settings, analyse
from redline.running import runner
from redline.running.runner import RunOptions, run_suites, sample_seed
from redline.running.store import RunStore
from redline.suite.cases import load_suites
from redline.vocabulary.records import CaseOutcome, CaseRecord, RunRecord
from servers import LoopbackLLMServer, keeps_answer

GOOD, FLAKY, BAD = "good-model", "flaky-model", "bad-model"
RATES = {GOOD: 1.0, FLAKY: 0.8, BAD: 0.0}
SUITE = "support"
CASE = "0042-amount"
GOOD_PROMPT = "MODE:echo Your refund of 12,000 IDR for {{name}} was approved."
REWORDED_PROMPT = "MODE:echo We approved your refund of 12,000 IDR, {{name}}."
BROKEN_PROMPT = "MODE:echo Your refund of 12k for {{name}} was approved."

CASE_YAML = """\
id: 0042-amount
provenance:
  ticket: SUP-42
  note: "Customer saw '12k' instead of 12,000"
vars:
  name: Ana
tier: contract
samples: 5
assert:
  - type: contains
    value: "{needle}"
"""

SUITE_YAML = """\
name: support
prompt:
  system: prompts/system.md
  user: file://prompts/user.md
model: fake
samples: 5
tier: contract
"""


def toml(server: LoopbackLLMServer, model: str, *, old_provider: bool = True) -> str:
    """Pins `fake` to `model`; `old` is a second provider (an older deployment) when kept."""
    common = (
        'api_key_env = "REDLINE_LOOPBACK_KEY"\ntimeout_s = 5.0\nmax_retries = 1\n'
        "backoff_base_s = 0.01\nbackoff_max_s = 0.02\n"
    )
    provider, _, name = model.rpartition(":")
    text = (
        "concurrency = 8\n\n[models]\n"
        f'fake = "{provider or "loopback"}:{name}"\n\n'
        f'[providers.loopback]\ntype = "openai"\nbase_url = "{server.openai_base_url}"\n{common}'
    )
    if old_provider:
        text += (
            f'\n[providers.old]\ntype = "openai"\nbase_url = "{server.openai_base_url}"\n{common}'
        )
    return text


@dataclass
class History:
    """One repository and its store; runs are made with real `redline run` machinery."""

    root: Path
    repo: git.Repo
    store: RunStore
    server: LoopbackLLMServer

    @classmethod
    def create(
        cls,
        tmp_path: Path,
        server: LoopbackLLMServer,
        *,
        model: str = GOOD,
        prompt: str = GOOD_PROMPT,
        needle: str = "12,000",
    ) -> History:
        server.model_pass_rates = dict(RATES)
        root = tmp_path / "repo"
        suite = root / "cases" / SUITE
        root.mkdir()
        repo = git.Repo.init(root, initial_branch="main")
        with repo.config_writer() as cfg:
            cfg.set_value("user", "name", "Test")
            cfg.set_value("user", "email", "test@example.invalid")
            cfg.set_value("commit", "gpgsign", "false")
        (root / ".gitignore").write_text(".redline/\n", encoding="utf-8")
        (root / "README.md").write_text("Refund replies.\n", encoding="utf-8")
        repo.git.add(A=True)
        repo.index.commit("start: no suite yet")
        (suite / "prompts").mkdir(parents=True)
        (root / "redline.toml").write_text(toml(server, model), encoding="utf-8")
        (suite / "suite.yaml").write_text(SUITE_YAML, encoding="utf-8")
        (suite / "prompts" / "system.md").write_text("You answer refund questions.\n", "utf-8")
        (suite / "prompts" / "user.md").write_text(prompt, encoding="utf-8")
        (suite / f"{CASE}.yaml").write_text(CASE_YAML.format(needle=needle), encoding="utf-8")
        history = cls(root, repo, RunStore.open(root / ".redline" / "redline.db"), server)
        history.commit("suite for refunds")
        return history

    def close(self) -> None:
        self.store.close()

    @property
    def config(self) -> Config:
        return parse_config(self.root / "redline.toml")

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def set_prompt(self, text: str) -> None:
        self.write(f"cases/{SUITE}/prompts/user.md", text)

    def pin(self, model: str, *, old_provider: bool = True) -> None:
        self.write("redline.toml", toml(self.server, model, old_provider=old_provider))

    def commit(self, message: str) -> str:
        self.repo.git.add(A=True)
        return self.repo.index.commit(message).hexsha

    def run(self, *, passing: bool | None = None) -> RunRecord:
        """One `redline run`; `passing` picks a run id whose draws pass (or fail) the case."""
        config = self.config
        suites = load_suites(config.suites, config)
        run_id = None if passing is None else self._run_id(config, passing)
        record = run_suites(suites, config, self.store, RunOptions(run_id=run_id))
        if passing is not None:
            assert (self.case(record).result is CaseOutcome.PASS) is passing
        return record

    def case(self, run: RunRecord) -> CaseRecord:
        return next(c for c in self.store.cases(run.id) if c.case_id == CASE)

    def analyse(self, run: RunRecord, settings: Settings | None = None) -> Diagnosis:
        return analyse(self.store, self.config, run, self.case(run), settings)

    def _run_id(self, config: Config, passing: bool) -> str:
        model = config.models["fake"].name
        rate = RATES[model]
        for n in range(20_000):
            run_id = f"{'p' if passing else 'f'}{len(self.store.runs()):03d}{n:08d}"
            seeds = [sample_seed(run_id, SUITE, CASE, i) for i in range(5)]
            if all(keeps_answer(model, s, rate) for s in seeds) is passing:
                return run_id
        raise AssertionError(f"no run id makes {model} {'pass' if passing else 'fail'}")


def prompt_regression(
    root: Path,
    server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    more_cases: tuple[str, ...] = (),
) -> tuple[History, RunRecord]:
    """Green on main, then a red run on a branch whose prompt drops the amount.

    `more_cases` adds amount cases beside CASE, committed on main before the green run.
    """
    history = History.create(root, server)
    for case_id in more_cases:
        text = CASE_YAML.format(needle="12,000").replace(CASE, case_id)
        history.write(f"cases/{SUITE}/{case_id}.yaml", text)
    if more_cases:
        history.commit("more amount cases")
    monkeypatch.chdir(history.root)
    history.run()
    history.repo.git.checkout("-b", "feature")
    history.set_prompt(BROKEN_PROMPT)
    history.commit("shorter amounts")
    return history, history.run()


@contextmanager
def histories(
    tmp_path: Path, server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch, prefix: str
) -> Iterator[Callable[..., History]]:
    """Makes histories whose run ids (hence sample seeds, hence the flaky model's draws) are
    fixed: `prefix` and a counter. Every history made is closed at the end."""
    made: list[History] = []
    ids = itertools.count()
    monkeypatch.setattr(runner, "new_run_id", lambda: f"{prefix}{next(ids):011d}")

    def make(**kwargs: object) -> History:
        h = History.create(tmp_path, server, **kwargs)  # type: ignore[arg-type]
        monkeypatch.chdir(h.root)
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()
