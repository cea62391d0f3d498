"""A real temporary git repository with a suite and a config, for the triage TUI tests."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import git

from cause_repo import History
from redline.config import parse_config
from redline.running.store import RunStore
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext

CASE_TEXT = """\
# Incident SUP-42: the total came out as "12k".
# Keep the wording of the fixture exactly as reported.
id: 0042-amount-suffix
provenance:
  ticket: SUP-42
  reported: 2026-10-01
  note: "Customer saw '12k' instead of 12,000"
vars:
  name: "Ana"
tier: quality
samples: 5
required: 4
assert:
  - type: contains
    value: "12,000"   # the amount, literally
  - type: max-chars
    value: 400
"""

OTHER_CASE = """\
id: 0007-marginal-tone
provenance:
  ticket: SUP-7
vars:
  name: Budi
tier: quality
samples: 5
required: 4
assert:
  - type: contains
    value: "12,000"
"""

SUITE_YAML = """\
name: support
prompt:
  system: prompts/system.md
  user: file://prompts/user.md
model: fake
samples: 5
tier: quality
"""

#: The user prompt on the default branch (the "unchanged prompt"); tests vary it.
BASE_USER_PROMPT = "MODE:echo Your refund of 12,000 IDR for {{name}} was approved."
FEATURE_USER_PROMPT = "MODE:echo Your refund of 12k for {{name}} was approved."


@dataclass
class TriageRepo:
    root: Path
    repo: git.Repo
    ctx: TriageContext
    case_path: Path

    def stage(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.write_text(text, encoding="utf-8")
        self.repo.index.add([rel])

    def staged(self) -> list[str]:
        names = self.repo.git.diff("--cached", "--name-only", "--no-renames")
        return sorted(names.splitlines())


def make_repo(
    root: Path, toml: str, base_user_prompt: str = BASE_USER_PROMPT
) -> tuple[git.Repo, Path]:
    suite = root / "cases" / "support"
    (suite / "prompts").mkdir(parents=True)
    (root / "redline.toml").write_text(toml, encoding="utf-8")
    (root / ".gitignore").write_text(".redline/\n", encoding="utf-8")
    (suite / "suite.yaml").write_text(SUITE_YAML, encoding="utf-8")
    (suite / "prompts" / "system.md").write_text("You answer refund questions.\n", "utf-8")
    (suite / "prompts" / "user.md").write_text(base_user_prompt, encoding="utf-8")
    case_path = suite / "0042-amount-suffix.yaml"
    case_path.write_text(CASE_TEXT, encoding="utf-8")
    (suite / "0007-marginal-tone.yaml").write_text(OTHER_CASE, encoding="utf-8")
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "Test")
        cfg.set_value("user", "email", "test@example.invalid")
        cfg.set_value("commit", "gpgsign", "false")
    repo.git.add(A=True)
    repo.index.commit("base")
    repo.git.checkout("-b", "feature")
    (suite / "prompts" / "user.md").write_text(FEATURE_USER_PROMPT, encoding="utf-8")
    repo.git.add(A=True)
    repo.index.commit("reword the refund prompt")
    return repo, case_path


def open_triage(root: Path, store: RunStore) -> TriageContext:
    return TriageContext(
        store=store,
        root=root,
        config=parse_config(root / "redline.toml"),
        today=lambda: dt.date(2026, 11, 30),
        user="ana",
    )


def app_on_run(history: History, run_id: str) -> TriageApp:
    """The triage app opened on one run of a history built by `cause_repo`."""
    return TriageApp(open_triage(history.root, history.store), run_id)
