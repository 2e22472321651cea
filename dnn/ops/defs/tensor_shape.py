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
    grad=Grad(saves=("inputs",)),
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
    grad=Grad(saves=()),
)

op(
    "Roll",
    "numpy.roll over several axes in one pass: along each listed axis, dst[i] = src[i - shift], "
    "indices wrapping around (F.roll, whose lowering as Split and Concat copied twice).",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "Roll",
        "How far each listed axis is rolled.",
        field(
            "shift", "int32[]", [], "one per axis, any sign or size: taken modulo the axis's size"
        ),
        field(
            "axis",
            "int32[]",
            [],
            "axes of src, one per shift; negative counts from the end; a repeated axis adds its "
            "shifts",
        ),
    ),
    grad=Grad(saves=()),
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
    grad=Grad(saves=()),
)

op(
    "PaddingBackward",
    "Gradient of Padding: sums diff over every padded element that copies each src element.",
    inputs=["diff"],
    outputs=["grad"],
    param=PADDING,
    grad=Grad(saves=()),
)

RESIZE = params(
    "Resize",
    "Output size and interpolation of an NCHW resize (defaults as MegEngine's "
    "F.vision.interpolate).",
    enum(
        "mode",
        "InterpolationMode",
        ["NEAREST", "LINEAR", "CUBIC"],
        "LINEAR",
        "NEAREST takes src[floor(dst * in / out)]; LINEAR is bilinear; CUBIC is MegDNN's "
        "bicubic (Keys' kernel, a = -0.75); the rules are in dnn/src/common/resize_taps.h",
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
    grad=Grad(saves=("inputs",)),
)

op(
    "ResizeBackward",
    "Gradient of Resize: scatters diff (N, C, out_h, out_w) back onto grad, whose shape "
    "(N, C, in_h, in_w) the caller sets.",
    inputs=["diff"],
    outputs=["grad"],
    param=RESIZE,
    grad=Grad(saves=()),
)

# Shape-computing operators. A graph infers their values (GetVarShape) or reads their shape
# inputs' values (ReshapeTo, BroadcastTo, TakePrefix) when a node is inserted, so that shapes
# computed from other shapes stay static; a shape input whose value depends on data makes the
# output's shape dynamic (known at run time). The caller presets dst's shape from that value.

op(
    "GetVarShape",
    "The shape of src as an int32 vector: dst[i] = src.shape[axes[i]] ({ndim}, every axis, when "
    "axes is empty).",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "GetVarShape",
        "Which axes of src to report.",
        field(
            "axes",
            "int32[]",
            [],
            "axes of src in output order; negative counts from the end; empty: all",
        ),
    ),
)

op(
    "ReshapeTo",
    "src's elements in row-major order with the shape held by `shape` (int32 {ndim}; one entry may "
    "be -1, inferred). dst's shape comes from the caller, who reads shape's value.",
    inputs=["src", "shape"],
    outputs=["dst"],
    grad=Grad(saves=("inputs",)),
    forwards="src",
)

op(
    "BroadcastTo",
    "src repeated along its axes of size 1 (and new leading axes) to the shape held by `shape` "
    "(int32 {ndim}), NumPy-style. dst's shape comes from the caller, who reads shape's value.",
    inputs=["src", "shape"],
    outputs=["dst"],
    grad=Grad(saves=("inputs",)),
)

op(
    "TakePrefix",
    "The first count[0] entries of src along axis 0 (count: int32 {1}, at most src.shape[0]): how "
    "a graph views the valid part of CondTake's and NonZero's capacity-sized outputs. dst's shape "
    "comes from the caller, who reads count's value.",
    inputs=["src", "count"],
    outputs=["dst"],
    grad=Grad(saves=("inputs",)),
)

# oneDNN's blocked activation formats (nChw16c, nChw8c, ...) as plain dense tensors with one more
# axis, so that graph vars, the memory planner and elementwise kernels need nothing new: channel c
# of (N, C, spatial...) lies at [n, c / block, spatial..., c % block]. The graph's layout pass
# (src/graph/passes/propagate_channel_blocked.cpp) keeps chains of convolutions in this layout
# (ConvBiasBlocked, PoolingBlocked) and converts only at their edges.
op(
    "ChannelBlock",
    "Copies src (N, C, spatial...) into dst (N, ceil(C/block), spatial..., block): channel c at "
    "[n, c / block, spatial..., c % block]; the channels past C in the last block are zero.",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "ChannelBlock",
        "The number of channels per block.",
        field("block", "uint32", 16, "channels per block, >= 1"),
    ),
)

op(
    "ChannelUnblock",
    "The inverse of ChannelBlock: src (N, ceil(C/block), spatial..., block) back to dst "
    "(N, C, spatial...); block is src's last dim, C the param.",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "ChannelUnblock",
        "The number of channels of dst.",
        field("channels", "uint32", 1, "C; ceil(C / block) must be src's dim 1"),
    ),
)
