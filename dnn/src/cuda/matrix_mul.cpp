// MatrixMul and BatchedMatrixMul through cuBLAS (cublasGemmStridedBatchedEx), float32, float16
// and bfloat16, accumulating in float32. cuBLAS is column-major: the row-major product C = A'B'
// is computed as C^T = B'^T A'^T, which reads the same memory with the operands swapped, so no
// operand is ever copied. A column-major operand (a transposed view) flips its transpose flag;
// other strides (padded inner axes, broadcast or reversed rows), integer dtypes and K = 0 go to
// the staged naive kernel. float32 uses TF32 tensor cores only when Handle::cuda_allow_tf32().
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>

#include "neomeg/dnn/operators/linalg.h"
#include "src/cuda/kernel.h"

namespace neomeg::dnn::cuda {
namespace {

// An operand as cuBLAS reads it: a row-major matrix with leading dimension `ld`, the stored
// matrix's transpose when it was column-major.
struct RowMajor {
    int64_t ld;
    bool flipped;
};

std::optional<RowMajor> as_row_major(size_t rows, size_t cols, ptrdiff_t sr, ptrdiff_t sc) {
    auto r = static_cast<ptrdiff_t>(rows), c = static_cast<ptrdiff_t>(cols);
    // A stride along an axis of size 1 is never used: pick the one that fits.
    if (c == 1)
        sc = 1;
    if (r == 1)
        sr = std::max<ptrdiff_t>(c, 1);
    if (sc == 1 && sr >= std::max<ptrdiff_t>(c, 1))
        return RowMajor{sr, false};
    if (r == 1 || c == 1)
        return std::nullopt;
    if (sr == 1 && sc >= std::max<ptrdiff_t>(r, 1))
        return RowMajor{sc, true};
    return std::nullopt;
}

std::optional<cudaDataType_t> cublas_type(DType dt) {
    switch (dt.enumv()) {
        case DTypeEnum::Float32:
            return CUDA_R_32F;
        case DTypeEnum::Float16:
            return CUDA_R_16F;
        case DTypeEnum::BFloat16:
            return CUDA_R_16BF;
        default:
            return std::nullopt;
    }
}

// One call's shape: the matrix axes start at `first` (1 for batched operands).
struct Gemm {
    int64_t batch, m, n, k;
    RowMajor a, b, c;
    int64_t a_batch, b_batch, c_batch;
    bool ta, tb;
};

std::optional<Gemm> plan_gemm(const TensorLayout& a, const TensorLayout& b, const TensorLayout& c,
                              size_t first, bool trans_a, bool trans_b) {
    if (!cublas_type(a.dtype) || a.dtype != b.dtype || a.dtype != c.dtype)
        return std::nullopt;
    Gemm g{};
    g.batch = first ? static_cast<int64_t>(c[0]) : 1;
    g.m = static_cast<int64_t>(c[first]);
    g.n = static_cast<int64_t>(c[first + 1]);
    g.k = static_cast<int64_t>(trans_a ? a[first] : a[first + 1]);
    if (g.k == 0)
        return std::nullopt;
    auto pa = as_row_major(a[first], a[first + 1], a.stride[first], a.stride[first + 1]);
    auto pb = as_row_major(b[first], b[first + 1], b.stride[first], b.stride[first + 1]);
    auto pc = as_row_major(c[first], c[first + 1], c.stride[first], c.stride[first + 1]);
    // cuBLAS writes C^T column-major, that is C row-major: C cannot be flipped.
    if (!pa || !pb || !pc || pc->flipped)
        return std::nullopt;
    g.a = *pa;
    g.b = *pb;
    g.c = *pc;
    g.ta = trans_a != pa->flipped;
    g.tb = trans_b != pb->flipped;
    if (first) {
        g.a_batch = a.stride[0];
        g.b_batch = b.stride[0];
        g.c_batch = c.stride[0];
        // Operands may repeat one matrix over the batch (stride 0); C may not overlap itself.
        if (g.a_batch < 0 || g.b_batch < 0 || (g.batch > 1 && g.c_batch <= 0))
            return std::nullopt;
    }
    int64_t limit = std::numeric_limits<int>::max();
    for (int64_t v : {g.batch, g.m, g.n, g.k, g.a.ld, g.b.ld, g.c.ld})
        if (v > limit)
            return std::nullopt;
    return g;
}

template <class Op>
class MatmulImpl final : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

private:
    static constexpr size_t kFirst = std::is_same_v<Op, BatchedMatrixMul> ? 1 : 0;

    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        if (out[0].is_empty())
            return true;
        return plan_gemm(in[0], in[1], out[0], kFirst, this->m_param.transposeA,
                         this->m_param.transposeB)
                .has_value();
    }

    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &a = in[0], &b = in[1], &c = out[0];
        if (c.layout.is_empty())
            return "cuda:empty";
        Gemm g = *plan_gemm(a.layout, b.layout, c.layout, kFirst, this->m_param.transposeA,
                            this->m_param.transposeB);
        cudaDataType_t type = *cublas_type(c.layout.dtype);
        cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
        if (type == CUDA_R_32F && Handle::cuda_allow_tf32())
            compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        float alpha = 1, beta = 0;
        auto i = [](int64_t v) { return static_cast<int>(v); };
        // C^T (n x m, column-major) = op(B memory) (n x k) * op(A memory) (k x m).
        NM_CUBLAS_CHECK(libcublas().cublasGemmStridedBatchedEx(
                this->cuda_handle().cublas(), g.tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, i(g.n), i(g.m), i(g.k), &alpha, b.raw_ptr(), type,
                i(g.b.ld), g.b_batch, a.raw_ptr(), type, i(g.a.ld), g.a_batch, &beta, c.raw_ptr(),
                type, i(g.c.ld), g.c_batch, i(g.batch), compute, CUBLAS_GEMM_DEFAULT));
        return compute == CUBLAS_COMPUTE_32F ? "cublas" : "cublas:tf32";
    }
};

// Dot through cublasDotEx, float32 accumulation, the result written on the device (device pointer
// mode for this call only, so that nothing waits for it).
class DotImpl final : public CudaKernel<Dot> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout>) override {
        auto fits = [](const TensorLayout& l) {
            return l[0] > 0 && l[0] < (size_t{1} << 31) && l.stride[0] != 0 &&
                   std::abs(l.stride[0]) < (ptrdiff_t{1} << 31);
        };
        return cublas_type(in[0].dtype) && fits(in[0]) && fits(in[1]);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        cudaDataType_t type = *cublas_type(in[0].layout.dtype);
        cublasHandle_t h = cuda_handle().cublas();
        // BLAS walks a negative increment from the far end; ours starts at the pointer.
        auto base = [](const TensorND& t) {
            ptrdiff_t s = t.layout.stride[0];
            auto* p = static_cast<std::byte*>(t.raw_ptr());
            if (s < 0)
                p += s * static_cast<ptrdiff_t>(t.layout[0] - 1) *
                     static_cast<ptrdiff_t>(t.layout.dtype.size());
            return static_cast<void*>(p);
        };
        NM_CUBLAS_CHECK(libcublas().cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
        cublasStatus_t st = libcublas().cublasDotEx(
                h, static_cast<int>(in[0].layout[0]), base(in[0]), type,
                static_cast<int>(in[0].layout.stride[0]), base(in[1]), type,
                static_cast<int>(in[1].layout.stride[0]), out[0].raw_ptr(), type, CUDA_R_32F);
        NM_CUBLAS_CHECK(libcublas().cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
        NM_CUBLAS_CHECK(st);
        return "cublas";
    }
};

}  // namespace
NM_REGISTER_CUDA(Dot, DotImpl);
NM_REGISTER_CUDA(MatrixMul, MatmulImpl<MatrixMul>);
NM_REGISTER_CUDA(BatchedMatrixMul, MatmulImpl<BatchedMatrixMul>);
}  // namespace neomeg::dnn::cuda
