"""The engine's floors: every import runs down, bar a few named ones, and none runs in a circle.

The order below is the one written statement of the package's layers. A module may import
anything on its own floor or below; an import that runs back up to a higher floor couples a
lower layer to one that builds on it. The scan reads every `import` in every module of
`src/redline` (inside functions and `if TYPE_CHECKING:` blocks too), so a lazy import does
not hide an arrow.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "src" / "redline"

#: Lowest floor first. A name is a top-level module or subpackage of `redline`; entry points
#: (`__main__` modules) stand above every floor.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("vocabulary", "errors", "textsafe", "openmp", "machine", "text", "version"),
    ("presentation", "gitio", "transcript"),
    ("casemodel",),
    ("documents",),
    ("config", "provider_options", "redaction", "proxies", "httpio"),
    ("providers", "targets"),
    ("judge",),
    ("semantic",),
    ("assertions",),
    ("suite", "intake"),
    ("running",),
    ("deciding", "ci"),
    ("report", "guard", "pytest_plugin", "reference"),
    ("cli", "apps"),
    ("__init__",),
)
#: How many imports may still run back up a floor (each listed by the failing assertion).
MAX_BACK_ARROWS = 9

FLOOR = {name: i for i, names in enumerate(LAYERS) for name in names}
TOP = len(LAYERS)


def _module(path: Path) -> str:
    parts = list(path.relative_to(ENGINE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module(p): p for p in sorted(ENGINE.rglob("*.py"))}


def _imports(module: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """Each engine module `module` imports, with the line: `from a import b` names a.b
    when b is a module itself."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name in known]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if not base.startswith("redline"):
                continue
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            found += [(name, node.lineno) for name in subs or [base] if name in known]
    return found


def _graph() -> dict[str, list[tuple[str, int]]]:
    modules = _modules()
    known = set(modules)
    return {m: _imports(m, p, known) for m, p in modules.items()}


def _floor(module: str) -> int:
    parts = module.split(".")
    if parts[-1] == "__main__":
        return TOP
    name = parts[1] if len(parts) > 1 else "__init__"
    assert name in FLOOR, f"{module} belongs to no floor: add {name!r} to LAYERS"
    return FLOOR[name]


def test_every_engine_module_has_a_floor() -> None:
    for module in _modules():
        _floor(module)


def test_imports_run_down_the_floors() -> None:
    back = [
        f"{src}:{line} imports {dst} (floor {_floor(src)} -> {_floor(dst)})"
        for src, targets in _graph().items()
        for dst, line in targets
        if _floor(dst) > _floor(src)
    ]
    assert len(back) <= MAX_BACK_ARROWS, "\n".join(back)


def test_no_module_imports_itself_through_others() -> None:
    graph = {m: sorted({d for d, _ in targets if d != m}) for m, targets in _graph().items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in graph:
        if module not in index:
            visit(module)
    assert circles == []


def test_no_package_pair_imports_each_other() -> None:
    tops: defaultdict[str, set[str]] = defaultdict(set)
    for src, targets in _graph().items():
        for dst, _ in targets:
            a, b = (m.split(".")[1] if "." in m else "__init__" for m in (src, dst))
            if a != b and not src.endswith("__main__"):
                tops[a].add(b)
    mutual = sorted({tuple(sorted((a, b))) for a in tops for b in tops[a] if a in tops.get(b, ())})
    assert mutual == []


def test_the_engine_never_imports_the_app() -> None:
    app_imports = [
        f"{src}:{line}"
        for src, path in _modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for line in [node.lineno]
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
        if name.split(".")[0] in {"redline_tui", "textual"}
    ]
    assert app_imports == []
