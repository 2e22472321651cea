"""The operator generators' granularity: an edit to one definition group changes only that
group's generated headers and the tables of every operator, and regenerating without a change
rewrites nothing (so the build recompiles nothing: docs/architecture.md, "What is generated where")."""

import os
import re
import shutil

import pytest
from generators import ROOT, emit_dnn, emit_op_defs


def _generate(defs, out):
    dnn, view = defs / "dnn", defs / "view"
    emit_dnn.main(["emit_dnn.py", str(dnn), str(out)])
    emit_op_defs.main(["emit_op_defs.py", str(dnn), str(view), str(out)])
    return {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}


@pytest.fixture
def defs(tmp_path):
    shutil.copytree(ROOT / "dnn/ops/defs", tmp_path / "defs/dnn")
    shutil.copytree(ROOT / "src/ops/defs", tmp_path / "defs/view")
    return tmp_path / "defs"


def _add_op(defs, group, name):
    """Appends a copy of the group's first operator under a new name."""
    p = defs / "dnn" / f"{group}.py"
    s = p.read_text()
    i = s.index("op(\n")
    j = s.index("\n)\n", i) + 3
    old = re.search(r'op\(\n\s+"(\w+)"', s[i:j]).group(1)
    p.write_text(s + "\n" + s[i:j].replace(f'"{old}"', f'"{name}"', 1))


def _changed(a, b):
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


@pytest.mark.parametrize("group", ["vision", "convolution"])
def test_adding_an_op_changes_only_its_group_and_the_tables(defs, tmp_path, group):
    before = _generate(defs, tmp_path / "a")
    _add_op(defs, group, "DummyOp")
    after = _generate(defs, tmp_path / "b")
    tables = {
        "neomeg/dnn/op_types.h",
        "neomeg/dnn/op_types.cpp",
        "neomeg/dnn/layout_follows.h",
        "neomeg/op/op_ids.h",
        "neomeg/op/op_ids.cpp",
        "neomeg/op/op_defs.cpp",
    }
    changed = _changed(before, after)
    assert {f"neomeg/dnn/operators/{group}.h", f"neomeg/op/defs/{group}.h"} <= changed
    assert changed - tables == {f"neomeg/dnn/operators/{group}.h", f"neomeg/op/defs/{group}.h"}
    assert "class DummyOp : public OperatorBase" in after[f"neomeg/dnn/operators/{group}.h"]


def test_a_param_default_changes_only_its_groups_params(defs, tmp_path):
    before = _generate(defs, tmp_path / "a")
    p = defs / "dnn/pooling.py"
    old = 'field("window", "int32[]", [2, 2],'
    assert old in p.read_text()
    p.write_text(p.read_text().replace(old, 'field("window", "int32[]", [3, 3],', 1))
    after = _generate(defs, tmp_path / "b")
    assert _changed(before, after) == {"neomeg/dnn/params/pooling.h"}


def test_regenerating_unchanged_definitions_rewrites_nothing(defs, tmp_path):
    out = tmp_path / "a"
    _generate(defs, out)
    old = 1_000_000_000
    for p in out.rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))
    _generate(defs, out)
    assert [p for p in out.rglob("*") if p.is_file() and p.stat().st_mtime != old] == []


def test_each_class_carries_its_enum_value(defs, tmp_path):
    files = _generate(defs, tmp_path / "a")
    enum = dict(
        re.findall(r"^    (\w+) = (0x[0-9a-f]+),$", files["neomeg/dnn/op_types.h"], re.MULTILINE)
    )
    consts = {}
    for path, text in files.items():
        if path.startswith("neomeg/dnn/operators/"):
            for name, value in re.findall(
                r"class (\w+) : public OperatorBase \{.*?static_cast<OpType>\((0x[0-9a-f]+)\)",
                text,
                re.DOTALL,
            ):
                consts[name] = value
    assert consts == enum
    assert len(set(enum.values())) == len(enum)
    ids = dict(
        re.findall(r"^    (\w+) = (0x[0-9a-f]+),$", files["neomeg/op/op_ids.h"], re.MULTILINE)
    )
    assert {k: ids[k] for k in enum} == enum  # a dnn op's OpId is its OpType
