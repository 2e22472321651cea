// Helpers shared by the MatrixInverse and SVD tests: small dense matrices in double, row-major.
#pragma once

#include <vector>

#include "naive/reduce_test_util.h"

namespace neomeg::dnn::test::linalg {

// c (m, n) = a (m, k) @ b (k, n).
inline std::vector<double> mm(const std::vector<double>& a, const std::vector<double>& b, size_t m,
                              size_t k, size_t n) {
    std::vector<double> c(m * n, 0.0);
    for (size_t i = 0; i < m; ++i)
        for (size_t p = 0; p < k; ++p)
            for (size_t j = 0; j < n; ++j)
                c[i * n + j] += a[i * k + p] * b[p * n + j];
    return c;
}

inline std::vector<double> transpose(const std::vector<double>& a, size_t rows, size_t cols) {
    std::vector<double> t(a.size());
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j)
            t[j * rows + i] = a[i * cols + j];
    return t;
}

inline std::vector<double> identity(size_t n) {
    std::vector<double> e(n * n, 0.0);
    for (size_t i = 0; i < n; ++i)
        e[i * n + i] = 1.0;
    return e;
}

// Matrix b of a batch of (rows, cols) matrices stored row-major one after another.
inline std::vector<double> slice(const std::vector<double>& v, size_t b, size_t rows, size_t cols) {
    auto first = v.begin() + static_cast<ptrdiff_t>(b * rows * cols);
    return {first, first + static_cast<ptrdiff_t>(rows * cols)};
}

inline ::testing::AssertionResult near(const std::vector<double>& got,
                                       const std::vector<double>& want, double tol) {
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
    for (size_t i = 0; i < got.size(); ++i)
        if (!(std::abs(got[i] - want[i]) <= tol))
            return ::testing::AssertionFailure()
                   << "element " << i << ": " << got[i] << " vs " << want[i];
    return ::testing::AssertionSuccess();
}

}  // namespace neomeg::dnn::test::linalg
