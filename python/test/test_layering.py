"""The Python package keeps the layering of the C++ one: ``megengine.core`` (the extension,
tensors, generated ops, dtype rules) never imports the layers above it (``functional``,
``module``, ``optimizer``, ...). A layer above that core needs registers itself instead
(``array_method.set_matmul``)."""

import ast
from pathlib import Path

import megengine

PACKAGE = Path(megengine.__file__).parent


def _absolute(node, path):
    if not isinstance(node, ast.ImportFrom) or node.level == 0:
        return [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    base = parts[: len(parts) - node.level]
    return [".".join(base + ([node.module] if node.module else []))]


def imports_of(path):
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):  # function-level imports count too
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out += _absolute(node, path)
    return out


def test_core_imports_nothing_above_it():
    bad = []
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        for name in imports_of(path):
            if name.startswith("megengine.") and not name.startswith("megengine.core"):
                bad.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not bad, "\n".join(bad)


def test_the_check_sees_relative_and_nested_imports():
    # The rule itself: a relative import from inside a function is resolved and caught.
    fake = PACKAGE / "core" / "tensor" / "array_method.py"
    tree = ast.parse("def f():\n    from ...functional.math import matmul\n")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert _absolute(node, fake) == ["megengine.functional.math"]
