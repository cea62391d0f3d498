"""What the store keeps: runs, case results and samples, as read back by every client.

Each record's dataclass fields are its one definition: the store's columns
(`running/store.py`), the export's JSON keys (`running/exchange.py`) and the completion a
replay serves (`running/replay.py`) are all derived from them by `record_fields`.

To add an optional field to a sample (or a run, a case result): declare it here with a
default (`reasoning_tokens: int | None = None`) and, when it is also part of a model's
answer, mark it `answer()` and give `Completion` the same field. Nothing else changes:
exports write and read it (older exports without it read back as the default), replay
serves it, and the store adds a nullable column to new and existing stores when it opens
them (rows stored before read back as the default). A field the store should not keep as
a column of its table gets `field(metadata=NOT_STORED)`; a different column or JSON key
name goes in the metadata too (`stored(key="id")`); a fact most records lack gets
`stored(sparse=True)` and is exported only where it differs from its default. How each
kind of value is kept is written once per target: `running/rows.py` (SQLite) and
`running/exchange.py` (JSON).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any

from redline.vocabulary.causes import TriageState
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.messages import LoopEnd, Step, ToolCall, loop_end
from redline.vocabulary.tiers import Tier
from redline.vocabulary.verdicts import AssertionResult, Verdict


class RunKind(StrEnum):
    RUN = "run"
    RERUN = "rerun"
    REPLAY = "replay"


class RunStatus(StrEnum):
    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"


class RunResult(StrEnum):
    GREEN = "green"
    RED = "red"
    INCONCLUSIVE = "inconclusive"


class CaseOutcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    #: Sequential sampling ran out of samples with the rate inside the margin of the bar.
    MARGINAL = "marginal"


def stored(
    *,
    column: str | None = "",
    key: str | None = "",
    answer: str = "",
    exact: bool = False,
    sparse: bool = False,
) -> dict[str, Any]:
    """Field metadata: the store column and export key when they differ from the field's
    name (None: not kept there); `answer`: the `Completion` field it is copied from;
    `exact`: text kept byte for byte (lone surrogates included); `sparse`: exported only
    when it differs from its default (a fact few records have)."""
    return {"column": column, "key": key, "answer": answer, "exact": exact, "sparse": sparse}


def answer(name: str = "") -> dict[str, Any]:
    """Field metadata for a sample field that is part of the model's answer (`Completion`)."""
    return stored(answer=name or "=")


#: A field that is no column of its record's table (kept in a table of its own).
NOT_STORED = stored(column=None)


class FieldKind(Enum):
    """How a field's value is written: the store and the export each map every kind."""

    PLAIN = "plain"  # str, int, float
    BOOL = "bool"
    ENUM = "enum"
    STRINGS = "strings"  # tuple[str, ...]
    MAPPING = "mapping"  # a JSON object
    COUNTS = "counts"  # verdict → count
    RECORDS = "records"  # a tuple of nested records (assertion results, tool calls, steps)


@dataclass(frozen=True)
class RecordField:
    """One field of a record, as the store and the export see it."""

    name: str
    kind: FieldKind
    #: The Python type of the value (the enum or nested record class, `int`, `str`, ...).
    type: type
    optional: bool
    #: The value when a store row or an export has none (MISSING: the field is required).
    default: Any
    column: str | None
    key: str | None
    #: The `Completion` field this sample field is copied from ("" when none).
    answer: str
    exact: bool
    sparse: bool = False

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING


def record_fields(cls: type) -> tuple[RecordField, ...]:
    """The fields of a record class, in declaration order, with their kinds and names."""
    return _record_fields(cls)


@functools.cache
def _record_fields(cls: type) -> tuple[RecordField, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        kind, base, optional = _kind_of(hints[f.name])
        default: Any = f.default
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        meta = f.metadata or stored()
        column = f.name if meta["column"] == "" else meta["column"]
        key = f.name if meta["key"] == "" else meta["key"]
        ans = f.name if meta["answer"] == "=" else meta["answer"]
        out.append(
            RecordField(
                f.name,
                kind,
                base,
                optional,
                default,
                column,
                key,
                ans,
                meta["exact"],
                meta.get("sparse", False),
            )
        )
    return tuple(out)


def _kind_of(hint: Any) -> tuple[FieldKind, type, bool]:
    args = typing.get_args(hint)
    optional = False
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        rest = [a for a in args if a is not type(None)]
        optional = len(rest) < len(args)
        hint = rest[0]
        args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin is tuple:
        if args[0] is str:
            return FieldKind.STRINGS, str, optional
        return FieldKind.RECORDS, args[0], optional
    if origin is not None:  # a Mapping
        if args and args[0] is Verdict:
            return FieldKind.COUNTS, Verdict, optional
        return FieldKind.MAPPING, dict, optional
    if hint is bool:
        return FieldKind.BOOL, bool, optional
    if isinstance(hint, type) and issubclass(hint, Enum):
        return FieldKind.ENUM, hint, optional
    return FieldKind.PLAIN, hint, optional


@dataclass(frozen=True)
class RunRecord:
    id: str
    kind: RunKind
    status: RunStatus
    result: RunResult | None
    started_at: str
    finished_at: str | None
    model_id: str
    model_alias: str
    suites: tuple[str, ...]
    parent_id: str | None = None
    git_commit: str | None = None
    git_dirty: bool = False
    #: The branch checked out when the run started; None when detached or outside git.
    git_branch: str | None = None
    redline_version: str = ""
    args: Mapping[str, Any] = field(default_factory=dict)
    #: Kept in a table of its own, and beside the run (not in it) in an export.
    manifest: Mapping[str, str] = field(
        default_factory=dict, metadata=stored(column=None, key=None)
    )

    @property
    def against(self) -> str | None:
        """The reference run a comparison run (`run --against`) repeats on another model:
        it is a model-migration candidate, not a point of the cases' history."""
        reference = self.args.get("against")
        return str(reference) if reference else None


@dataclass(frozen=True)
class CaseRecord:
    run_id: str = field(metadata=stored(key=None))
    suite: str
    case_id: str = field(metadata=stored(key="id"))
    tier: Tier
    model_id: str = field(metadata=stored(key="model"))
    samples: int
    required: int
    passes: int
    result: CaseOutcome
    verdicts: Mapping[Verdict, int]
    case_hash: str
    #: What shaped each sample (`manifest.sample_configuration`): results with the same
    #: value are samples of one pass rate; "" for results stored before it was recorded.
    config_hash: str = ""
    #: Samples drawn after a sequential test had stopped (in the batch that decided it):
    #: stored with the run, not counted in `samples`, `passes` or `verdicts`.
    uncounted: int = field(default=0, metadata=stored(sparse=True))
    #: A sequentially sampled case's rule: the pass rate it is decided against and the
    #: margin either side of it (`required` is then the fewest passes its test calls a
    #: pass at `samples`); None for a fixed count.
    bar: float | None = field(default=None, metadata=stored(sparse=True))
    margin: float | None = field(default=None, metadata=stored(sparse=True))

    @property
    def content_samples(self) -> int:
        return sum(
            n for v, n in self.verdicts.items() if v not in (Verdict.TRUNCATED, Verdict.TRANSPORT)
        )


@dataclass(frozen=True)
class SampleRecord:
    run_id: str = field(metadata=stored(key=None))
    suite: str
    case_id: str
    index: int
    #: The raw output exactly as received.
    output: str = field(metadata=stored(answer="text", exact=True))
    verdict: Verdict
    finish_reason: FinishReason | None = field(metadata=answer())
    model: str = field(default="", metadata=answer())
    seed: int | None = None
    latency_ms: float | None = field(default=None, metadata=answer())
    input_tokens: int | None = field(default=None, metadata=answer())
    output_tokens: int | None = field(default=None, metadata=answer())
    #: Of `input_tokens`, those read from and written to the provider's prompt cache.
    cached_input_tokens: int | None = field(default=None, metadata=stored(answer="=", sparse=True))
    cache_write_tokens: int | None = field(default=None, metadata=stored(answer="=", sparse=True))
    cost: float | None = field(default=None, metadata=answer())
    error: str | None = field(default=None, metadata=answer())
    attempts: int = field(default=1, metadata=answer())
    #: Why redline stopped generating once the verdict could no longer change (the check
    #: that settled it); None when the model finished or hit max_tokens by itself.
    stopped_early: str | None = field(default=None, metadata=answer())
    #: What the provider said about itself (OpenAI's `system_fingerprint`, the server's
    #: version header): a change while nothing else changed is evidence of drift.
    system_fingerprint: str | None = field(default=None, metadata=answer())
    server_version: str | None = field(default=None, metadata=answer())
    #: Kept in the store's assertion table, one row each.
    assertions: tuple[AssertionResult, ...] = field(default=(), metadata=NOT_STORED)
    created_at: str = ""
    #: The function calls of the (last) answer, exactly as received: id, name, raw arguments.
    tool_calls: tuple[ToolCall, ...] = field(default=(), metadata=stored(answer="=", sparse=True))
    #: Every request of the sample's tool loop with what came back and the fixture answers
    #: sent; empty when the case plays no loop.
    steps: tuple[Step, ...] = field(default=(), metadata=stored(answer="=", sparse=True))

    @classmethod
    def of_answer(cls, completion: Completion, **fields: Any) -> SampleRecord:
        """The sample holding `completion`; `fields` give the rest (and may override)."""
        taken = dict(zip(_ANSWER_NAMES, _ANSWERS_OF(completion), strict=True))
        return cls(**(taken | fields))

    @property
    def loop_end(self) -> LoopEnd | None:
        """How the sample's tool loop ended (None: it played none)."""
        return loop_end(self.steps)

    def as_answer(self) -> Completion:
        """The completion this sample stored, raw output untouched (what a replay serves)."""
        return Completion(**{f.answer: getattr(self, f.name) for f in _ANSWER_FIELDS})


def step_completion(step: Step) -> Completion:
    """One stored step of a tool loop as the completion that answered it."""
    return Completion(
        text=step.output,
        finish_reason=step.finish_reason,
        input_tokens=step.input_tokens,
        output_tokens=step.output_tokens,
        latency_ms=step.latency_ms,
        cost=step.cost,
        error=step.error,
        tool_calls=step.tool_calls,
    )


@dataclass(frozen=True)
class TriageRecord:
    """Where the triage of one case of one run stands: its cause, or how far the reruns got.

    `detail` holds the last diagnosis.
    """

    run_id: str
    suite: str
    case_id: str
    state: TriageState
    progress: float = 0.0
    detail: Mapping[str, Any] = field(default_factory=dict)
    updated_at: str = ""


@dataclass(frozen=True)
class CiOrigin:
    """The CI run a pulled run came from: shown beside it, with a link back to CI."""

    #: The CI system (`github`), and the repository as it names it (`owner/name`).
    provider: str
    repo: str
    ci_run_id: str
    #: The number CI shows for the run (`#128`), None when the CI system has none.
    run_number: int | None
    url: str
    event: str | None = None
    branch: str | None = None
    #: The artifact the run was read from.
    artifact: str = ""

    @property
    def label(self) -> str:
        """`CI #128`, or the CI run id when CI gives no number."""
        return f"CI #{self.run_number}" if self.run_number is not None else f"CI {self.ci_run_id}"


@dataclass(frozen=True)
class BatchRecord:
    """One batch a run submitted to its provider's batch API, as far as the run has seen it.

    `requests` are the batch's custom ids (each one request of one sample: see
    `providers.batching.custom_id`), so a resumed run collects each request from the batch
    that holds it instead of sending it again.
    """

    run_id: str
    batch_id: str
    #: The provider table the batch went to (`openai`, a renamed one...).
    provider: str
    #: The provider's own word for where the batch stands (`in_progress`, `ended`, ...).
    status: str
    requests: tuple[str, ...]
    #: The provider's request counts, in its own words (`completed`, `succeeded`, ...).
    counts: Mapping[str, int] = field(default_factory=dict)
    #: The batch has ended: its results are final (whatever it answered, it answered).
    ended: bool = False
    #: When the store recorded it ("" until then: the store fills them in).
    submitted_at: str = ""
    updated_at: str = ""


@dataclass(frozen=True)
class SampleUsage:
    """A sample's latency, tokens and cost, read without its output text."""

    verdict: Verdict
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None


_ANSWER_FIELDS = tuple(f for f in record_fields(SampleRecord) if f.answer)
_ANSWER_NAMES = tuple(f.name for f in _ANSWER_FIELDS)
#: A completion's answer fields in one call (a sample is made of one per request).
_ANSWERS_OF = operator.attrgetter(*(f.answer for f in _ANSWER_FIELDS))
