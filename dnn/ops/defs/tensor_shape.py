# Operators that join, split, pad and resample tensors.
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.

op(
    "Concat",
    "Joins tensors along an axis; all other dims and the dtypes must match.",
    inputs=["*srcs"],
    outputs=["dst"],
    param=params(
        "Concat",
        "The axis to join along.",
        field("axis", "int32", 0, "axis to join along; negative counts from the end"),
    ),
)

op(
    "Split",
    "Splits src along an axis into pieces of the given sizes.",
    inputs=["src"],
    outputs=["*dsts"],
    param=params(
        "Split",
        "The axis to split and the length of each piece along it.",
        field("axis", "int32", 0, "axis to split; negative counts from the end"),
        field("sizes", "int32[]", [], "length of each output along axis; must sum to src's"),
    ),
)

PADDING = params(
    "Padding",
    "How a tensor is padded: per-dimension widths and what fills the border.",
    enum(
        "mode",
        "Mode",
        ["CONSTANT", "REFLECT", "REPLICATE"],
        "CONSTANT",
        "CONSTANT writes value; REFLECT mirrors without repeating the edge (numpy 'reflect'); "
        "REPLICATE repeats the edge (numpy 'edge')",
    ),
    field("value", "float32", 0.0, "border value of CONSTANT mode"),
    field("front_offsets", "int32[]", [], "elements added before each dim; one per dim of src"),
    field("back_offsets", "int32[]", [], "elements added after each dim; one per dim of src"),
)

op(
    "Padding",
    "Pads every dim of src by front/back widths.",
    inputs=["src"],
    outputs=["dst"],
    param=PADDING,
)

op(
    "PaddingBackward",
    "Gradient of Padding: sums diff over every padded element that copies each src element.",
    inputs=["diff"],
    outputs=["grad"],
    param=PADDING,
)

RESIZE = params(
    "Resize",
    "Output size and interpolation of an NCHW resize (defaults as MegEngine's "
    "F.vision.interpolate).",
    enum(
        "mode",
        "InterpolationMode",
        ["NEAREST", "LINEAR"],
        "LINEAR",
        "NEAREST takes src[floor(dst * in / out)]; LINEAR is bilinear",
    ),
    field("out_h", "uint32", 1, "output height"),
    field("out_w", "uint32", 1, "output width"),
    field(
        "align_corners",
        "bool",
        False,
        "LINEAR only: corner pixels of src and dst coincide; otherwise pixel centres are "
        "aligned (half-pixel)",
    ),
)

op(
    "Resize",
    "Resizes the two spatial dims of an NCHW tensor to (out_h, out_w).",
    inputs=["src"],
    outputs=["dst"],
    param=RESIZE,
)

op(
    "ResizeBackward",
    "Gradient of Resize: scatters diff (N, C, out_h, out_w) back onto grad, whose shape "
    "(N, C, in_h, in_w) the caller sets.",
    inputs=["diff"],
    outputs=["grad"],
    param=RESIZE,
)
