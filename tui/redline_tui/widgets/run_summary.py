"""The top of the home screen: the run's header, its verdict bar, and a banner when the
run is too noisy to judge."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from redline.presentation import result_headline_style, short_model_id
from redline.vocabulary.outcome import add_counts, too_noisy
from redline.vocabulary.records import CiOrigin, RunRecord
from redline.vocabulary.verdicts import Verdict
from redline_tui.widgets.verdict_bar import VerdictBar


def header_text(run: RunRecord, origin: CiOrigin | None = None) -> Text:
    result = run.result.value.upper() if run.result else run.status.value
    commit = (run.git_commit or "no commit")[:10] + (" (dirty)" if run.git_dirty else "")
    text = Text()
    text.append(f"run {run.id}", style="bold")
    text.append(" [comparison run] " if run.against is not None else f" [{run.kind.value}] ")
    text.append(result, style=result_headline_style(run.result))
    text.append("  suites: " + ", ".join(run.suites))
    # Short lines: the header keeps to 4 rows at 80 columns.
    text.append(f"\nmodel {short_model_id(run.model_id)}")
    if run.against is not None:
        text.append(f"  ·  compared with run {run.against}", style="bold magenta")
    branch = run.git_branch or "no branch"
    text.append(f"\nbranch {branch} · commit {commit} · {len(run.manifest)} inputs hashed")
    text.append(f"\nstarted {_when(run.started_at)}  ·  finished {_when(run.finished_at)}")
    if origin is not None:
        # A pulled run: where CI ran it, the label a link where the terminal supports one.
        text.append("\npulled from ")
        text.append(origin.label, style=f"bold link {origin.url}")
        text.append(f" {origin.url}")
    return text


def _when(stamp: str | None) -> str:
    return "—" if stamp is None else stamp[:16].replace("T", " ") + " UTC"


class RunSummary(Vertical):
    """Header, verdict bar and noise banner of one run."""

    DEFAULT_CSS = """
    RunSummary { height: auto; }
    RunSummary #run-header { height: auto; color: $text; }
    RunSummary VerdictBar { margin: 1 0 0 0; }
    RunSummary #noise-banner {
        height: auto;
        background: $warning-muted;
        color: $text-warning;
        padding: 0 1;
        margin-top: 1;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self._header = Static("Loading run…", id="run-header")
        self._bar = VerdictBar(id="verdict-bar")
        self._banner = Static("", id="noise-banner")
        self._banner.display = False

    def compose(self) -> ComposeResult:
        yield self._header
        yield self._bar
        yield self._banner

    def show_no_run(self) -> None:
        self._header.update(Text("No runs in the store yet: start with `redline run`."))

    def show_run(
        self, run: RunRecord, counts: Mapping[Verdict, int], origin: CiOrigin | None
    ) -> None:
        """The run's header, and its samples' verdicts (summed over its cases)."""
        self._header.update(header_text(run, origin))
        counts = add_counts([counts])
        self._bar.set_counts(counts)
        noisy = too_noisy(counts)
        if noisy:
            self._banner.update(
                Text(f"Inconclusive: {noisy}. Rerun once the infrastructure is sound.")
            )
        self._banner.display = noisy is not None
