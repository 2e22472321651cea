"""Writes megengine_1_13.json: the public signatures of MegEngine 1.13.0, taken once.

Run with the interpreter that has the real MegEngine installed (never in CI)::

    <megengine-venv>/bin/python python/test/signatures/make_table.py

The table maps a dotted name (``megengine.functional.nn.cross_entropy``,
``megengine.module.Conv2d.__init__``) to its parameters, each ``[name, kind, default]`` with the
kind as ``inspect.Parameter.kind`` names it and the default's repr (null when there is none).
``test_signatures.py`` compares NeoMeg's signature of every name it has against this table.
Things MegEngine implements in C (pybind11 functions, the C half of Tensor) have no signature and
are left out, but for pybind11 functions that take no parameters (their docstring says so).
"""

import enum
import importlib
import inspect
import json
import os
import re
import sys

MODULES = [
    "megengine",
    "megengine.functional",
    "megengine.functional.elemwise",
    "megengine.functional.loss",
    "megengine.functional.math",
    "megengine.functional.metric",
    "megengine.functional.nn",
    "megengine.functional.tensor",
    "megengine.functional.vision",
    "megengine.module",
    "megengine.module.init",
    "megengine.optimizer",
    "megengine.autodiff",
    "megengine.data",
    "megengine.data.collator",
    "megengine.data.dataset",
    "megengine.data.sampler",
    "megengine.data.transform",
    "megengine.random",
    "megengine.distributed",
    "megengine.distributed.functional",
    "megengine.jit",
    "megengine.amp",
    "megengine.quantization",
    "megengine.module.qat",
    "megengine.module.quantized",
    "megengine.functional.quantized",
    "megengine.hub",
    "megengine.utils.module_stats",
    "megengine.utils.network",
    "megengine.utils.profiler",
    "megengine.traced_module",
    "megengine.dtr",
    "megengine.optimizer.lr_scheduler",
    "megengine.data.transform.vision",
]

# Dunder methods that are part of a class's public contract; other underscored names are not.
DUNDERS = ("__init__", "__call__", "__or__", "__ror__", "__enter__", "__exit__", "__getitem__")


# Classes whose __init__(self, *args, **kwargs) only forwards to the base's: the base's
# parameters are what a caller passes (RNN also pops ``nonlinearity`` from kwargs).
FORWARDING_INITS = ("megengine.module.RNN", "megengine.module.LSTM")


def default_repr(value):
    """A repr that does not depend on the process (no addresses)."""
    if value is inspect.Parameter.empty:
        return None
    if inspect.isclass(value) or inspect.isfunction(value) or inspect.isbuiltin(value):
        return f"<{value.__module__}.{value.__qualname__}>"
    if inspect.ismodule(value):
        return f"<module {value.__name__}>"
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


def pybind11_without_parameters(obj):
    """[] for a pybind11 function that takes nothing (its docstring starts ``name() -> ...``,
    as ``distributed.group_start``'s does), else None."""
    doc = (getattr(obj, "__doc__", None) or "").lstrip()
    name = getattr(obj, "__name__", None)
    if name and doc.split("\n", 1)[0].startswith(f"{name}() -> "):
        return []
    return None


def describe(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        # Implemented in C: no signature to pin, but for a pybind11 function without parameters.
        return pybind11_without_parameters(obj)
    return [[p.name, p.kind.name, default_repr(p.default)] for p in sig.parameters.values()]


def public_names(module):
    names = getattr(module, "__all__", None)
    if names is not None:
        return sorted(set(names))
    names = [n for n in dir(module) if not n.startswith("_")]
    if not hasattr(module, "__path__"):
        # A plain module without __all__ (module.init): its own definitions, not its imports.
        names = [
            n for n in names if getattr(getattr(module, n), "__module__", "") == module.__name__
        ]
    return sorted(names)


def is_megengine(obj):
    return (getattr(obj, "__module__", None) or "").startswith("megengine")


def class_members(cls, pinned_classes):
    """The methods of ``cls`` to pin: its own, and those of bases that are not pinned themselves
    (so Tensor gets the array methods of its private mixin, but Linear does not repeat Module's).
    """
    seen = {}
    for base in reversed(cls.__mro__):
        if base is object or not is_megengine(base):
            continue
        if base is not cls and base in pinned_classes:
            for name in list(seen):
                if name in base.__dict__:
                    del seen[name]
            continue
        for name, attr in base.__dict__.items():
            if name.startswith("_") and name not in DUNDERS:
                continue
            if isinstance(attr, (staticmethod, classmethod)) or inspect.isfunction(attr):
                seen[name] = base
    # __init__ is pinned on every class, wherever it is defined: ReLU(name) is Module's.
    if "__init__" not in seen and cls.__init__ is not object.__init__:
        seen["__init__"] = cls
    return sorted(seen)


def main():
    import megengine

    table = {}
    classes = []
    for modname in MODULES:
        module = importlib.import_module(modname)
        for name in public_names(module):
            try:
                obj = getattr(module, name, None)
            except AssertionError:  # distributed.backend: a module property that needs a group
                continue
            if obj is None or not is_megengine(obj):
                continue
            if inspect.isclass(obj):
                classes.append((f"{modname}.{name}", obj))
            elif callable(obj):
                sig = describe(obj)
                if sig is not None:
                    table[f"{modname}.{name}"] = sig
    pinned = {cls for _, cls in classes}
    for path, cls in classes:
        for member in class_members(cls, pinned):
            fn = getattr(cls, member)
            if member == "__init__" and path in FORWARDING_INITS:
                fn = cls.__mro__[1].__init__
            sig = describe(fn)
            if sig is not None:
                table[f"{path}.{member}"] = sig
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "megengine_1_13.json")
    with open(path, "w") as f:
        # One entry a line, so that a regenerated table diffs readably.
        version = json.dumps(megengine.__version__)
        f.write(f'{{"megengine_version": {version},\n"signatures": {{\n')
        lines = [f"{json.dumps(k)}: {json.dumps(table[k])}" for k in sorted(table)]
        f.write(",\n".join(lines))
        f.write("\n}}\n")
    print(f"{len(table)} signatures -> {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
