// a = u diag(s) vh in double through Eigen: the one decomposition naive and x86 SVD share, so the
// two agree on the conventions Eigen leaves open. A matrix with no elements has no singular values
// (and identity factors when full); one holding NaN or inf gets NaN everywhere, which Eigen does
// not give. Include it after any EIGEN_* configuration macro of the including file.
#pragma once

#include <Eigen/SVD>
#include <algorithm>
#include <limits>

namespace neomeg::dnn {

using SvdMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One-sided JacobiSVD up to `jacobi_max` rows and columns (naive: always), Eigen's
// divide-and-conquer BDCSVD beyond (far faster on large matrices; singular values agree to
// rounding, a singular vector pair may differ in sign).
inline void svd_decompose(const SvdMatrix& a, bool uv, bool full, SvdMatrix& u, Eigen::VectorXd& s,
                          SvdMatrix& vh,
                          Eigen::Index jacobi_max = std::numeric_limits<Eigen::Index>::max()) {
    const Eigen::Index m = a.rows(), n = a.cols(), k = std::min(m, n);
    const Eigen::Index ucols = full ? m : k, vrows = full ? n : k;
    if (k == 0) {
        s.resize(0);
        u = SvdMatrix::Identity(m, ucols);
        vh = SvdMatrix::Identity(vrows, n);
        return;
    }
    if (!a.allFinite()) {
        constexpr double nan = std::numeric_limits<double>::quiet_NaN();
        s = Eigen::VectorXd::Constant(k, nan);
        u = SvdMatrix::Constant(m, ucols, nan);
        vh = SvdMatrix::Constant(vrows, n, nan);
        return;
    }
    unsigned opts = 0;
    if (uv)
        opts = full ? Eigen::ComputeFullU | Eigen::ComputeFullV
                    : Eigen::ComputeThinU | Eigen::ComputeThinV;
    auto take = [&](const auto& svd) {
        s = svd.singularValues();
        if (uv) {
            u = svd.matrixU();
            vh = svd.matrixV().transpose();
        }
    };
    if (std::max(m, n) <= jacobi_max)
        take(Eigen::JacobiSVD<Eigen::MatrixXd>(a, opts));
    else
        take(Eigen::BDCSVD<Eigen::MatrixXd>(a, opts));
}

}  // namespace neomeg::dnn
