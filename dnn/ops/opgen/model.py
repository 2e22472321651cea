"""The operator model: the one place that knows what an operator definition contains.

Every definition file under ``dnn/ops/defs`` is Python that calls the functions in ``DSL`` below.
Each emitter (C++ params and operator classes now; eager OpDefs, pybind11 bindings and the model
file schema later) reads the same :class:`Registry`, so an operator is written down exactly once.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

# Scalar field types and their C++ spelling; a field type is one of these, an Enum, or a list.
SCALAR_TYPES = {
    "bool": "bool",
    "int32": "int32_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float32": "float",
    "dtype": "DTypeEnum",
    "int32[]": "std::vector<int32_t>",
}


class DefinitionError(Exception):
    pass


@dataclasses.dataclass
class Enum:
    name: str
    members: list[str]
    # attribute name -> list of values, one per member (e.g. Elemwise.Mode's "arity")
    attrs: dict[str, list[Any]]


@dataclasses.dataclass
class Field:
    name: str
    type: str | Enum
    default: Any
    doc: str

    @property
    def is_enum(self) -> bool:
        return isinstance(self.type, Enum)


@dataclasses.dataclass
class ParamSet:
    name: str
    doc: str
    fields: list[Field]
    source: str
    layer: str = "dnn"  # as Operator.layer
    group: str = ""  # the definition file's stem ("vision"); "" for Empty

    @property
    def cpp_name(self) -> str:
        """Fully qualified C++ name of the param struct."""
        ns = "::neomeg::dnn" if self.layer == "dnn" else "::neomeg"
        return f"{ns}::param::{self.name}"

    @property
    def enums(self) -> list[Enum]:
        return [f.type for f in self.fields if f.is_enum]


@dataclasses.dataclass(frozen=True)
class GradDecl:
    """What an operator's backward rule (imperative/src/grad_rules) keeps of the forward pass.

    An operator is differentiable exactly when its definition carries one; the rule's
    registration reads these facts from the generated op class instead of restating them."""

    save_inputs: bool
    save_outputs: bool
    # The rule takes an invalid tensor for an output no gradient reached, instead of zeros
    # (imperative::GradRule::takes_absent_grads).
    absent_grads: bool = False


@dataclasses.dataclass
class Operator:
    name: str
    doc: str
    param: ParamSet
    inputs: list[str]  # a name starting with '*' means any number of tensors
    outputs: list[str]
    source: str
    # "dnn": a kernel-library operator; "view": an op that only changes a layout (src/ops/defs),
    # with no dnn kernel.
    layer: str = "dnn"
    # output name -> the input whose channels-last layout it takes (see ``op``'s doc).
    layout_follows: dict[str, str] = dataclasses.field(default_factory=dict)
    group: str = ""  # the definition file's stem ("vision")
    grad: GradDecl | None = None  # None: not differentiable
    # The input whose elements the one output is, unchanged in row-major order (see ``op``'s doc).
    forwards: str | None = None

    @property
    def variadic_inputs(self) -> bool:
        return any(i.startswith("*") for i in self.inputs)

    @property
    def variadic_outputs(self) -> bool:
        return any(o.startswith("*") for o in self.outputs)


EMPTY = ParamSet("Empty", "An operator without params.", [], "<builtin>")


# Ops per group at most: an op's number is (group index << GROUP_SHIFT) | its index in the group.
GROUP_SHIFT = 8


class Registry:
    def __init__(self):
        self.params: dict[str, ParamSet] = {"Empty": EMPTY}
        self.ops: dict[str, Operator] = {}
        # Definition files' stems in load order (dnn groups sorted, then view groups).
        self.groups: list[str] = []

    def group_ops(self, group: str) -> list[Operator]:
        return [o for o in self.ops.values() if o.group == group]

    def group_params(self, group: str) -> list[ParamSet]:
        return [p for p in self.params.values() if p.group == group]

    def op_number(self, op: Operator) -> int:
        """The op's OpType/OpId value. Numbered within its group, so that adding an operator to
        one group leaves every other group's numbers (and generated headers) as they were."""
        return (self.groups.index(op.group) << GROUP_SHIFT) | self.group_ops(op.group).index(op)

    def group_limit(self, layer: str | None = None) -> int:
        """One past the largest number of the layer's (every layer's: None) groups."""
        groups = {o.group for o in self.ops.values() if layer is None or o.layer == layer}
        return (max(self.groups.index(g) for g in groups) + 1) << GROUP_SHIFT

    def add_param(self, p: ParamSet):
        if p.name in self.params:
            raise DefinitionError(
                f"param set {p.name} defined twice ({self.params[p.name].source}, {p.source})"
            )
        self.params[p.name] = p

    def add_op(self, op: Operator):
        if op.name in self.ops:
            raise DefinitionError(
                f"operator {op.name} defined twice ({self.ops[op.name].source}, {op.source})"
            )
        self.ops[op.name] = op


def _dsl(reg: Registry, source: str, layer: str, group: str) -> dict[str, Any]:
    """The names a definition file sees."""

    def enum(field_name, name, members, default, doc):
        """An enum-typed field named ``field_name`` whose C++ type is the nested enum ``name``.

        ``members`` are names, or (name, {attr: value}) pairs; every member must then give every
        attr, and the C++ struct gets ``static constexpr <type> <attr>(Enum)`` lookups.
        """
        names, table = [], {}
        for m in members:
            if isinstance(m, tuple):
                mname, mattrs = m
            else:
                mname, mattrs = m, {}
            names.append(mname)
            for k, v in mattrs.items():
                table.setdefault(k, {})[mname] = v
        for k, vals in table.items():
            missing = [n for n in names if n not in vals]
            if missing:
                raise DefinitionError(f"{source}: enum {name} attr {k} missing for {missing}")
        if default not in names:
            raise DefinitionError(f"{source}: enum {name} default {default} is not a member")
        e = Enum(name, names, {k: [v[n] for n in names] for k, v in table.items()})
        return Field(field_name, e, default, doc)

    def field(name, type_, default, doc):
        if type_ not in SCALAR_TYPES:
            raise DefinitionError(f"{source}: field {name} has unknown type {type_}")
        return Field(name, type_, default, doc)

    def params(name, doc, *fields):
        fl = list(fields)
        seen = set()
        for f in fl:
            if f.name in seen:
                raise DefinitionError(f"{source}: param set {name} repeats field {f.name}")
            seen.add(f.name)
        p = ParamSet(name, doc, fl, source, layer, group)
        reg.add_param(p)
        return p

    def Grad(*, saves, absent_grads=False):
        """The gradient of a differentiable operator, passed as ``op(..., grad=Grad(...))``:
        ``saves`` lists what its backward rule reads of the forward pass, a subset of
        ``("inputs", "outputs")`` (``()``: only the output gradients); ``absent_grads=True``
        when the rule takes an invalid tensor for an output no gradient reached (an op with
        several outputs whose rule ignores some, such as BatchNorm's statistics)."""
        if not isinstance(saves, (tuple, list)):
            raise DefinitionError(
                f"{source}: Grad(saves={saves!r}) needs a tuple such as ('inputs',), not a "
                f"{type(saves).__name__}"
            )
        unknown = [s for s in saves if s not in ("inputs", "outputs")]
        if unknown or len(set(saves)) != len(saves):
            raise DefinitionError(
                f"{source}: Grad(saves={tuple(saves)!r}) may name 'inputs' and 'outputs', "
                "each at most once"
            )
        if not isinstance(absent_grads, bool):
            raise DefinitionError(f"{source}: Grad(absent_grads={absent_grads!r}) is not a bool")
        return GradDecl("inputs" in saves, "outputs" in saves, absent_grads)

    def op(name, doc, inputs, outputs, param=None, layout_follows=None, grad=None, forwards=None):
        """An operator. ``grad=Grad(...)`` makes it differentiable: it then has a backward rule
        in imperative/src/grad_rules; without one no gradient flows through it.

        ``layout_follows`` maps an output to the input whose memory format it takes: when that
        input is channels-last (dnn/include/neomeg/dnn/channels_last.h), the eager runtime
        allocates the output channels-last too; a variadic input (``"*srcs"``) means every input
        of the output's shape, all channels-last. Only for outputs whose kernels compute the same
        values in any layout.

        ``forwards`` names the input whose elements the single output is, unchanged and in
        row-major order, under another shape (ReshapeTo): where that input is contiguous, the
        output may be its memory, so the eager runtime views it and the graph plans the output on
        its buffer instead of running the kernel (generated forwarding.h)."""
        follows = dict(layout_follows or {})
        for out, src in follows.items():
            if out not in outputs or out.startswith("*"):
                raise DefinitionError(f"{source}: {name}: layout_follows names output {out!r}")
            if src not in inputs:
                raise DefinitionError(f"{source}: {name}: layout_follows names input {src!r}")
            if src.startswith("*") and len(inputs) != 1:
                raise DefinitionError(
                    f"{source}: {name}: layout_follows needs a variadic input to be the only one"
                )
        if forwards is not None and (
            forwards not in inputs
            or forwards.startswith("*")
            or len(outputs) != 1
            or outputs[0].startswith("*")
        ):
            raise DefinitionError(
                f"{source}: {name}: forwards={forwards!r} needs one of its fixed inputs and a "
                "single fixed output"
            )
        if grad is not None and not isinstance(grad, GradDecl):
            raise DefinitionError(f"{source}: {name}: grad={grad!r} is neither Grad(...) nor None")
        if grad is not None and not inputs:
            raise DefinitionError(f"{source}: {name}: declares a gradient but has no inputs")
        several_outputs = len(outputs) > 1 or any(o.startswith("*") for o in outputs)
        if grad is not None and grad.absent_grads and not several_outputs:
            raise DefinitionError(
                f"{source}: {name}: absent_grads needs several outputs (a backward rule of one "
                "output always gets its gradient)"
            )
        if len(reg.group_ops(group)) >= 1 << GROUP_SHIFT:
            raise DefinitionError(f"{source}: more than {1 << GROUP_SHIFT} ops in one file")
        reg.add_op(
            Operator(
                name,
                doc,
                param or EMPTY,
                list(inputs),
                list(outputs),
                source,
                layer,
                follows,
                group,
                grad,
                forwards,
            )
        )

    return {"enum": enum, "field": field, "params": params, "op": op, "Grad": Grad}


REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]


def load(defs_dir: str | pathlib.Path, layer: str = "dnn", reg: Registry | None = None) -> Registry:
    """Adds the definitions in ``defs_dir`` (tagged with ``layer``) to ``reg`` or a new registry."""
    reg = reg or Registry()
    for path in sorted(pathlib.Path(defs_dir).resolve().glob("*.py")):
        code = compile(path.read_text(), str(path), "exec")
        source = str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else path.name
        if path.stem in reg.groups:
            raise DefinitionError(f"{source}: a second definition group named {path.stem}")
        reg.groups.append(path.stem)
        exec(code, _dsl(reg, source, layer, path.stem))  # noqa: S102 - definitions are our own source files
    return reg
