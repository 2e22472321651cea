# Operators that create tensors or move their elements without arithmetic.
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.

op(
    "Fill",
    "Writes one value into every element of dst.",
    inputs=[],
    outputs=["dst"],
    param=params(
        "Fill",
        "A constant and the dtype to write it as.",
        field("value", "float32", 0.0, "value written, converted to dtype"),
        field("dtype", "dtype", "Float32", "dtype of dst"),
    ),
)

op(
    "TypeCvt",
    "Converts every element of src to another dtype (rules in dnn/src/naive/type_cvt.h).",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "TypeCvt",
        "The dtype to convert to.",
        field("dtype", "dtype", "Float32", "dtype of dst"),
        field("scale", "float32", 0.0, "a quantized dst's scale (0 for a plain dtype)"),
        field("zero_point", "int32", 0, "a Quantized8Asymm dst's zero point"),
    ),
    layout_follows={"dst": "src"},
    grad=Grad(saves=("inputs",)),
)

op(
    "Relayout",
    "Copies src into dst of the same shape and dtype, whatever the strides of either.",
    inputs=["src"],
    outputs=["dst"],
    grad=Grad(saves=()),
)

op(
    "Linspace",
    "Writes n evenly spaced values from start to stop (stop excluded unless endpoint) into the "
    "1-D dst of length n.",
    inputs=[],
    outputs=["dst"],
    param=params(
        "Linspace",
        "Interval and dtype of a linspace.",
        field("start", "float32", 0.0, "first value"),
        field("stop", "float32", 1.0, "last value when endpoint, else the excluded end"),
        field("endpoint", "bool", True, "whether stop is the last value"),
        field("dtype", "dtype", "Float32", "dtype of dst (a float dtype)"),
    ),
)

op(
    "Arange",
    "Writes start + i * step for i = 0..n-1 into the 1-D dst of length n.",
    inputs=[],
    outputs=["dst"],
    param=params(
        "Arange",
        "First value, increment and dtype of an arange.",
        field("start", "float32", 0.0, "first value"),
        field("step", "float32", 1.0, "increment"),
        field("dtype", "dtype", "Float32", "dtype of dst (float or integer)"),
    ),
)

op(
    "Eye",
    "Writes ones on the k-th diagonal of the 2-D dst and zeros elsewhere.",
    inputs=[],
    outputs=["dst"],
    param=params(
        "Eye",
        "Diagonal offset and dtype of an identity-like matrix.",
        field("k", "int32", 0, "diagonal offset: 0 main, > 0 above, < 0 below"),
        field("dtype", "dtype", "Float32", "dtype of dst"),
    ),
)

op(
    "Diag",
    "numpy.diag: a 1-D src becomes a square matrix with src on its k-th diagonal; a 2-D src gives "
    "its k-th diagonal as a 1-D tensor.",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "Diag",
        "Diagonal offset.",
        field("k", "int32", 0, "diagonal offset: 0 main, > 0 above, < 0 below"),
    ),
    grad=Grad(saves=("inputs",)),
)
