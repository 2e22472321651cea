// Naive MatrixMul, BatchedMatrixMul and Dot: one strided triple loop serves all three.
#include <cstdint>

#include "neomeg/dnn/operators/linalg.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

// C (M, N) = A' (M, K) @ B' (K, N), where A' and B' are what the strides below address; a
// transposed operand is just the other pair of strides.
struct Gemm {
    size_t m, n, k;
    ptrdiff_t a_row, a_k, b_k, b_col, c_row, c_col;
};

// The two matrix axes start at axis `first` (1 for batched operands, whose axis 0 is the batch).
Gemm make_gemm(const TensorLayout& a, const TensorLayout& b, const TensorLayout& c, size_t first,
               bool trans_a, bool trans_b) {
    size_t rows = first, cols = first + 1;
    Gemm g{};
    g.m = c[rows];
    g.n = c[cols];
    g.k = trans_a ? a[rows] : a[cols];
    g.a_row = trans_a ? a.stride[cols] : a.stride[rows];
    g.a_k = trans_a ? a.stride[rows] : a.stride[cols];
    g.b_k = trans_b ? b.stride[cols] : b.stride[rows];
    g.b_col = trans_b ? b.stride[rows] : b.stride[cols];
    g.c_row = c.stride[rows];
    g.c_col = c.stride[cols];
    return g;
}

// Floats accumulate in double; integers in uint64, whose wrap truncates to int32's.
template <class T>
void run_gemm(const Gemm& g, const TensorND& a, ptrdiff_t a_off, const TensorND& b, ptrdiff_t b_off,
              const TensorND& c, ptrdiff_t c_off) {
    using Acc = std::conditional_t<is_float_type_v<T>, double, uint64_t>;
    auto as = [](size_t i) { return static_cast<ptrdiff_t>(i); };
    for (size_t i = 0; i < g.m; ++i) {
        for (size_t j = 0; j < g.n; ++j) {
            Acc acc = 0;
            for (size_t p = 0; p < g.k; ++p) {
                auto x = static_cast<compute_type_t<T>>(
                        elem<T>(a, a_off + as(i) * g.a_row + as(p) * g.a_k));
                auto y = static_cast<compute_type_t<T>>(
                        elem<T>(b, b_off + as(p) * g.b_k + as(j) * g.b_col));
                if constexpr (is_float_type_v<T>)
                    acc += static_cast<double>(x) * static_cast<double>(y);
                else
                    acc += static_cast<uint64_t>(static_cast<int64_t>(x)) *
                           static_cast<uint64_t>(static_cast<int64_t>(y));
            }
            ptrdiff_t co = c_off + as(i) * g.c_row + as(j) * g.c_col;
            if constexpr (is_float_type_v<T>)
                elem<T>(c, co) = static_cast<T>(static_cast<float>(acc));
            else
                elem<dt_int32>(c, co) = static_cast<dt_int32>(acc);
        }
    }
}

// The input dtypes deduce_layout accepts; anything else was rejected there. QuantizedS8 runs on
// its int8 storage: the int32 sums are the QuantizedS32 output's values.
template <class F>
void dispatch_matmul(DType dt, const std::string& who, F&& f) {
    switch (dt.storage().enumv()) {
        case DTypeEnum::Int8:
            return f(TypeTag<dt_int8>{});
        case DTypeEnum::Int16:
            return f(TypeTag<dt_int16>{});
        case DTypeEnum::Int32:
            return f(TypeTag<dt_int32>{});
        default:
            return dispatch_float(dt, who, std::forward<F>(f));
    }
}

class MatrixMulImpl final : public MatrixMul {
public:
    using MatrixMul::MatrixMul;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        Gemm g = make_gemm(in[0].layout, in[1].layout, out[0].layout, 0, m_param.transposeA,
                           m_param.transposeB);
        dispatch_matmul(in[0].layout.dtype, param_str(), [&](auto tag) {
            run_gemm<typename decltype(tag)::type>(g, in[0], 0, in[1], 0, out[0], 0);
        });
    }
};

class BatchedMatrixMulImpl final : public BatchedMatrixMul {
public:
    using BatchedMatrixMul::BatchedMatrixMul;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorLayout &a = in[0].layout, &b = in[1].layout, &c = out[0].layout;
        Gemm g = make_gemm(a, b, c, 1, m_param.transposeA, m_param.transposeB);
        dispatch_matmul(a.dtype, param_str(), [&](auto tag) {
            for (size_t i = 0; i < c[0]; ++i) {
                auto bi = static_cast<ptrdiff_t>(i);
                run_gemm<typename decltype(tag)::type>(g, in[0], bi * a.stride[0], in[1],
                                                       bi * b.stride[0], out[0], bi * c.stride[0]);
            }
        });
    }
};

class DotImpl final : public Dot {
public:
    using Dot::Dot;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorLayout &a = in[0].layout, &b = in[1].layout;
        // A (1, K) row times B (K, 1) column into the scalar C.
        Gemm g{1, 1, a[0], 0, a.stride[0], b.stride[0], 0, 0, 0};
        dispatch_matmul(a.dtype, param_str(), [&](auto tag) {
            run_gemm<typename decltype(tag)::type>(g, in[0], 0, in[1], 0, out[0], 0);
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(MatrixMul, MatrixMulImpl);
NM_REGISTER_NAIVE(BatchedMatrixMul, BatchedMatrixMulImpl);
NM_REGISTER_NAIVE(Dot, DotImpl);
}  // namespace neomeg::dnn::naive
