"""Short forms the screens share."""

from __future__ import annotations

import re

_DIGEST = re.compile(r"@sha256:([0-9a-f]{12})[0-9a-f]{52}\b")


def short_model_id(model_id: str) -> str:
    """A pinned id with its file's SHA-256 cut to 12 hex digits, so a header fits 80 columns.

    `local:smollm2-135m-instruct-q4_1@sha256:b179c9523d0e6a…` → `…@sha256:b179c9523d0e`;
    `redline show` and the store keep the full digest.
    """
    return _DIGEST.sub(r"@sha256:\1", model_id)
