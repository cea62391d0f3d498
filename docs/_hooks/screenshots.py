"""MkDocs hook: the triage app's screenshots are its snapshot tests' SVGs.

The snapshots under tests/tui/__snapshots__ are what the app draws, checked on every test
run; the site shows those very files as `screenshots/<name>.svg` (the wide 140x40 ones),
so a screenshot in the docs can never show an app that no longer exists.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

SNAPSHOTS = Path(__file__).resolve().parents[2] / "tests" / "tui" / "__snapshots__"
#: `test_screen_snapshot[run-home-red-run-@140x40].raw` → `run-home-red-run`.
_NAME = re.compile(r"^test_\w+\[(?P<name>[a-z0-9-]+?)(?:-@(?P<size>\d+x\d+))?\]\.raw$")
SIZE = "140x40"


def screenshots() -> dict[str, Path]:
    """Screenshot name → the snapshot file it is rendered from."""
    found: dict[str, Path] = {}
    for path in sorted(SNAPSHOTS.glob("*/*.raw")):
        match = _NAME.match(path.name)
        if match and match["size"] in (None, SIZE):
            found[match["name"]] = path
    return found


def on_files(files: Files, config: Any) -> Files:
    for name, path in screenshots().items():
        files.append(File.generated(config, f"screenshots/{name}.svg", abs_src_path=str(path)))
    return files
