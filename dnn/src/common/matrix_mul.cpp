// Layout rules of MatrixMul, BatchedMatrixMul and Dot.
#include "neomeg/dnn/operators/linalg.h"
#include "src/common/matrix_mul_dtype.h"

namespace neomeg::dnn {

namespace {

// Rows and columns of a matrix operand as the product reads it.
struct MatDims {
    size_t rows, cols;
};
MatDims op_dims(size_t d0, size_t d1, bool transposed) {
    return transposed ? MatDims{d1, d0} : MatDims{d0, d1};
}

}  // namespace

void MatrixMul::deduce_layout(std::span<const TensorLayout> inputs,
                              std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &a = inputs[0], &b = inputs[1];
    NM_REQUIRE(ShapeError, a.ndim == 2 && b.ndim == 2, "A and B must be 2-D, got ", a.to_string(),
               " and ", b.to_string());
    auto da = op_dims(a[0], a[1], m_param.transposeA);
    auto db = op_dims(b[0], b[1], m_param.transposeB);
    NM_REQUIRE(ShapeError, da.cols == db.rows, "inner dims differ: A ", a.to_string(),
               " gives K=", da.cols, ", B ", b.to_string(), " gives K=", db.rows);
    DType out;
    NM_REQUIRE(DTypeError, matmul_out_dtype(a.dtype, b.dtype, out), "unsupported dtypes: A ",
               a.to_string(), ", B ", b.to_string(), " (", kMatmulDtypesDoc, ")");
    outputs[0] = TensorLayout({da.rows, db.cols}, out);
}

void BatchedMatrixMul::deduce_layout(std::span<const TensorLayout> inputs,
                                     std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &a = inputs[0], &b = inputs[1];
    NM_REQUIRE(ShapeError, a.ndim == 3 && b.ndim == 3, "A and B must be 3-D, got ", a.to_string(),
               " and ", b.to_string());
    NM_REQUIRE(ShapeError, a[0] == b[0], "batch sizes differ: A ", a.to_string(), ", B ",
               b.to_string());
    auto da = op_dims(a[1], a[2], m_param.transposeA);
    auto db = op_dims(b[1], b[2], m_param.transposeB);
    NM_REQUIRE(ShapeError, da.cols == db.rows, "inner dims differ: A ", a.to_string(),
               " gives K=", da.cols, ", B ", b.to_string(), " gives K=", db.rows);
    DType out;
    NM_REQUIRE(DTypeError, matmul_out_dtype(a.dtype, b.dtype, out), "unsupported dtypes: A ",
               a.to_string(), ", B ", b.to_string(), " (", kMatmulDtypesDoc, ")");
    outputs[0] = TensorLayout({a[0], da.rows, db.cols}, out);
}

void Dot::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &a = inputs[0], &b = inputs[1];
    NM_REQUIRE(ShapeError, a.ndim == 1 && b.ndim == 1 && a[0] == b[0],
               "A and B must be 1-D of equal length, got ", a.to_string(), " and ", b.to_string());
    DType out;
    NM_REQUIRE(DTypeError, matmul_out_dtype(a.dtype, b.dtype, out), "unsupported dtypes: A ",
               a.to_string(), ", B ", b.to_string(), " (", kMatmulDtypesDoc, ")");
    outputs[0] = TensorLayout(TensorShape{}, out);
}

}  // namespace neomeg::dnn
