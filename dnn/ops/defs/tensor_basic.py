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
