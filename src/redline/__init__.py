"""redline: prompt-regression testing with honest rates and kept evidence."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
