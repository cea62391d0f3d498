"""Which seed each sample asks for, and what frozen seeds mean for the evidence."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redline.config import Config, ModelRef
    from redline.suite.cases import Suite
    from redline.vocabulary.records import RunRecord


def frozen_seeds(suites: Sequence[Suite]) -> dict[str, int]:
    """Suite name → base seed, for the suites that froze their seeds."""
    return {s.name: s.seed for s in suites if s.seed is not None}


def sample_seed(
    run_id: str, suite: str, case_id: str, index: int, *, frozen: int | None = None
) -> int:
    """A distinct seed per sample (31 bits: every server accepts it).

    Fixed within a run, so a resumed run asks for exactly the samples it lacks; different
    between runs, so a rerun or tomorrow's nightly draws new samples instead of replaying
    today's outputs on a seeded backend (which would make two runs look like one). A suite
    with `seed: frozen` (or a base integer) asks for that replay on purpose: the seed then
    depends on the case and sample index only, the same in every run.
    """
    scope = run_id if frozen is None else f"frozen:{frozen}"
    key = f"{scope}\x00{suite}\x00{case_id}\x00{index}"
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


#: The run argument naming the suites whose seeds were frozen (suite → base seed).
FROZEN_SEEDS_ARG = "frozen_seeds"
#: Provider types whose API has no seed parameter: a frozen seed cannot repeat their answers.
_SEEDLESS_PROVIDERS = frozenset({"anthropic"})


def seed_warning(suites: Sequence[Suite], config: Config, model: ModelRef) -> str | None:
    """What to tell a user who froze seeds on a backend that cannot honour them."""
    frozen = list(frozen_seeds(suites))
    if not frozen:
        return None
    kind = config.provider(model.provider).type
    if kind not in _SEEDLESS_PROVIDERS:
        return None
    return (
        f"{', '.join(frozen)}: `seed: frozen` has no effect on {model.id}: the {kind} API "
        "takes no seed, so every run still draws new answers"
    )


def frozen_together(a: RunRecord, b: RunRecord) -> bool:
    """Two runs whose samples are the same draws: frozen seeds, same suites, same model.

    On a seeded backend such runs repeat each other's answers, so their pass counts are not
    independent evidence and no significance test between them means anything.
    """
    fa = a.args.get(FROZEN_SEEDS_ARG)
    fb = b.args.get(FROZEN_SEEDS_ARG)
    return bool(fa) and fa == fb and a.model_id == b.model_id


__all__ = ["FROZEN_SEEDS_ARG", "frozen_seeds", "frozen_together", "sample_seed", "seed_warning"]
