"""The terminal apps, found through their entry points so the engine never imports them.

`redline triage` and `redline label` open a Textual app that lives in another package
(`redline_tui`). The engine names each app by what it is for and loads whatever package
declares it under the `redline.apps` entry-point group: the CLI stays a client-free layer,
and a missing or broken app is a clear error rather than an ImportError.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from redline.errors import UsageError

#: The entry-point group an app package declares its apps under (pyproject.toml).
GROUP = "redline.apps"


def app(name: str) -> Callable[..., Any]:
    """The callable that opens app `name` (`triage`, `label`)."""
    found = entry_points(group=GROUP, name=name)
    for point in found:
        opener: Callable[..., Any] = point.load()
        return opener
    raise UsageError(
        f"the {name!r} app is not installed (no {GROUP!r} entry point named {name!r}); "
        "reinstall redline with `uv sync` or `uv tool install --reinstall redline`"
    )
