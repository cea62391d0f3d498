"""Values that must stay on one line: an HTTP header value, a key, a version string."""

from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"[\r\n\0]")


def breaks_line(value: str) -> bool:
    """Whether `value` holds a CR, LF or NUL: sent in a header, it would end that header
    and start another (or a whole second request)."""
    return _LINE_BREAK.search(value) is not None
