"""redline: prompt-regression testing with honest rates and kept evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from redline.version import __version__

if TYPE_CHECKING:
    from redline.suite.behavior import assert_behavior, check_behavior

#: Loaded on first use so `import redline` (the CLI) stays light.
_LAZY = ("assert_behavior", "check_behavior")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from redline.suite import behavior

        return getattr(behavior, name)
    raise AttributeError(f"module 'redline' has no attribute {name!r}")


__all__ = ["__version__", "assert_behavior", "check_behavior"]
