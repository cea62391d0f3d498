"""Samples of one prompt follow each other on one model copy; other prompts use the rest."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from redline.providers.local_slots import Copies


def _run(
    copies: Copies, keys: list[str], hold_s: dict[str, float] | None = None
) -> list[tuple[str, str, float]]:
    """Each key takes a turn (arriving in this order) and holds its slot `hold_s[key]`
    (default 0.1 s); returns (key, server, start time) in start order."""
    starts: list[tuple[str, str, float]] = []
    finished: list[str] = []
    lock = threading.Lock()

    def sample(key: str) -> None:
        with copies.turn(key) as server:
            with lock:
                starts.append((key, server, time.monotonic()))
            time.sleep((hold_s or {}).get(key, 0.1))
        finished.append(key)

    with ThreadPoolExecutor(len(keys)) as pool:
        for n, key in enumerate(keys, 1):
            pool.submit(sample, key)
            while copies.in_hand + len(finished) < n:  # in line before the next arrives
                time.sleep(0.001)
    return starts


def test_a_prompt_is_read_by_one_copy_while_other_prompts_use_the_other() -> None:
    keys, hold_s = ["A", "B", "A", "C", "A"], {"B": 0.15, "C": 0.3}
    starts = _run(Copies(["first", "second"], slots_each=1), keys, hold_s)

    servers = {key: {server for k, server, _ in starts if k == key} for key in "ABC"}
    assert servers == {"A": {"first"}, "B": {"second"}, "C": {"second"}}


def test_a_freed_slot_goes_to_the_next_sample_of_the_prompt_it_just_read() -> None:
    starts = _run(Copies(["only"], slots_each=1), ["A", "B", "A", "C"])

    assert [key for key, _, _ in starts] == ["A", "A", "B", "C"]


def test_one_prompt_alone_still_uses_every_copy() -> None:
    starts = _run(Copies(["first", "second"], slots_each=2), ["A"] * 4)

    assert [server for *_, server, _ in starts][:2] == ["first", "second"]
