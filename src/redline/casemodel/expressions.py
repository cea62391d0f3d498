"""What a `python` assertion's expression may use, checked without running it.

The expression sees `output`, `json`, `vars`, `re` and a few pure builtins; names or
attributes starting with an underscore, `str.format` tricks, imports and the walrus are
refused when the case is read (by the loader and the guard alike). This keeps case files
from reaching into the process by accident; it is not a sandbox for untrusted code.
"""

from __future__ import annotations

import ast

#: The builtins an expression may call (redline.assertions.python_expr binds them).
BUILTIN_NAMES = (
    "abs",
    "all",
    "any",
    "bool",
    "dict",
    "enumerate",
    "float",
    "int",
    "isinstance",
    "len",
    "list",
    "max",
    "min",
    "round",
    "set",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
)
#: What a `python` assertion's expression reads (a parameter may declare others: `Param.names`).
OUTPUT_NAMES = ("output", "json", "vars")
_ALWAYS = frozenset({"re", "True", "False", "None", *BUILTIN_NAMES})
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "format",
        "format_map",
        "mro",
        "gi_frame",
        "gi_code",
        "cr_frame",
        "ag_frame",
        "tb_frame",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
    }
)


def expression_problem(text: str, names: tuple[str, ...] = OUTPUT_NAMES) -> tuple[str, str] | None:
    """(message, hint) for an expression that does not parse or reaches outside what it may
    use (`names`, `re` and basic builtins); None for a usable one."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        where = f" at column {exc.offset}" if exc.offset else ""
        return (
            f"syntax error{where}: {exc.msg}",
            "write one expression, e.g. json['total_idr'] == 12500000",
        )
    refused = _refusal_of(tree, names)
    if refused is None:
        return None
    message, node = refused
    column = getattr(node, "col_offset", 0) + 1
    return (
        f"{message} (column {column} of the expression)",
        f"only {', '.join(names)}, re and basic builtins are available",
    )


def _refusal_of(tree: ast.Expression, names: tuple[str, ...]) -> tuple[str, ast.AST] | None:
    """The first construct the restricted namespace does not allow, with its node."""
    bound = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    bound |= {
        a.arg
        for n in ast.walk(tree)
        if isinstance(n, ast.arguments)
        for a in (*n.posonlyargs, *n.args, *n.kwonlyargs)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id.startswith("_"):
                return f"name {node.id!r} is not allowed", node
            if node.id not in names and node.id not in _ALWAYS and node.id not in bound:
                allowed = ", ".join((*names, "re"))
                return f"unknown name {node.id!r} (available: {allowed} and basic builtins)", node
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_") or node.attr in FORBIDDEN_ATTRIBUTES:
                return f"attribute {node.attr!r} is not allowed", node
        elif isinstance(node, ast.NamedExpr | ast.Await | ast.Yield | ast.YieldFrom):
            return f"{type(node).__name__} is not allowed", node
    return None
