// MatrixInverse and SVD on the x86 handle against naive. MatrixInverse exactly (the same
// Gauss-Jordan steps): batches split across threads, a lone large matrix split by rows, the float
// dtypes, strided inputs and outputs, empty batches and 0 x 0 matrices, singular matrices (the
// same error, naming the first singular matrix) and NaN/inf (all-NaN inverses). SVD exactly up to
// 32 rows and columns (naive's JacobiSVD), every full_matrices/compute_uv combination; above that
// (BDCSVD) singular values within rounding of naive's and factors that are orthonormal and
// reconstruct src.
#include <limits>

#include "naive/linalg_test_util.h"
#include "neomeg/dnn/operators/linalg.h"
#include "neomeg/dnn/param_base.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using namespace neomeg::dnn::test::linalg;

namespace {

param::SVD svd_param(bool full, bool uv) {
    param::SVD p;
    p.full_matrices = full;
    p.compute_uv = uv;
    return p;
}

}  // namespace

TEST_F(X86, MatrixInverseMatchesNaiveExactly) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (TensorShape s : {TensorShape{1, 1}, TensorShape{3, 3}, TensorShape{2, 5, 5},
                              TensorShape{2, 3, 17, 17}, TensorShape{64, 8, 8},
                              TensorShape{200, 200}, TensorShape{0, 4, 4}, TensorShape{3, 0, 0}}) {
            Checker<MatrixInverse> c(handle.get());
            c.set_dtype(0, dt).set_epsilon(0).execs({s});
            c.set_noncontiguous(true).execs({s});
        }
    Checker<MatrixInverse> t(handle.get());
    t.set_epsilon(0).exec_layouts({TensorLayout({2, 6, 6}, dtype::Float32).dimshuffle({0, 2, 1})});
}

TEST_F(X86, MatrixInverseSingularAndNonFinite) {
    // Matrices 1 and 2 of the batch are singular; naive and x86 both name matrix 1.
    auto x = HostTensor::from({3, 2, 2}, {1, 2, 3, 4, 1, 2, 2, 4, 0, 0, 0, 0});
    auto expect_singular = [&](Handle& h) {
        auto inv = h.create_operator<MatrixInverse>();
        try {
            run_op(*inv, {x});
            ADD_FAILURE() << "no error for a singular matrix on " << h.name();
        } catch (const ParamError& e) {
            EXPECT_NE(std::string(e.what()).find("matrix 1 of the batch"), std::string::npos)
                    << e.what();
        }
    };
    expect_singular(*handle);
    expect_singular(*Handle::make_naive());
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    Checker<MatrixInverse> c(handle.get());
    c.set_epsilon(0).set_values(0, {1, nan, 3, 4, 2, 0, 0, 2, inf, 1, 1, 1}).execs({{3, 2, 2}});
}

TEST_F(X86, SVDSmallMatchesNaiveExactly) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (TensorShape s : {TensorShape{1, 1}, TensorShape{3, 3}, TensorShape{2, 4, 3},
                              TensorShape{5, 2, 7}, TensorShape{2, 2, 32, 20}, TensorShape{0, 3, 3},
                              TensorShape{2, 3, 0}, TensorShape{2, 0, 4}})
            for (bool full : {false, true})
                for (bool uv : {false, true}) {
                    Checker<SVD> c(handle.get());
                    c.set_param(svd_param(full, uv)).set_dtype(0, dt).set_epsilon(0);
                    c.execs({s});
                    c.set_noncontiguous(true).execs({s});
                }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Checker<SVD> c(handle.get());
    c.set_param(svd_param(false, true)).set_epsilon(0);
    c.set_values(0, {1, 2, nan, 4, 1, 2, 3, 4}).execs({{2, 2, 2}});
}

TEST_F(X86, SVDLargeFactorsAndValues) {
    std::mt19937 rng(13);
    for (auto [m, n] : {std::pair<size_t, size_t>{40, 50}, {70, 33}, {64, 64}})
        for (bool full : {false, true}) {
            HostTensor x({2, m, n}, dtype::Float32);
            fill_uniform(x, -1, 1, rng);
            auto op = handle->create_operator<SVD>();
            op->param() = svd_param(full, true);
            auto got = run_op(*op, {x});
            EXPECT_EQ(last_kernel(*op), "eigen:bdc");
            auto naive = Handle::make_naive();
            auto ref = naive->create_operator<SVD>();
            ref->param() = svd_param(full, true);
            auto want = run_op(*ref, {x});
            EXPECT_TRUE(near(got[1].values(), want[1].values(), 1e-5));
            const size_t k = std::min(m, n), uc = full ? m : k, vr = full ? n : k;
            for (size_t b = 0; b < 2; ++b) {
                auto u = slice(got[0].values(), b, m, uc), vh = slice(got[2].values(), b, vr, n);
                auto s = slice(got[1].values(), b, 1, k), a = slice(x.values(), b, m, n);
                EXPECT_TRUE(near(mm(transpose(u, m, uc), u, uc, m, uc), identity(uc), 1e-5));
                EXPECT_TRUE(near(mm(vh, transpose(vh, vr, n), vr, n, vr), identity(vr), 1e-5));
                std::vector<double> us(m * k);
                for (size_t i = 0; i < m; ++i)
                    for (size_t j = 0; j < k; ++j)
                        us[i * k + j] = u[i * uc + j] * s[j];
                std::vector<double> vk(vh.begin(), vh.begin() + static_cast<ptrdiff_t>(k * n));
                EXPECT_TRUE(near(mm(us, vk, m, k, n), a, 1e-5));
            }
            op->param() = svd_param(full, false);
            EXPECT_TRUE(near(run_op(*op, {x})[0].values(), want[1].values(), 1e-5));
        }
}

TEST_F(X86, LinalgRunsItsKernels) {
    std::mt19937 rng(6);
    HostTensor x({2, 4, 4}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    EXPECT_EQ(run_and_compare<MatrixInverse>(*handle, param::Empty{}, {x}, {}, 0), "gauss_jordan");
    EXPECT_EQ(run_and_compare<SVD>(*handle, svd_param(false, true), {x}, {}, 0), "eigen:jacobi");
}
