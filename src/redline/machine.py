"""What this machine lets redline use."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system tells it (a CI
    container pinned to two cores of a large host has two), else every core."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity on this system (macOS, Windows)
        return os.cpu_count() or 1
