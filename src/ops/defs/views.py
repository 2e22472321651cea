# Operators that change only a tensor's layout. Eagerly they return a view of their input (no
# kernel, no copy) when the strides allow it, and copy through dnn Relayout when they do not; in a
# graph they copy into their planned output. Same DSL as dnn/ops/defs (dnn/ops/opgen/model.py);
# each op has a param set of its own, whose layout rule is view_layout(param, input) in
# src/op/view_layouts.cpp.

op(
    "Reshape",
    "Gives src a new shape with the same number of elements.",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "Reshape",
        "Target shape of a reshape.",
        field("shape", "int32[]", [], "target shape; at most one entry may be -1 (inferred)"),
    ),
    grad=Grad(saves=("inputs",)),
)

op(
    "Broadcast",
    "Repeats src along axes of size 1 (and new leading axes) to reach a shape, NumPy-style.",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "Broadcast",
        "Target shape of a broadcast.",
        field("shape", "int32[]", [], "target shape"),
    ),
    grad=Grad(saves=("inputs",)),
)

op(
    "Dimshuffle",
    "Permutes the axes of src: output axis i is input axis pattern[i].",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "Dimshuffle",
        "Axis permutation.",
        field("pattern", "int32[]", [], "a permutation of 0..ndim-1"),
    ),
    grad=Grad(saves=()),
)

op(
    "AddAxis",
    "Inserts axes of size 1.",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "AddAxis",
        "Where new axes go.",
        field(
            "axis",
            "int32[]",
            [],
            "positions in the output, ascending; negative counts from the end",
        ),
    ),
    grad=Grad(saves=("inputs",)),
)

op(
    "RemoveAxis",
    "Removes axes of size 1.",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "RemoveAxis",
        "Which axes to drop.",
        field("axis", "int32[]", [], "axes of src, each of size 1; negative counts from the end"),
    ),
    grad=Grad(saves=("inputs",)),
)
