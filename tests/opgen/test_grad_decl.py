"""The gradient declaration of the operator definitions (``op(..., grad=Grad(...))``): what the
DSL accepts, and that the generated op classes carry exactly what each definition declares (the
facts imperative's NM_REGISTER_GRAD reads; imperative/test/grad_rules.cpp checks the rules
against them)."""

import re
import shutil

import pytest
from generators import ROOT, emit_op_defs, model


def _define(tmp_path, body):
    d = tmp_path / "defs"
    d.mkdir(parents=True)
    (d / "group.py").write_text(body)
    return model.load(d)


def _op(outputs='["dst"]', inputs='["src"]', grad=None):
    g = "" if grad is None else f"    grad={grad},\n"
    return f'op(\n    "Op",\n    "An op.",\n    inputs={inputs},\n    outputs={outputs},\n{g})\n'


@pytest.mark.parametrize(
    ("grad", "expected"),
    [
        (None, None),
        ("None", None),
        ('Grad(saves=("inputs",))', model.GradDecl(True, False, False)),
        ('Grad(saves=["outputs"])', model.GradDecl(False, True, False)),
        ('Grad(saves=("outputs", "inputs"))', model.GradDecl(True, True, False)),
        ("Grad(saves=())", model.GradDecl(False, False, False)),
    ],
)
def test_a_declaration_gives_its_facts_and_none_means_not_differentiable(tmp_path, grad, expected):
    reg = _define(tmp_path, _op(grad=grad))
    assert reg.ops["Op"].grad == expected


def test_absent_grads_is_kept_for_an_op_of_several_outputs(tmp_path):
    reg = _define(tmp_path, _op('["a", "b"]', grad='Grad(saves=("inputs",), absent_grads=True)'))
    assert reg.ops["Op"].grad == model.GradDecl(True, False, True)
    reg = _define(tmp_path / "v", _op('["*dsts"]', grad="Grad(saves=(), absent_grads=True)"))
    assert reg.ops["Op"].grad.absent_grads


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (_op(grad='Grad(saves="inputs")'), "needs a tuple"),
        (_op(grad='Grad(saves=("input",))'), "may name 'inputs' and 'outputs'"),
        (_op(grad='Grad(saves=("inputs", "inputs"))'), "each at most once"),
        (_op(grad='Grad(saves=(), absent_grads="yes")'), "is not a bool"),
        (_op(grad="Grad(saves=(), absent_grads=True)"), "absent_grads needs several outputs"),
        (_op(inputs="[]", grad="Grad(saves=())"), "has no inputs"),
        (_op(grad="True"), "neither Grad(...) nor None"),
    ],
)
def test_a_nonsensical_declaration_is_a_definition_error(tmp_path, op, message):
    with pytest.raises(model.DefinitionError, match=re.escape(message)):
        _define(tmp_path, op)


def test_saves_must_be_given(tmp_path):
    with pytest.raises(TypeError, match="saves"):
        _define(tmp_path, _op(grad="Grad()"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    dnn, view = ROOT / "dnn/ops/defs", ROOT / "src/ops/defs"
    emit_op_defs.main(["emit_op_defs.py", str(dnn), str(view), str(out)])
    reg = emit_op_defs.load(dnn, view)
    files = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    return reg, files


def _facts(init):
    """A GradDecl (or None) from a generated initializer such as {.differentiable = true}."""
    fields = dict(re.findall(r"\.(\w+) = (true|false)", init))
    if fields.get("differentiable") != "true":
        assert fields == {}, init
        return None
    return model.GradDecl(
        fields["save_inputs"] == "true",
        fields["save_outputs"] == "true",
        fields["takes_absent_grads"] == "true",
    )


def test_each_op_class_carries_its_definitions_declaration(generated):
    reg, files = generated
    got = {}
    for group in reg.groups:
        text = files[f"neomeg/op/defs/{group}.h"]
        for name, init in re.findall(
            r"struct GradDeclOf<ops::(\w+)> \{\n    static constexpr GradDecl value(\{.*?\});",
            text,
        ):
            assert reg.ops[name].group == group
            got[name] = _facts(init)
    assert got == {name: o.grad for name, o in reg.ops.items()}
    # Every kind of declaration is in use, so the comparison above compares each field.
    decls = [o.grad for o in reg.ops.values()]
    assert None in decls
    assert any(g and g.absent_grads for g in decls)
    assert any(g and g.save_outputs and not g.save_inputs for g in decls)
    assert any(g and g.save_inputs and not g.save_outputs for g in decls)


def test_the_table_by_id_reads_every_class(generated):
    reg, files = generated
    cases = re.findall(
        r"case OpId::(\w+):\n\s+return kGradDecl<ops::(\w+)>;", files["neomeg/op/op_defs.cpp"]
    )
    assert [a for a, b in cases if a == b] == list(reg.ops)


def test_declaring_a_gradient_changes_only_its_groups_op_header(tmp_path):
    shutil.copytree(ROOT / "dnn/ops/defs", tmp_path / "dnn")
    shutil.copytree(ROOT / "src/ops/defs", tmp_path / "view")

    def generate(out):
        emit_op_defs.main(["emit_op_defs.py", str(tmp_path / "dnn"), str(tmp_path / "view"), out])
        files = out.rglob("*")
        return {p.relative_to(out).as_posix(): p.read_text() for p in files if p.is_file()}

    before = generate(tmp_path / "a")
    p = tmp_path / "dnn/reduce.py"
    text = p.read_text()
    i = text.index('    "Argmax",')
    j = text.index("\n)\n", i)
    p.write_text(text[:j] + '\n    grad=Grad(saves=("inputs",)),' + text[j:])
    after = generate(tmp_path / "b")
    assert {k for k in before if before[k] != after[k]} == {"neomeg/op/defs/reduce.h"}
    assert (
        "struct GradDeclOf<ops::Argmax> {\n    static constexpr GradDecl value{.differentiable"
        in (after["neomeg/op/defs/reduce.h"])
    )
