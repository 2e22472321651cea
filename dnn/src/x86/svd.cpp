// SVD on x86: Eigen in double, as naive, the matrices of a batch split across OpenMP threads.
// Up to kJacobiMax columns and rows it is naive's one-sided JacobiSVD, so the factors are naive's
// bits; larger matrices take Eigen's divide-and-conquer BDCSVD, which is far faster there and as
// accurate (singular values agree to rounding; a singular vector pair may differ in sign, which
// the operator leaves unspecified). A matrix without elements has no singular values (identity
// factors when full); one holding NaN or inf gets NaN everywhere. Float dtypes, any strides.
// Eigen's own threading stays off: the batch is what is split.
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/SVD>
#include <algorithm>
#include <limits>

#include "neomeg/dnn/operators/linalg.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/svd_decompose.h"
#include "src/x86/flat_runs.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

using MatrixXd = SvdMatrix;

// Beyond this many rows and columns BDCSVD replaces JacobiSVD (whose cost grows much faster).
constexpr Eigen::Index kJacobiMax = 32;

class SVDImpl final : public LoopKernel<SVD> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND& src = inputs[0];
        const TensorLayout& sl = src.layout;
        const size_t outer = sl.ndim - 2;
        const auto m = static_cast<Eigen::Index>(sl[outer]);
        const auto n = static_cast<Eigen::Index>(sl[outer + 1]);
        const bool uv = m_param.compute_uv, full = m_param.full_matrices;
        const TensorND& s_out = uv ? outputs[1] : outputs[0];
        size_t batch = 1;
        for (size_t d = 0; d < outer; ++d)
            batch *= sl[d];
        m_last = std::max(m, n) <= kJacobiMax ? "eigen:jacobi" : "eigen:bdc";
        const size_t k = static_cast<size_t>(std::min(m, n));
        const size_t work = batch * static_cast<size_t>(m * n) * (k + 1) * 16;
        dispatch_float(sl.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* sp = static_cast<const T*>(src.raw_ptr());
            auto store_matrix = [&](const TensorND& t, size_t i, const MatrixXd& v) {
                const TensorLayout& l = t.layout;
                T* o = static_cast<T*>(t.raw_ptr()) + row_offset(l, outer, i);
                for (Eigen::Index r = 0; r < v.rows(); ++r)
                    for (Eigen::Index c = 0; c < v.cols(); ++c)
                        o[r * l.stride[outer] + c * l.stride[outer + 1]] =
                                static_cast<T>(static_cast<float>(v(r, c)));
            };
            parallel_ranges(batch, work, kParallelGrain, [&](size_t b, size_t e) {
                MatrixXd a(m, n), u, vh;
                Eigen::VectorXd s;
                for (size_t i = b; i < e; ++i) {
                    const T* x = sp + row_offset(sl, outer, i);
                    for (Eigen::Index r = 0; r < m; ++r)
                        for (Eigen::Index c = 0; c < n; ++c)
                            a(r, c) = static_cast<double>(static_cast<float>(
                                    x[r * sl.stride[outer] + c * sl.stride[outer + 1]]));
                    svd_decompose(a, uv, full, u, s, vh, kJacobiMax);
                    const TensorLayout& ls = s_out.layout;
                    T* so = static_cast<T*>(s_out.raw_ptr()) + row_offset(ls, outer, i);
                    for (Eigen::Index j = 0; j < s.size(); ++j)
                        so[j * ls.stride[outer]] = static_cast<T>(static_cast<float>(s(j)));
                    if (uv) {
                        store_matrix(outputs[0], i, u);
                        store_matrix(outputs[2], i, vh);
                    }
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_X86(SVD, SVDImpl);
}  // namespace neomeg::dnn::x86
