"""What a user can change about a run, and how it is kept in the run's stored arguments.

A run records its options in `RunRecord.args` (a JSON object) so that `--resume` continues
it with the same settings and a report can say how it was made. `RunOptions.stored_args`
and `RunOptions.from_stored` are the only conversion between the two: a new option is one
field here plus one line in each of them. Keys missing from an older store's arguments
take the field's default, so runs stored by any earlier redline still resume.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redline.vocabulary.records import RunKind, RunRecord
from redline.vocabulary.tiers import Tier
from redline.vocabulary.verdicts import Verdict

if TYPE_CHECKING:
    from redline.config import Config

#: The stored-argument keys `RunOptions` owns; every other key is a fact the run recorded.
OPTION_KEYS = frozenset(
    {
        "suites",
        "cases",
        "samples",
        "tier",
        "model",
        "shard",
        "replay",
        "judge",
        "judge_blocks",
        "adaptive",
        "case_samples",
        "against",
        "batch",
        "batch_if_supported",
    }
)


@dataclass(frozen=True)
class RunOptions:
    """What a user can change about a run without editing a file."""

    samples: int | None = None
    case_ids: tuple[str, ...] = ()
    tier: Tier | None = None
    model_alias: str | None = None
    concurrency: int | None = None
    kind: RunKind = RunKind.RUN
    parent_id: str | None = None
    resume: str | None = None
    replay: str | None = None
    shard: tuple[int, int] | None = None
    run_id: str | None = None
    #: Further facts stored with the run (a triage arm's label, ...); a key here wins over
    #: the same key derived from the fields.
    args: Mapping[str, Any] = field(default_factory=dict)
    #: Run Layer 2 judges (`--judge`); trusted judges fail samples only with `judge_blocks`.
    judge: bool = False
    judge_blocks: bool = False
    #: With `resume`: add samples to a finished run (a triage arm drawn in batches).
    extend: bool = False
    #: `--adaptive`: sequential sampling for every case written with a fixed N.
    adaptive: bool = False
    #: With `resume`: draw the slots of a finished run whose samples had these verdicts
    #: again (`--retry-transport`); the first attempts are kept as superseded evidence.
    retry: tuple[Verdict, ...] = ()
    #: Samples per case as `suite/case` → n (`--against`: the reference run's counts).
    case_samples: Mapping[str, int] = field(default_factory=dict)
    #: Stop scheduling once this many US dollars are spent (`--budget`, `max_run_cost`).
    budget: float | None = None
    #: The suite folders run, relative to the project root (empty: the configured suites).
    suites: tuple[str, ...] = ()
    #: `--against RUN_ID`: the reference run whose cases and sample counts this run repeats.
    against: str | None = None
    #: Through the provider's batch API: `--batch` True, `--no-batch` False, None: as the
    #: provider's `batch` setting says. A run records what it did, so `--resume` goes on
    #: the same way.
    batch: bool | None = None
    #: `--batch-if-supported`: the batch API when the provider has one, else as usual.
    batch_if_supported: bool = False
    #: How long this process waits for a pending batch (`--no-wait`: 0; None: until it ends).
    batch_wait_s: float | None = None

    def stored_args(self) -> dict[str, Any]:
        """The options as the run's stored arguments (JSON-ready), with `args` on top."""
        typed: dict[str, Any] = {
            "suites": list(self.suites),
            "cases": list(self.case_ids),
            "samples": self.samples,
            "tier": self.tier,
            "model": self.model_alias,
            "shard": list(self.shard) if self.shard else None,
            "replay": self.replay,
            "judge": self.judge,
            "judge_blocks": self.judge_blocks,
            "adaptive": self.adaptive,
        }
        if self.case_samples:
            typed["case_samples"] = dict(self.case_samples)
        if self.against is not None:
            typed["against"] = self.against
        if self.batch is not None:
            typed["batch"] = self.batch
        if self.batch_if_supported:
            typed["batch_if_supported"] = True
        return {**typed, **self.args}

    @classmethod
    def from_stored(cls, args: Mapping[str, Any]) -> RunOptions:
        """The options a run's stored arguments record; every other key stays in `args`."""
        shard = args.get("shard")
        return cls(
            suites=tuple(str(p) for p in args.get("suites") or ()),
            case_ids=tuple(str(c) for c in args.get("cases") or ()),
            samples=args.get("samples"),
            tier=None if args.get("tier") is None else Tier(args["tier"]),
            model_alias=args.get("model"),
            shard=None if not shard else (int(shard[0]), int(shard[1])),
            replay=args.get("replay"),
            judge=bool(args.get("judge")),
            judge_blocks=bool(args.get("judge_blocks")),
            adaptive=bool(args.get("adaptive")),
            case_samples={str(k): int(n) for k, n in (args.get("case_samples") or {}).items()},
            against=args.get("against"),
            batch=None if args.get("batch") is None else bool(args["batch"]),
            batch_if_supported=bool(args.get("batch_if_supported")),
            args={k: v for k, v in args.items() if k not in OPTION_KEYS},
        )

    def suite_paths(self, config: Config) -> list[Path]:
        """The suite folders to load: the recorded ones, else the configured suites."""
        return [config.root / p for p in self.suites] or list(config.suites)


def resume_options(
    run: RunRecord,
    config: Config,
    retry: tuple[Verdict, ...] = (),
    concurrency: int | None = None,
    *,
    budget: float | None = None,
    batch_wait_s: float | None = None,
) -> tuple[RunOptions, list[Path]]:
    """Options and suite folders that continue `run` with its own settings (`--resume`,
    `--retry-transport`, the triage app's retry)."""
    stored = RunOptions.from_stored(run.args)
    # A replay resumes as a replay: its missing samples come from the run it re-scores.
    replay = run.parent_id if run.kind is RunKind.REPLAY else None
    options = replace(
        stored,
        model_alias=None if replay else stored.model_alias or run.model_alias,
        concurrency=concurrency,
        kind=run.kind,
        replay=replay,
        parent_id=run.parent_id,
        resume=run.id,
        retry=retry,
        budget=budget,
        # A run that went without batches before resumes without them.
        batch=bool(stored.batch),
        batch_wait_s=batch_wait_s,
    )
    return options, stored.suite_paths(config)
