// Naive MatrixInverse: Gauss-Jordan elimination with partial pivoting, in double, one matrix of
// the batch at a time. A matrix holding NaN or inf gets an all-NaN inverse.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "neomeg/dnn/operators/linalg.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

// Replaces the n x n row-major matrix `a` by the identity and `inv` by the inverse of `a`:
// the row operations that reduce [a | I] to [I | a^-1]. Returns false, leaving both partly
// reduced, when a pivot is exactly zero (a is singular).
bool gauss_jordan(std::vector<double>& a, std::vector<double>& inv, size_t n) {
    auto at = [n](std::vector<double>& m, size_t r, size_t c) -> double& { return m[r * n + c]; };
    inv.assign(n * n, 0.0);
    for (size_t i = 0; i < n; ++i)
        at(inv, i, i) = 1.0;
    for (size_t col = 0; col < n; ++col) {
        // Partial pivoting: the row at or below `col` with the largest |a[row][col]|.
        size_t p = col;
        for (size_t r = col + 1; r < n; ++r)
            if (std::abs(at(a, r, col)) > std::abs(at(a, p, col)))
                p = r;
        const double pivot = at(a, p, col);
        if (pivot == 0.0)
            return false;
        for (size_t j = 0; j < n; ++j) {
            std::swap(at(a, p, j), at(a, col, j));
            std::swap(at(inv, p, j), at(inv, col, j));
        }
        for (size_t j = 0; j < n; ++j) {
            at(a, col, j) /= pivot;
            at(inv, col, j) /= pivot;
        }
        // Clear column `col` in every other row.
        for (size_t r = 0; r < n; ++r) {
            const double f = at(a, r, col);
            if (r == col || f == 0.0)
                continue;
            for (size_t j = 0; j < n; ++j) {
                at(a, r, j) -= f * at(a, col, j);
                at(inv, r, j) -= f * at(inv, col, j);
            }
        }
    }
    return true;
}

class MatrixInverseImpl final : public MatrixInverse {
public:
    using MatrixInverse::MatrixInverse;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorND &src = in[0], &dst = out[0];
        const TensorLayout &sl = src.layout, &dl = dst.layout;
        const size_t nd = sl.ndim, n = sl[nd - 1];
        TensorShape batch = sl;
        batch.ndim -= 2;
        dispatch_float(sl.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            std::vector<double> a(n * n), inv;
            size_t index = 0;  // of the matrix in the flattened batch, for the error message
            // The multi-index's matrix axes stay 0, so offset_of gives the matrix's origin.
            for_each_index(batch, [&](const auto& idx) {
                const ptrdiff_t so = offset_of(sl, idx.data()), dof = offset_of(dl, idx.data());
                auto s = [](size_t i) { return static_cast<ptrdiff_t>(i); };
                for (size_t r = 0; r < n; ++r)
                    for (size_t c = 0; c < n; ++c)
                        a[r * n + c] = static_cast<double>(static_cast<compute_type_t<T>>(elem<T>(
                                src, so + s(r) * sl.stride[nd - 2] + s(c) * sl.stride[nd - 1])));
                bool finite =
                        std::all_of(a.begin(), a.end(), [](double x) { return std::isfinite(x); });
                if (finite) {
                    NM_REQUIRE(ParamError, gauss_jordan(a, inv, n), "matrix ", index,
                               " of the batch (flattened) is singular, src ", sl.to_string());
                } else {
                    inv.assign(n * n, std::numeric_limits<double>::quiet_NaN());
                }
                for (size_t r = 0; r < n; ++r)
                    for (size_t c = 0; c < n; ++c)
                        elem<T>(dst, dof + s(r) * dl.stride[nd - 2] + s(c) * dl.stride[nd - 1]) =
                                static_cast<T>(static_cast<float>(inv[r * n + c]));
                ++index;
            });
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(MatrixInverse, MatrixInverseImpl);
}  // namespace neomeg::dnn::naive
