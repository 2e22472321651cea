"""Every public name of the megengine and megenginelite packages is documented in MegEngine's
style (a summary, Args, Returns, Examples), and every example runs."""

import doctest
import enum
import importlib
import inspect
import os
import pkgutil

import pytest

import megengine
import megenginelite

FASHION_ROOT = "/usr/share/datasets/fashion-mnist"
# The public modules: everything but megengine.core, whose names are internal.
MODULES = [megengine] + [
    importlib.import_module(m.name)
    for m in pkgutil.walk_packages(megengine.__path__, "megengine.")
    if not m.name.startswith("megengine.core")
]
# megenginelite, MegEngine Lite's Python API, ships in the same wheel and follows the same rule.
MODULES += [megenginelite] + [
    importlib.import_module(m.name)
    for m in pkgutil.walk_packages(megenginelite.__path__, "megenginelite.")
]


def public_objects():
    seen = {}
    for module in MODULES:
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                seen[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return sorted(seen.items())


@pytest.mark.parametrize(
    "name,obj", public_objects(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_docstring_style(name, obj):
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    assert "Examples:" in doc, f"{name} has no Examples: block"
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        return  # its "constructor" is Enum's lookup by value: the members are what it documents
    try:
        sig = inspect.signature(obj)
    except ValueError:  # a class of the C++ extension: its constructor has no Python signature
        assert "Args:" in doc, f"{name} documents no constructor arguments"
        return
    params = [
        p for p in sig.parameters.values() if p.name != "self" and p.kind not in (p.VAR_KEYWORD,)
    ]
    if params:
        assert "Args:" in doc, f"{name} takes arguments but documents none"
        for p in params:
            assert f"{p.name}:" in doc, f"{name} does not document argument {p.name!r}"
    if inspect.isfunction(obj):
        assert "Returns:" in doc, f"{name} has no Returns: section"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_examples_run(module):
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(module, module.__name__):
        if test.name.endswith(".FashionMNIST") and not os.path.isdir(FASHION_ROOT):
            continue  # its example reads the installed dataset
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} failing examples in {module.__name__}"
