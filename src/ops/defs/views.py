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

op(
    "Subtensor",
    "NumPy's basic indexing of src by ints and slices (x[1, ::-2, :3]): a view, as MegEngine's "
    "Subtensor. The layout rule (src/op/view_layouts.cpp) is the one place that resolves the "
    "bounds, as Python's slice.indices(n) does.",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "Subtensor",
        "One item per indexed axis, in parallel lists; axes not named are kept whole. "
        "-2147483648 (kSubtensorNone) stands for Python's None.",
        field(
            "axis",
            "int32[]",
            [],
            "the indexed axes of src, each once; negative counts from the end",
        ),
        field(
            "begin",
            "int32[]",
            [],
            "a slice's start, or an index's position; negative counts from the end",
        ),
        field("end", "int32[]", [], "a slice's stop (clamped as Python's); None for an index"),
        field("step", "int32[]", [], "a slice's step (nonzero; None is 1); None for an index"),
        field(
            "is_index",
            "int32[]",
            [],
            "1: the item is an index (begin, in range) and drops its axis; 0: a slice",
        ),
    ),
    grad=Grad(saves=("inputs",)),
)
