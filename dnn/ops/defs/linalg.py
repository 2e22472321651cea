# Matrix and vector products.
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.
#
# Float inputs (float32, float16, bfloat16) give their own dtype; int8, int16 and int32 inputs give
# int32 (wrapping). Both inputs must have the same dtype.

MATMUL = params(
    "MatrixMul",
    "Whether each operand is read transposed, and the accumulation precision.",
    field("transposeA", "bool", False, "A is given as (K, M)"),
    field("transposeB", "bool", False, "B is given as (N, K)"),
    enum(
        "compute_mode",
        "ComputeMode",
        ["DEFAULT", "FLOAT32"],
        "DEFAULT",
        "FLOAT32 asks float16/bfloat16 kernels to accumulate in float32; naive always does",
    ),
)

op(
    "MatrixMul",
    "C = op(A) @ op(B) for 2-D A (M, K) and B (K, N), op transposing where the param says.",
    inputs=["A", "B"],
    outputs=["C"],
    param=MATMUL,
    grad=Grad(saves=("inputs",)),
)

op(
    "BatchedMatrixMul",
    "C[b] = op(A[b]) @ op(B[b]) for 3-D A (batch, M, K) and B (batch, K, N).",
    inputs=["A", "B"],
    outputs=["C"],
    param=MATMUL,
    grad=Grad(saves=("inputs",)),
)

op(
    "Dot",
    "Inner product of two 1-D vectors of equal length; C is a scalar (shape {}, ndim 0).",
    inputs=["A", "B"],
    outputs=["C"],
    grad=Grad(saves=("inputs",)),
)

op(
    "MatrixInverse",
    "dst = inverse of src for each square matrix in the last two axes of src (..., n, n), by "
    "Gauss-Jordan elimination with partial pivoting in double. Float dtypes; dst has src's "
    "dtype. An exactly singular matrix (a zero pivot) throws ParamError naming its batch index; "
    "a nearly singular one gives large, inaccurate values, as numpy.linalg.inv does; a matrix "
    "holding NaN or inf gives an all-NaN inverse.",
    inputs=["src"],
    outputs=["dst"],
    grad=Grad(saves=("outputs",)),
)

op(
    "SVD",
    "Singular value decomposition src = U @ diag(S) @ Vh of each matrix in the last two axes of "
    "src (..., M, N), S descending and non-negative, K = min(M, N). Outputs U (..., M, K|M), "
    "S (..., K) and Vh (..., K|N, N) with compute_uv, only S without. Float dtypes; the outputs "
    "have src's dtype. Signs of singular vector pairs are unspecified.",
    inputs=["src"],
    outputs=["*outs"],
    param=params(
        "SVD",
        "Which factors to compute and their shapes.",
        field(
            "full_matrices", "bool", False, "U is (M, M) and Vh (N, N) instead of (M, K), (K, N)"
        ),
        field("compute_uv", "bool", True, "output U and Vh besides S"),
    ),
    grad=Grad(saves=("inputs",)),
)
