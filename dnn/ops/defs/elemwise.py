# Elementwise arithmetic: one operator, many modes.
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.
#
# Every mode carries two attributes, read by the layout rule (dnn/src/common/elemwise.cpp) and by
# the eager runtime's type promotion, so neither table is written anywhere else:
#   arity  - number of inputs;
#   dtypes - the dtype rule. All inputs except COND's condition must share one dtype (promotion is
#            the caller's job); the rule says which dtype that may be and what dst gets:
#     float    float32/float16/bfloat16 -> same dtype (transcendental and smooth modes)
#     numeric  any float or integer dtype, not bool -> same dtype; integers wrap like C
#              unsigned arithmetic (two's complement), float16/bfloat16 compute in float or wider
#     truediv  float -> same dtype; integer -> float32 (MegEngine's TRUE_DIV)
#     compare  any dtype, bool included -> bool
#     classify any dtype -> bool (integers and bool are never NaN nor infinite: all False,
#              as MegEngine 1.13)
#     logical  bool -> bool (logical), or integer -> same dtype (bitwise)
#     not      bool -> bool
#     shift    integer -> same dtype
#     select   COND: input 0 is bool, inputs 1 and 2 share any dtype -> that dtype
#
# Integer semantics: FLOOR_DIV and MOD follow Python (MOD has the sign of the divisor); both give
# 0 for a zero divisor instead of trapping. SHL/SHR with a count outside [0, bits of the dtype)
# give 0 (SHL) or the sign fill, 0 or -1 (SHR); SHR is arithmetic on signed dtypes. ROUND, FLOOR
# and CEIL are the identity on integers; RELU, ABS, SIGN, MAX, MIN, CLIP work on integers too.
# Float semantics: ROUND rounds half away from zero (std::round, as MegDNN); SIGN(0) = 0 and
# SIGN(NaN) = NaN; MAX/MIN propagate NaN; MOD is C's fmod (the sign of the dividend, as MegDNN's
# float MOD, while its integer MOD is Python's); GELU is the exact
# erf form. CLIP is min(max(x, lo), hi) on every dtype: hi wins where lo > hi (NumPy), NaN x
# stays NaN. TRUE_DIV, FLOOR_DIV and MOD by zero on floats follow IEEE (inf/NaN).
# SIGMOID_GRAD and TANH_GRAD take (y, dy) with y the forward output; every other *_GRAD mode and
# SWITCH_GT0 (the RELU gradient) take (x, dy) with x the forward input.
# PRELU(x, slope) is x < 0 ? x * slope : x (F.leaky_relu and F.prelu in one pass; NaN stays NaN,
# and so does either zero, where MegEngine's x > 0 ? x : x * slope gives -0 for +0 and a negative
# slope); its gradient is that of the select: dy for x >= 0, dy * slope and dy * x below.
#
# A third attribute, complex, marks the modes that also take complex64 inputs (-> complex64): the
# ring operations ADD, SUB, MUL and NEGATE, as in MegEngine 1.13; every other mode refuses them.
#
# A fourth, quantized, marks the modes that take QuantizedS8 and QuantizedS32 inputs of one dtype
# (scale included) -> that dtype: ADD, SUB, NEGATE, RELU, MAX and MIN, MegEngine 1.13's set. As
# MegEngine they compute on the stored integers, which for one scale is the quantized result, and
# wrap like the integer modes (QuantizedS8 127 + 5 is -124, -(-128) is -128; no saturation). Every
# other mode refuses quantized inputs, and every mode refuses Quantized8Asymm (MegEngine 1.13
# computes no Elemwise on it: its zero point would count twice in a sum).

_FLOAT_UNARY = [
    "EXP",
    "EXPM1",
    "LOG",
    "LOG1P",
    "SQRT",
    "RSQRT",
    "SIN",
    "COS",
    "TAN",
    "ASIN",
    "ACOS",
    "ATAN",
    "SINH",
    "COSH",
    "TANH",
    "ASINH",
    "ACOSH",
    "ATANH",
    "SIGMOID",
    "ERF",
    "ERFINV",
    "ERFC",
    "ERFCINV",
    "GELU",
    "SILU",
    "H_SWISH",
    "HSIGMOID",
    "RELU6",
    "SOFTPLUS",
    "LOGSIGMOID",
]
_NUMERIC_UNARY = ["RELU", "ABS", "NEGATE", "SQUARE", "ROUND", "FLOOR", "CEIL", "SIGN"]
_NUMERIC_BINARY = ["ADD", "SUB", "MUL", "FLOOR_DIV", "MOD", "MAX", "MIN", "SWITCH_GT0", "ABS_GRAD"]
_FLOAT_BINARY = [
    "POW",
    "ATAN2",
    "LOG_SUM_EXP",
    "SIGMOID_GRAD",
    "TANH_GRAD",
    "GELU_GRAD",
    "SILU_GRAD",
    "H_SWISH_GRAD",
    "HSIGMOID_GRAD",
    "RELU6_GRAD",
    "SOFTPLUS_GRAD",
    "LOGSIGMOID_GRAD",
]


_COMPLEX = {"ADD", "SUB", "MUL", "NEGATE"}
_QUANTIZED = {"ADD", "SUB", "NEGATE", "RELU", "MAX", "MIN"}


def _modes(names, arity, dtypes):
    return [
        (
            n,
            {
                "arity": arity,
                "dtypes": dtypes,
                "complex": n in _COMPLEX,
                "quantized": n in _QUANTIZED,
            },
        )
        for n in names
    ]


_MODES = (
    _modes(_NUMERIC_UNARY, 1, "numeric")
    + _modes(_FLOAT_UNARY, 1, "float")
    + _modes(["NOT"], 1, "not")
    + _modes(["ISNAN", "ISINF"], 1, "classify")
    + _modes(_NUMERIC_BINARY, 2, "numeric")
    + _modes(["TRUE_DIV"], 2, "truediv")
    + _modes(_FLOAT_BINARY, 2, "float")
    + _modes(["EQ", "NE", "LT", "LEQ"], 2, "compare")
    + _modes(["AND", "OR", "XOR"], 2, "logical")
    + _modes(["SHL", "SHR"], 2, "shift")
    + _modes(["CLIP", "FUSE_MUL_ADD3"], 3, "numeric")
    + _modes(["COND"], 3, "select")
    + _modes(["FUSE_MUL_ADD4"], 4, "numeric")
    # Last, so that the modes before it keep their numbers.
    + _modes(["PRELU"], 2, "float")
)

op(
    "Elemwise",
    "Applies `mode` element by element to srcs broadcast together (NumPy rules); dst is "
    "contiguous of the broadcast shape. Dtype rules per mode: see dnn/ops/defs/elemwise.py.",
    inputs=["*srcs"],
    outputs=["dst"],
    param=params(
        "Elemwise",
        "The elementwise function; each mode knows its arity and dtype rule.",
        enum(
            "mode",
            "Mode",
            _MODES,
            "ADD",
            "function applied; CLIP is (x, lo, hi), COND is (cond, a, b), "
            "FUSE_MUL_ADD3 a*b+c, FUSE_MUL_ADD4 a*b+c*d, X_GRAD is (x or y, dy)",
        ),
    ),
    layout_follows={"dst": "*srcs"},
    grad=Grad(saves=("inputs", "outputs")),
)

# Complex numbers from and to float32 parts. Complex64 is NumPy's layout (real, imaginary float32
# pairs), so both ops only move float32 values between a complex tensor and its parts.
op(
    "CreateComplex",
    "dst = real + i * imag: float32 real and imag broadcast together (NumPy rules) into a "
    "contiguous complex64 dst.",
    inputs=["real", "imag"],
    outputs=["dst"],
    grad=Grad(saves=("inputs",)),
)

op(
    "ComplexPart",
    "One float32 part of a complex64 src: its real or its imaginary part, into a contiguous dst "
    "of src's shape.",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "ComplexPart",
        "Which part of a complex number.",
        enum("part", "Part", ["REAL", "IMAG"], "REAL", "the real or the imaginary part"),
    ),
    grad=Grad(saves=()),
)
