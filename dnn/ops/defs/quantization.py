# Fake quantization for quantization-aware training (MegEngine's FakeQuant, TQT and LSQ), with
# the backward operators their gradient rules call. scale, zero_point and grad_scale broadcast to
# src's shape (a scalar or per-channel tensor); rounding is half away from zero, as MegEngine's.
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.

FAKE_QUANT = params(
    "FakeQuant",
    "The integer range [qmin, qmax] that fake quantization clamps to.",
    field("qmin", "int32", -2147483648, "smallest quantized value"),
    field("qmax", "int32", 2147483647, "largest quantized value"),
)

op(
    "FakeQuant",
    "dst = (clamp(round(src / scale) + zero_point, qmin, qmax) - zero_point) * scale.",
    inputs=["src", "scale", "zero_point"],
    outputs=["dst"],
    param=FAKE_QUANT,
    grad=Grad(saves=("inputs",)),
)

op(
    "FakeQuantBackward",
    "Straight-through gradient of FakeQuant for src: grad = diff where round(src / scale) + "
    "zero_point lies in [qmin, qmax], else 0.",
    inputs=["diff", "src", "scale", "zero_point"],
    outputs=["grad"],
    param=FAKE_QUANT,
)

op(
    "TQT",
    "Trained quantization thresholds: with t = 2^scale (scale is the log2 of the step), dst = "
    "clamp(round(src / t), qmin, qmax) * t.",
    inputs=["src", "scale"],
    outputs=["dst"],
    param=FAKE_QUANT,
    grad=Grad(saves=("inputs",)),
)

op(
    "TQTBackward",
    "Gradients of TQT, per element of src: grad_src = diff where src / t lies in [qmin - 0.5, "
    "qmax + 0.5], else 0; grad_scale = diff * t * ln 2 * (round(src / t) - src / t) inside that "
    "range and diff * t * ln 2 * clamp(round(src / t), qmin, qmax) outside it (summed to scale's "
    "shape by the caller).",
    inputs=["diff", "src", "scale"],
    outputs=["grad_src", "grad_scale"],
    param=FAKE_QUANT,
)

op(
    "LSQ",
    "Learned step size quantization: with x = src / scale + zero_point, dst = "
    "(round(clamp(x, qmin, qmax)) - zero_point) * scale.",
    inputs=["src", "scale", "zero_point", "grad_scale"],
    outputs=["dst"],
    param=FAKE_QUANT,
    grad=Grad(saves=("inputs",)),
)

op(
    "LSQBackward",
    "Gradients of LSQ, per element of src, with x = src / scale + zero_point: grad_src = diff "
    "where qmin <= x <= qmax, else 0; grad_scale = diff * grad_scale * (qmin where x < qmin, qmax "
    "where x > qmax, round(x) - x otherwise) (summed to scale's shape by the caller).",
    inputs=["diff", "src", "scale", "zero_point", "grad_scale"],
    outputs=["grad_src", "grad_scale"],
    param=FAKE_QUANT,
)
