"""What a generated module may import (torch, triton, the standard library; its test also
pytest and numpy), checked by test_cli (every variant) and test_vendoring (a vendored copy)."""

import ast

STDLIB = {
    "gc",
    "importlib",
    "math",
    "os",
    "pathlib",
    "subprocess",
    "sys",
    "threading",
    "typing",
    "warnings",
    "weakref",
}


def allowed_imports(file_name: str) -> set:
    """Top-level packages ``file_name`` (a module or its test_*.py) may import."""
    return (
        {"torch", "triton"}
        | STDLIB
        | ({"pytest", "numpy"} if file_name.startswith("test_") else set())
    )


def top_level_imports(text: str) -> set:
    """Top-level packages the source ``text`` imports, anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module.split(".")[0])
    return names
