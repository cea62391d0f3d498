"""Benchmark: the guard's pre-commit hook on a large suite repository.

Builds a repository of 500 cases (5 suites × 100, with fixtures and a schema), stages a
commit touching 50 files (49 case edits, half loosening and half tightening, and one
prompt change, which makes the guard scan every case for the files it reads), installs
the hook with `redline guard install`, and times the hook as git runs it, then the same
check through `python -m redline.guard --staged` and `redline guard --staged`.
Target: under 0.5 s through the installed hook.

    uv run python bench/bench_guard.py [--cases 500] [--touch 50] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from redline.guard import install_hook

TARGET_S = 0.5
SUITES = 5


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _case(index: int, limit: int) -> dict[str, object]:
    return {
        "id": f"{index:04d}-incident",
        "provenance": {"ticket": f"SUP-{index}", "reported": "2026-01-05", "note": "bench"},
        "vars": {"question": f"Question {index}?", "ticket": f"T-{index}"},
        "assert": [
            {"type": "contains", "value": "Ticket {{ticket}}"},
            {"type": "not-contains", "value": "As an AI"},
            {"type": "max-chars", "value": limit},
            {"type": "mentions", "value": "refund", "threshold": 0.6},
            {"type": "regex", "value": "\\d+ EUR"},
            *(
                [{"type": "grounded-in", "value": "file://fixtures/policy.txt"}]
                if index % 10 == 0
                else []
            ),
            *(
                [{"type": "is-json", "schema": "file://schemas/reply.json"}]
                if index % 25 == 0
                else []
            ),
        ],
    }


def build(root: Path, cases: int, touch: int) -> None:
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.name", "Bench")
    _git(root, "config", "user.email", "bench@example.invalid")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bench"\nversion = "1"\n\n'
        '[tool.redline.models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n'
    )
    per_suite = cases // SUITES
    paths = []
    for s in range(SUITES):
        folder = root / "cases" / f"suite{s}"
        (folder / "fixtures").mkdir(parents=True)
        (folder / "schemas").mkdir()
        (folder / "system.md").write_text(f"You are support agent {s}.\n")
        (folder / "fixtures" / "policy.txt").write_text("Refunds within 30 days.\n")
        (folder / "schemas" / "reply.json").write_text('{"type": "object", "required": ["a"]}')
        suite = {
            "name": f"suite{s}",
            "prompt": {"system": "system.md", "user": "{{question}}"},
            "model": "local",
            "samples": 5,
        }
        (folder / "suite.yaml").write_text(yaml.safe_dump(suite))
        for i in range(per_suite):
            index = s * per_suite + i
            path = folder / f"{index:04d}-incident.yaml"
            path.write_text(yaml.safe_dump(_case(index, 400), sort_keys=False))
            paths.append(path)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    _git(root, "gc", "-q")
    for n, path in enumerate(paths[: touch - 1]):
        index = int(path.name[:4])
        path.write_text(yaml.safe_dump(_case(index, 800 if n % 2 else 300), sort_keys=False))
    prompt = root / "cases" / "suite0" / "system.md"
    prompt.write_text(prompt.read_text() + "Answer in one sentence.\n")
    _git(root, "add", "-A")


def timed(
    command: list[str], root: Path, repeat: int, env: dict[str, str]
) -> tuple[float, float, int]:
    """Median wall seconds, median CPU seconds (the command and its children), exit code."""
    walls, cpus = [], []
    code = 0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=root, capture_output=True, check=False, env=env)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        code = done.returncode
    return statistics.median(walls), statistics.median(cpus), code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--touch", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--compare-src",
        type=Path,
        help="also time `python -m redline.guard --staged` from another checkout's src/ "
        "(e.g. main before this change), for a ratio measured in the same run",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="redline-bench-guard-"))
    try:
        build(root, args.cases, args.touch)
        hook = install_hook(root, python=sys.executable)
        env_python = sys.executable
        console = shutil.which("redline", path=str(Path(env_python).parent)) or "redline"
        rows = [
            ("installed pre-commit hook", ["sh", str(hook)]),
            ("python -m redline.guard --staged", [env_python, "-m", "redline.guard", "--staged"]),
            ("redline guard --staged", [console, "guard", "--staged"]),
            ("python startup alone", [env_python, "-c", "pass"]),
        ]
        if args.compare_src is not None:
            other = f"import sys; sys.path.insert(0, {str(args.compare_src)!r}); import runpy; "
            other += "sys.argv = ['redline', '--staged']; "
            other += "runpy.run_module('redline.guard', run_name='__main__')"
            rows.append((f"same from {args.compare_src}", [env_python, "-c", other]))
        print(
            f"guard on {args.cases} cases, a staged commit touching {args.touch} files "
            f"(median of {args.repeat}, {os.cpu_count()} CPUs)"
        )
        print(f"  load average before: {os.getloadavg()[0]:.1f} (wall time grows with it)")
        # An installed package has its bytecode cached; a process told not to write any
        # (PYTHONDONTWRITEBYTECODE) compiles every module on every start. Both are shown.
        cold = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
        cold["PYTHONDONTWRITEBYTECODE"] = "1"
        warm = {k: v for k, v in cold.items() if k != "PYTHONDONTWRITEBYTECODE"}
        warm["PYTHONPYCACHEPREFIX"] = str(root.parent / f"{root.name}-pycache")
        for _label, command in rows:
            subprocess.run(command, cwd=root, capture_output=True, check=False, env=warm)
        for cache, env in (("bytecode cached", warm), ("no bytecode cache", cold)):
            print(f"  -- {cache}")
            for label, command in rows:
                wall, cpu, code = timed(command, root, args.repeat, env)
                print(
                    f"  {label:<34} wall {wall * 1000:6.0f} ms ({wall / TARGET_S:.2f}× target)"
                    f"  CPU {cpu * 1000:6.0f} ms ({cpu / TARGET_S:.2f}× target)  exit {code}"
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(root.parent / f"{root.name}-pycache", ignore_errors=True)


if __name__ == "__main__":
    main()
