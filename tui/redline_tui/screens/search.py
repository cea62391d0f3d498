"""Search the open run: raw outputs, failure reasons and case ids, through the store's index."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from redline.errors import RedlineError
from redline.running.search import SearchHit, search_run
from redline.vocabulary.records import RunRecord
from redline_tui.context import TriageContext
from redline_tui.messages import OpenStep, SampleSource, Step
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.row_table import RowTable
from redline_tui.widgets.verdict_bar import verdict_badge


class SearchDone(Message):
    """The search worker's hits for a phrase, or why it could not search."""

    def __init__(self, text: str, hits: list[SearchHit], error: str | None = None) -> None:
        super().__init__()
        self.text = text
        self.hits = hits
        self.error = error


class SearchScreen(Screen[None]):
    """Every sample of the run holding a phrase; enter opens it in Step 2 (Outputs)."""

    AUTO_FOCUS = "#search-text"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("slash", "edit_query", "New search"),
    ]
    #: Keys the results list keeps (moving in it); any other typed character is a new query.
    _LIST_KEYS = frozenset({"j", "k", "g", "G"})
    HELP: ClassVar[str] = (
        "Type a word or phrase and press enter: every sample of the open run whose raw "
        "output, failure reasons or case id holds it (any case, any script) is listed "
        "with the text around it. Enter on a result opens that sample in Step 2 (Outputs). "
        "In the results, j/k move; / or typing any other character returns to the query "
        "box (typing starts a new query), so Step 2's keys never fire from here. "
        'From the home screen, / then "phrase searches the same way.'
    )

    DEFAULT_CSS = """
    SearchScreen #search-text { margin: 1 0; }
    SearchScreen #search-hits { height: 1fr; }
    """

    def __init__(self, ctx: TriageContext, run: RunRecord, text: str = "") -> None:
        super().__init__()
        self.ctx = ctx
        self.run = run
        self.hits: list[SearchHit] = []
        self._text = text
        self.table: RowTable[Text] = RowTable(id="search-hits")
        for key, label in (
            ("case", "Case"),
            ("index", "#"),
            ("verdict", "Verdict"),
            ("where", "Found in"),
            ("snippet", "Text"),
        ):
            self.table.add_column(label, key=key)
        self.status = Static("", id="search-status", classes="status-line")

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Search run {self.run.id}", style="bold"), classes="step-title")
        yield Input(
            self._text,
            placeholder="word or phrase in outputs, reasons, case ids",
            id="search-text",
            select_on_focus=False,
        )
        yield self.table
        yield self.status
        yield KeyBar()

    def on_mount(self) -> None:
        if self._text:
            self._search(self._text)

    @property
    def query_box(self) -> Input:
        return self.query_one("#search-text", Input)

    def on_key(self, event: events.Key) -> None:
        """Typing in the results goes to the query box (as in k9s and lazygit): a second
        query typed in place must not reach the list, whose enter opens Step 2."""
        box = self.query_box
        if self.focused is box or not event.is_printable or event.character is None:
            return
        if event.key in self._LIST_KEYS or event.key in ("slash", "question_mark"):
            return
        event.stop()
        event.prevent_default()
        box.value = event.character
        box.cursor_position = len(box.value)
        box.focus()

    def action_edit_query(self) -> None:
        box = self.query_box
        box.focus()
        box.cursor_position = len(box.value)

    @on(Input.Submitted, "#search-text")
    def _submitted(self, event: Input.Submitted) -> None:
        self._search(event.value)

    def _search(self, text: str) -> None:
        self.status.update(Text(f"Searching for {text!r}…"))
        self._run_search(text)

    @work(thread=True, exclusive=True, group="search")
    def _run_search(self, text: str) -> None:
        try:
            hits = search_run(self.ctx.store, self.run.id, text)
        except RedlineError as exc:
            self.post_message(SearchDone(text, [], str(exc)))
            return
        self.post_message(SearchDone(text, hits))

    @on(SearchDone)
    def _show(self, event: SearchDone) -> None:
        if event.error is not None:
            self.status.update(Text(event.error))
            return
        text, hits = event.text, event.hits
        self.hits = hits
        table = self.table
        table.clear()
        for hit in hits:
            snippet = Text(hit.snippet.replace("\n", " ⏎ "))
            snippet.stylize("bold reverse", hit.start, hit.end)
            table.add_row(
                Text(f"{hit.suite}/{hit.case_id}"),
                Text(str(hit.index)),
                verdict_badge(hit.verdict),
                Text(hit.found_in),
                snippet,
            )
        cases = len({(h.suite, h.case_id) for h in hits})
        self.status.update(
            Text(
                f"{len(hits)} sample(s) in {cases} case(s) hold {text.strip()!r}"
                + (" — enter opens one in Outputs" if hits else "")
            )
        )
        if hits:
            table.focus()

    def action_open(self) -> None:
        table = self.table
        if not self.hits or not 0 <= table.cursor_row < len(self.hits):
            return
        hit = self.hits[table.cursor_row]
        case = self.ctx.store.case(self.run.id, hit.suite, hit.case_id)
        if case is None:
            self.notify(f"{hit.suite}/{hit.case_id} has no result in this run", severity="warning")
            return
        sources = (SampleSource("red run", self.run.id),)
        self.post_message(OpenStep(Step.OUTPUTS, self.run, case, sources, sample=hit.index))

    @on(DataTable.RowSelected, "#search-hits")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_back(self) -> None:
        self.app.pop_screen()
