# Operators that read or write elements chosen by index tensors, and those whose output size depends
# on the data (CondTake, NonZero). The DSL (params, field, enum, op) is documented in
# dnn/ops/opgen/model.py.
#
# Conventions shared by every operator here:
# - Index tensors are int32 (any other dtype is a DTypeError); data may be of any dtype, except that
#   the accumulating forms (IndexingIncrMultiAxisVec, Scatter mode ADD) reject bool.
# - Operators that write are pure: the output is a copy of `data` with the update applied. Passing
#   the same memory as data and as output updates in place.
# - An index value outside its axis is an IndexError naming the operator, the axis, the value and
#   the axis size; every index is checked before anything is written.
# - Data-dependent output sizes (CondTake, NonZero) follow the static-shape contract: deduce_layout
#   gives the capacity (the largest possible size) and an extra int32 output of shape {1} receives
#   the actual count; the caller allocates the capacity and views the first `count` elements.
#   Elements past `count` are left unwritten.

axis_param = params(
    "IndexingAxis",
    "The axis an operator indexes along.",
    field("axis", "int32", 0, "axis of src/data; negative counts from the end"),
)

op(
    "IndexingOneHot",
    "Picks one element along `axis` per position: dst[..., 0, ...] = src[..., index[...], ...]; "
    "index has src's shape without `axis`, dst has src's shape with `axis` of size 1. "
    "Index values must lie in [0, src.shape[axis]).",
    inputs=["src", "index"],
    outputs=["dst"],
    param=axis_param,
    grad=Grad(saves=("inputs",)),
)

op(
    "IndexingSetOneHot",
    "dst = data with dst[..., index[...], ...] = sub[..., 0, ...]; sub has data's shape with `axis` "
    "of size 1. The gradient of IndexingOneHot is this op applied to zeros.",
    inputs=["data", "index", "sub"],
    outputs=["dst"],
    param=axis_param,
    grad=Grad(saves=("inputs",)),
)

multi_axis_param = params(
    "IndexingMultiAxis",
    "The axes indexed by the index tensors, one axis per index tensor.",
    field(
        "axes",
        "int32[]",
        [0],
        "distinct axes of src/data, in the order of the index tensors; "
        "negative counts from the end",
    ),
)

op(
    "IndexingMultiAxisVec",
    "NumPy advanced indexing: dst = src[..., idx0, ..., idx1, ...] with index tensor k applied to "
    "axes[k]. The index tensors broadcast together to shape B; the indexed axes are replaced by B, "
    "in place when the indexed axes are adjacent and in front otherwise (NumPy's rule). Negative "
    "indices count from the end once.",
    inputs=["src", "*indices"],
    outputs=["dst"],
    param=multi_axis_param,
    grad=Grad(saves=("inputs",)),
)

op(
    "IndexingSetMultiAxisVec",
    "dst = data with dst[indices] = value, NumPy assignment semantics: value broadcasts to the "
    "shape of data[indices]. Where indices repeat, the last write in row-major order of that "
    "shape wins.",
    inputs=["data", "value", "*indices"],
    outputs=["dst"],
    param=multi_axis_param,
    grad=Grad(saves=("inputs",)),
)

op(
    "IndexingIncrMultiAxisVec",
    "dst = data with dst[indices] += value, accumulating repeated indices like np.add.at; value "
    "broadcasts to the shape of data[indices]. The gradient of IndexingMultiAxisVec is this op "
    "applied to zeros.",
    inputs=["data", "value", "*indices"],
    outputs=["dst"],
    param=multi_axis_param,
    grad=Grad(saves=("inputs",)),
)

op(
    "Gather",
    "torch.gather along `axis`: dst[i][j] = src[index[i][j]][j] for axis 0 (likewise for other "
    "axes and ranks). index has src's rank, index.shape[d] <= src.shape[d] for d != axis; dst has "
    "index's shape. Index values must lie in [0, src.shape[axis]).",
    inputs=["src", "index"],
    outputs=["dst"],
    param=axis_param,
    grad=Grad(saves=("inputs",)),
)

op(
    "Scatter",
    "torch.scatter along `axis`: dst = data with dst[index[i][j]][j] = src[i][j] for axis 0 (SET), "
    "or += (ADD, accumulating repeated indices; the gradient of Gather is ADD into zeros). src has "
    "index's shape, index has data's rank and index.shape[d] <= data.shape[d] for d != axis. With "
    "SET and repeated indices, the last write in row-major order of index wins.",
    inputs=["data", "index", "src"],
    outputs=["dst"],
    param=params(
        "Scatter",
        "Axis and how written values combine with data.",
        field("axis", "int32", 0, "axis of data; negative counts from the end"),
        enum("mode", "Mode", ["SET", "ADD"], "SET", "SET overwrites, ADD accumulates"),
    ),
    grad=Grad(saves=("inputs",)),
)

op(
    "CondTake",
    "The elements of data where mask (bool, data's shape) is true, in row-major order, and their "
    "flat row-major indices. Static-shape contract: values {N} and indices {N} int32 have capacity "
    "N = data's element count, count {1} int32 receives the number taken; only the first count "
    "elements of values and indices are written.",
    inputs=["data", "mask"],
    outputs=["values", "indices", "count"],
    grad=Grad(saves=("inputs",)),
)

op(
    "NonZero",
    "Coordinates of the nonzero elements of src (np.nonzero): coords {ndim, N} int32, column k "
    "holding the coordinates of the k-th nonzero element in row-major order. Static-shape "
    "contract: N = src's element count is the capacity, count {1} int32 receives the number found; "
    "only the first count columns are written.",
    inputs=["src"],
    outputs=["coords", "count"],
)
