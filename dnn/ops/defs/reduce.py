# Reductions along one axis, scans and sorting.
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.
#
# Axis params accept -ndim <= axis < ndim (negative counts from the back). Reduced axes are kept
# with size 1, as in MegDNN; the layer above drops them when keepdims=False.

op(
    "Reduce",
    "Reduces src along one axis; dst keeps that axis with size 1. Float inputs accumulate in "
    "double, integer SUM/SUM_SQR/PRODUCT wrap like the input type. dst has src's dtype, except "
    "MEAN of an integer src, which gives float32 (MegEngine's mean of ints). An empty axis gives "
    "SUM/SUM_SQR 0, PRODUCT 1, MEAN NaN; MAX/MIN of an empty axis is a ParamError. NaN propagates "
    "through MAX/MIN.",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "Reduce",
        "The reduction and the axis it runs along.",
        enum(
            "mode",
            "Mode",
            ["SUM", "SUM_SQR", "PRODUCT", "MIN", "MAX", "MEAN"],
            "SUM",
            "what to compute over the axis",
        ),
        field("axis", "int32", 0, "axis to reduce; negative counts from the back"),
    ),
    layout_follows={"dst": "src"},
    grad=Grad(saves=("inputs", "outputs")),  # MAX/MIN/PRODUCT read the output
)

ARG_AXIS = params(
    "ArgReduce",
    "The axis an arg-reduction runs along.",
    field("axis", "int32", 0, "axis to search; negative counts from the back"),
)

op(
    "Argmax",
    "int32 index of the largest element along the axis (the axis is kept with size 1); the first "
    "one on ties. A NaN counts as larger than everything, so the first NaN wins (NumPy).",
    inputs=["src"],
    outputs=["dst"],
    param=ARG_AXIS,
)

op(
    "Argmin",
    "int32 index of the smallest element along the axis (the axis is kept with size 1); the first "
    "one on ties. As in NumPy the first NaN wins here too, so a NaN anywhere is found.",
    inputs=["src"],
    outputs=["dst"],
    param=ARG_AXIS,
)

op(
    "Cumsum",
    "Running sum along an axis, in src's dtype (floats accumulate in double, integers wrap).",
    inputs=["src"],
    outputs=["dst"],
    param=params(
        "Cumsum",
        "The axis and the direction of the scan.",
        field("axis", "int32", 0, "axis to scan; negative counts from the back"),
        field("exclusive", "bool", False, "element i leaves out src[i] (dst[0] is 0)"),
        field("reverse", "bool", False, "scan from the last element towards the first"),
    ),
    grad=Grad(saves=()),
)

op(
    "Argsort",
    "Sorts along the last axis: sorted values and their int32 indices into src. ASCENDING is "
    "stable (equal elements keep their order in src); DESCENDING is its exact reverse, so equal "
    "elements come in reverse src order (MegEngine 1.13's order). NaN sorts as larger than every "
    "number, -0 equal to +0.",
    inputs=["src"],
    outputs=["values", "indices"],
    param=params(
        "Argsort",
        "The sort order.",
        enum("order", "Order", ["ASCENDING", "DESCENDING"], "ASCENDING", "sort order"),
    ),
    grad=Grad(saves=("inputs", "outputs")),
)

op(
    "TopK",
    "The k smallest elements along the last axis (the -k largest for negative k), ranked as by "
    "Argsort (NaN largest; on ties the earlier index first for k > 0, the later for k < 0). "
    "KTH_ONLY gives only the k-th "
    "value and drops the last axis; the other modes give values and int32 indices with last "
    "axis |k|. VALUE_IDX_NOSORT promises no order (naive keeps src's order).",
    inputs=["src"],
    outputs=["*outs"],
    param=params(
        "TopK",
        "Which elements to select and how to return them.",
        enum(
            "mode",
            "Mode",
            ["KTH_ONLY", "VALUE_IDX_NOSORT", "VALUE_IDX_SORTED"],
            "KTH_ONLY",
            "what to output",
        ),
        field("k", "int32", 1, "k > 0: the k smallest; k < 0: the -k largest (F.topk descending)"),
    ),
    grad=Grad(saves=("inputs", "outputs")),
)
