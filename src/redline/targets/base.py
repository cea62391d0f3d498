"""What every kind of target shares: its spec, the model it is told to use, its identity."""

from __future__ import annotations

from collections.abc import Mapping

from redline.config import ModelRef
from redline.targets.spec import TargetSpec

#: The provider part of the model of a run whose target chooses its own model.
UNPINNED = "target"


def unpinned(spec: TargetSpec) -> ModelRef:
    """The model a run records when the target chooses (and reports) its own."""
    return ModelRef(alias=UNPINNED, provider=UNPINNED, name=spec.label)


def pinned(model: ModelRef) -> ModelRef | None:
    """The suite's pinned model, None when the target chooses its own."""
    return None if model.provider == UNPINNED else model


def identity(spec: TargetSpec, model: ModelRef | None) -> str:
    """The model identity a run records: the pinned id, else `target:<kind>:<ref>`."""
    return model.id if model is not None else unpinned(spec).id


class TargetProvider:
    """Base of the targets: a `Provider` whose answers come from the team's own code.

    `model` is the pinned model the suite names (None: the app chooses and reports it);
    the target is told its id through its declared way of choosing one (`model_env`).
    """

    max_parallel: int | None = None

    def __init__(self, spec: TargetSpec, model: ModelRef | None) -> None:
        self.spec = spec
        self.model = model

    def identity(self) -> str:
        return identity(self.spec, self.model)

    @property
    def model_name(self) -> str:
        return self.model.name if self.model is not None else ""

    def model_env(self) -> Mapping[str, str]:
        """The environment that tells the target its model (empty when it chooses)."""
        if self.spec.model_env and self.model is not None:
            return {self.spec.model_env: self.model.name}
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.label!r})"
