// Naive SVD: Eigen's JacobiSVD (accurate for any shape) in double, one matrix of the batch at a
// time (svd_decompose.h).
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/linalg.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/svd_decompose.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

using MatrixXd = SvdMatrix;

// Element (r, c) of the matrix whose origin is at element offset `origin`: the last two axes of
// `l`.
ptrdiff_t at2(const TensorLayout& l, ptrdiff_t origin, Eigen::Index r, Eigen::Index c) {
    return origin + r * l.stride[l.ndim - 2] + c * l.stride[l.ndim - 1];
}

class SVDImpl final : public SVD {
public:
    using SVD::SVD;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorND& src = in[0];
        const TensorLayout& sl = src.layout;
        const auto m = static_cast<Eigen::Index>(sl[sl.ndim - 2]);
        const auto n = static_cast<Eigen::Index>(sl[sl.ndim - 1]);
        const bool uv = m_param.compute_uv, full = m_param.full_matrices;
        const TensorND& s_out = uv ? out[1] : out[0];
        TensorShape batch = sl;
        batch.ndim -= 2;
        dispatch_float(sl.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            auto store = [](const TensorND& t, ptrdiff_t off, double v) {
                elem<T>(t, off) = static_cast<T>(static_cast<float>(v));
            };
            // Writes the matrix `v` into output t at the batch multi-index idx.
            auto store_matrix = [&](const TensorND& t, const auto& idx, const MatrixXd& v) {
                const ptrdiff_t o = offset_of(t.layout, idx.data());
                for (Eigen::Index r = 0; r < v.rows(); ++r)
                    for (Eigen::Index c = 0; c < v.cols(); ++c)
                        store(t, at2(t.layout, o, r, c), v(r, c));
            };
            MatrixXd a(m, n);
            for_each_index(batch, [&](const auto& idx) {
                const ptrdiff_t so = offset_of(sl, idx.data());
                for (Eigen::Index r = 0; r < m; ++r)
                    for (Eigen::Index c = 0; c < n; ++c)
                        a(r, c) = static_cast<double>(
                                static_cast<compute_type_t<T>>(elem<T>(src, at2(sl, so, r, c))));
                MatrixXd u, vh;
                Eigen::VectorXd s;
                svd_decompose(a, uv, full, u, s, vh);
                const ptrdiff_t o = offset_of(s_out.layout, idx.data());
                for (Eigen::Index i = 0; i < s.size(); ++i)
                    store(s_out, o + i * s_out.layout.stride[s_out.layout.ndim - 1], s(i));
                if (uv) {
                    store_matrix(out[0], idx, u);
                    store_matrix(out[2], idx, vh);
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(SVD, SVDImpl);
}  // namespace neomeg::dnn::naive
