"""What a run will cost before it starts, and a limit that stops it before it overspends.

The estimate prices each case's mean input and output tokens per sample × its samples.
The means come from the case's stored token history on the same model (the last
`HISTORY_RUNS` runs); failing that, from its history on any model (tokenizers differ, so
this is rougher); failing that, from the rendered prompt's length and the suite's
`max_tokens`, which is an upper bound for the output. Judge calls are not included.

`redline.running.runner.estimate_run` estimates a run as the runner would plan it.
A `Budget` is consulted by the runner before each sample: a sample is started only while
the money spent, plus what the samples in flight can still cost, plus what it can cost
stays within the limit. Once a sample is refused no further sample starts; the rest are
recorded as not run and the run is inconclusive, never red.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from redline.config import Config, Price
from redline.running.usage import usd
from redline.vocabulary.completion import BYTES_PER_TOKEN, UNSET_MAX_TOKENS

if TYPE_CHECKING:
    from redline.running.store import RunStore
    from redline.suite.cases import Case, Suite

#: How many recent runs a case's token history is averaged over.
HISTORY_RUNS = 20
#: Chat formatting around each message (role markers), in tokens.
MESSAGE_OVERHEAD_TOKENS = 4


class Basis(StrEnum):
    HISTORY = "token history on this model"
    OTHER_MODEL = "token history on another model"
    PROMPT = "prompt length and max_tokens"


@dataclass(frozen=True)
class CaseEstimate:
    suite: str
    case_id: str
    samples: int
    input_tokens: float
    output_tokens: float
    basis: Basis
    #: US dollars per sample; None without a price.
    per_sample: float | None
    #: The most one sample can cost: its input and `max_tokens` of output (None when the
    #: suite sets no max_tokens, or without a price).
    ceiling: float | None = None

    @property
    def cost(self) -> float | None:
        return None if self.per_sample is None else self.per_sample * self.samples


@dataclass(frozen=True)
class Estimate:
    model_id: str
    price: Price | None
    cases: tuple[CaseEstimate, ...]

    @property
    def samples(self) -> int:
        return sum(c.samples for c in self.cases)

    @property
    def cost(self) -> float | None:
        """US dollars for every planned sample; None when the model has no price."""
        if self.price is None:
            return None
        return sum(c.cost or 0.0 for c in self.cases)

    @property
    def input_tokens(self) -> float:
        return sum(c.input_tokens * c.samples for c in self.cases)

    @property
    def output_tokens(self) -> float:
        return sum(c.output_tokens * c.samples for c in self.cases)

    def case(self, suite: str, case_id: str) -> CaseEstimate | None:
        for c in self.cases:
            if c.suite == suite and c.case_id == case_id:
                return c
        return None

    def describe(self) -> str:
        """One line for a terminal: the amount, the samples, and what it rests on."""
        bases = {b: sum(1 for c in self.cases if c.basis is b) for b in Basis}
        rests = ", ".join(f"{n} case(s) from {b}" for b, n in bases.items() if n)
        if self.cost is None:
            return (
                f"cost unknown: {self.model_id} has no price in the price table "
                f"({self.samples} sample(s), about {self.input_tokens:,.0f} input and "
                f"{self.output_tokens:,.0f} output tokens)"
            )
        bound = " (an upper bound)" if bases[Basis.PROMPT] else ""
        return (
            f"estimated cost {usd(self.cost)}{bound} for {self.samples} sample(s) on "
            f"{self.model_id}: about {self.input_tokens:,.0f} input and "
            f"{self.output_tokens:,.0f} output tokens ({rests})"
        )


def _prompt_tokens(text: str) -> float:
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS


def estimate_cost(
    store: RunStore | None,
    config: Config,
    model_id: str,
    planned: Sequence[tuple[Suite, Case, int]],
    *,
    batched: bool = False,
) -> Estimate:
    """The estimated cost of running each (suite, case) its number of samples on `model_id`
    (`batched`: at the price of the provider's batch API)."""
    price = config.price(model_id)
    if price is not None and batched:
        price = price.batched()
    own: dict[tuple[str, str], tuple[int, float, float, float, float]] = {}
    other: dict[tuple[str, str], tuple[int, float, float, float, float]] = {}
    if store is not None:
        own = store.token_history(model_id, HISTORY_RUNS)
        missing = any((case.suite, case.id) not in own for _, case, _ in planned)
        if missing:
            other = store.token_history(None, HISTORY_RUNS)
    cases: list[CaseEstimate] = []
    for suite, case, samples in planned:
        key = (case.suite, case.id)
        cached = written = 0.0
        if key in own:
            _, tokens_in, tokens_out, cached, written = own[key]
            basis = Basis.HISTORY
        elif key in other:
            _, tokens_in, tokens_out, cached, written = other[key]
            basis = Basis.OTHER_MODEL
        else:
            system, user = suite.render(case)
            turns = suite.turns(case)
            sent = [system, *(m.text for m in turns)] if turns else [system, user]
            sent += [json.dumps(dict(t.parameters)) + t.description for t in suite.tools]
            tokens_in = sum(_prompt_tokens(text) for text in sent)
            tokens_out = float(suite.max_tokens or UNSET_MAX_TOKENS)
            if case.plays_loop:  # at most max_steps requests, each reading the prompt again
                tokens_in, tokens_out = tokens_in * case.max_steps, tokens_out * case.max_steps
            basis = Basis.PROMPT
        per_sample = ceiling = None
        if price is not None:
            per_sample = price.cost_of(tokens_in, tokens_out, cached, written)
            if suite.max_tokens is not None:
                most_out = max(tokens_out, suite.max_tokens)
                ceiling = price.cost_of(tokens_in, most_out, cached, written)
        cases.append(
            CaseEstimate(
                case.suite, case.id, samples, tokens_in, tokens_out, basis, per_sample, ceiling
            )
        )
    return Estimate(model_id, price, tuple(cases))


class Budget:
    """The money a run may spend, checked before each sample starts (thread-safe).

    Each sample in flight holds a reservation of the most it can cost (its input and
    `max_tokens` of output; the estimate when the suite sets no max_tokens), so the run
    stops with less than one sample's worth left instead of going over.
    """

    def __init__(self, limit: float, estimate: Estimate) -> None:
        self.limit = limit
        self.estimate = estimate
        self.spent = 0.0
        self.stopped = False
        self._reserved = 0.0
        self._lock = threading.Lock()

    def _reservation(self, suite: str, case_id: str) -> float:
        case = self.estimate.case(suite, case_id)
        if case is None:
            return 0.0
        return case.ceiling if case.ceiling is not None else case.per_sample or 0.0

    def admit(self, suite: str, case_id: str) -> float | None:
        """Reserve what one sample can cost and return it; None (and stop for good) when
        that would take the run over the limit."""
        reservation = self._reservation(suite, case_id)
        with self._lock:
            if self.stopped or self.spent + self._reserved + reservation > self.limit:
                self.stopped = True
                return None
            self._reserved += reservation
            return reservation

    def settle(self, suite: str, case_id: str, cost: float | None, reserved: float) -> None:
        """Replace a finished sample's reservation by what it cost (the reservation when
        the cost is unknown)."""
        with self._lock:
            self._reserved = max(0.0, self._reserved - reserved)
            self.spent += reserved if cost is None else cost

    def record(self, not_run: dict[str, int]) -> dict[str, Any]:
        """What the run keeps about its budget (in its recorded arguments)."""
        return {
            "limit_usd": self.limit,
            "spent_usd": round(self.spent, 10),
            "stopped": self.stopped,
            "not_run": sum(not_run.values()),
            "not_run_by_case": dict(sorted(not_run.items())),
        }


def budget_note(args: Mapping[str, Any]) -> str | None:
    """The sentence a stopped run shows, from its recorded arguments; None if not stopped."""
    info = args.get("budget")
    if not isinstance(info, dict) or not info.get("stopped"):
        return None
    limit, spent = usd(float(info["limit_usd"])), usd(float(info["spent_usd"]))
    return (
        f"budget of {limit} reached (spent {spent}): {info['not_run']} sample(s) "
        "not run, so the run is inconclusive, not red"
    )
