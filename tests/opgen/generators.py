"""The operator generators, imported from their source files for the tests beside this one:
``model`` (the definition DSL), ``emit_dnn`` and ``emit_op_defs``, and ``ROOT``, the repository."""

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "dnn" / "ops" / "opgen"))
import model


def _load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


emit_dnn = _load(ROOT / "dnn/ops/opgen/emit_dnn.py")
emit_op_defs = _load(ROOT / "src/opgen/emit_op_defs.py")

__all__ = ["ROOT", "emit_dnn", "emit_op_defs", "model"]
