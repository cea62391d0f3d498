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


def test_two_prompts_on_two_copies_use_both_copies_before_a_second_slot() -> None:
    starts = _run(Copies(["first", "second"], slots_each=2), ["A", "B"], {"A": 0.2, "B": 0.2})

    assert {key: server for key, server, _ in starts} == {"A": "first", "B": "second"}


def test_a_freed_slot_prefers_a_prompt_with_the_system_prompt_it_just_read() -> None:
    copies = Copies(["only"], slots_each=1)
    order: list[str] = []

    def sample(key: str, family: str) -> None:
        with copies.turn(key, family):
            order.append(key)
            time.sleep(0.2 if key == "A" else 0.01)

    with ThreadPoolExecutor(3) as pool:
        for n, (key, family) in enumerate([("A", "support"), ("X", "invoice"), ("B", "support")]):
            pool.submit(sample, key, family)
            while copies.in_hand < n + 1:  # in line before the next arrives
                time.sleep(0.001)

    # B shares A's system prompt (the start of the slot's cached context): it goes before
    # X, which arrived earlier.
    assert order == ["A", "B", "X"]


def test_once_every_copy_is_busy_a_free_slot_takes_a_running_prompts_sample() -> None:
    # Copy "first" runs A (long); "second" runs B, then is busy with B's next sample.
    # The third A would wait for A's slot; with a slot free and nothing else to do, it
    # starts at once on a free slot instead (reading A again beats an idle slot).
    keys, hold = ["A", "B", "B", "A"], {"A": 0.6, "B": 0.6}
    starts = _run(Copies(["first", "second"], slots_each=2), keys, hold)

    first_start = starts[0][2]
    late_a = [t for key, _, t in starts if key == "A"][1]
    assert late_a - first_start < 0.3
