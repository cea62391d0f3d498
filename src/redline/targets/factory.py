"""Build the provider that calls a suite's target, checking what it needs before any call."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from redline.config import ModelRef
from redline.errors import ConfigError, UsageError
from redline.providers.base import Provider
from redline.targets.base import UNPINNED, pinned, unpinned
from redline.targets.spec import TargetKind, TargetSpec, env_names

__all__ = ["UNPINNED", "make_target", "suites_target", "unpinned"]


def make_target(
    spec: TargetSpec,
    model: ModelRef | None,
    concurrency: int,
    env: Mapping[str, str] | None = None,
) -> Provider:
    """The provider for `spec`; ConfigError naming each environment variable it needs."""
    env = os.environ if env is None else env
    model = None if model is None else pinned(model)
    written = [*spec.env.values(), *(spec.http.headers.values() if spec.http else ())]
    missing = sorted({n for v in written for n in env_names(v) if n not in env})
    if missing:
        raise ConfigError(
            f"target {spec.label} reads {', '.join('$' + n for n in missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not set: set "
            f"{'it' if len(missing) == 1 else 'them'} in the environment"
        )
    if spec.kind is TargetKind.PYTHON:
        from redline.targets.python_target import PythonTarget

        return PythonTarget(spec, model, spec.workers or concurrency)
    if spec.kind is TargetKind.COMMAND:
        from redline.targets.command_target import CommandTarget

        return CommandTarget(spec, model)
    from redline.targets.http_target import HttpTarget

    return HttpTarget(spec, model, env)


def suites_target(suites: Sequence[object]) -> TargetSpec | None:
    """The one target a run's suites name (None: they run on a model); UsageError when
    they name different targets or mix targets and models."""
    targets = [getattr(s, "target", None) for s in suites]
    if all(t is None for t in targets):
        return None
    if any(t != targets[0] for t in targets):
        raise UsageError(
            "these suites are answered by different targets (or some by a model); "
            "run them separately"
        )
    return targets[0]
