#include <algorithm>

#include "naive/linalg_test_util.h"
#include "neomeg/dnn/operators/linalg.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using namespace neomeg::dnn::test::linalg;

namespace {

param::SVD svd_param(bool full, bool uv = true) {
    param::SVD p;
    p.full_matrices = full;
    p.compute_uv = uv;
    return p;
}

std::vector<double> abs_values(const std::vector<double>& v) {
    std::vector<double> a(v.size());
    std::transform(v.begin(), v.end(), a.begin(), [](double x) { return std::abs(x); });
    return a;
}

// Checks one (m, n) matrix `a` against its factors: S descending and non-negative, the columns
// of U and rows of Vh orthonormal, and U[:, :k] diag(S) Vh[:k, :] = a.
void check_factors(const std::vector<double>& a, const std::vector<double>& u,
                   const std::vector<double>& s, const std::vector<double>& vh, size_t m, size_t n,
                   bool full, const std::string& what) {
    const size_t k = std::min(m, n), uc = full ? m : k, vr = full ? n : k;
    for (size_t i = 0; i < k; ++i) {
        EXPECT_GE(s[i], 0) << what;
        if (i) {
            EXPECT_GE(s[i - 1], s[i]) << what;
        }
    }
    EXPECT_TRUE(near(mm(transpose(u, m, uc), u, uc, m, uc), identity(uc), 1e-5)) << what;
    EXPECT_TRUE(near(mm(vh, transpose(vh, vr, n), vr, n, vr), identity(vr), 1e-5)) << what;
    std::vector<double> us(m * k);
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < k; ++j)
            us[i * k + j] = u[i * uc + j] * s[j];
    std::vector<double> vk(vh.begin(), vh.begin() + static_cast<ptrdiff_t>(k * n));
    EXPECT_TRUE(near(mm(us, vk, m, k, n), a, 1e-5)) << what;
}

}  // namespace

TEST(SVD, HandComputed2x2) {
    // A^T A = [[25, 20], [20, 25]] has eigenvalues 45 and 5 with eigenvectors (1, 1) and (1, -1);
    // u_i = A v_i / s_i.
    auto a = HostTensor::from({2, 2}, {3, 0, 4, 5});
    auto out = run<SVD>(svd_param(false), {a});
    ASSERT_EQ(out.size(), 3u);
    EXPECT_TRUE(near(out[1].values(), {std::sqrt(45.0), std::sqrt(5.0)}, 1e-6));
    const double r10 = 1 / std::sqrt(10.0), r2 = 1 / std::sqrt(2.0);
    EXPECT_TRUE(near(abs_values(out[0].values()), {r10, 3 * r10, 3 * r10, r10}, 1e-6));
    EXPECT_TRUE(near(abs_values(out[2].values()), {r2, r2, r2, r2}, 1e-6));
    check_factors(a.values(), out[0].values(), out[1].values(), out[2].values(), 2, 2, false,
                  "2x2");
    // MegEngine's documented example: arange(6) as (2, 3) has singular values 7.348 and 1
    // (A A^T = [[5, 14], [14, 50]] has eigenvalues 54 and 1).
    auto s = run1<SVD>(svd_param(false, false), {HostTensor::from({2, 3}, {0, 1, 2, 3, 4, 5})});
    EXPECT_TRUE(near(s.values(), {std::sqrt(54.0), 1.0}, 1e-5));
}

TEST(SVD, ReconstructsEveryShapeThinAndFull) {
    std::mt19937 rng(91);
    for (auto shape :
         std::vector<TensorShape>{{3, 5}, {5, 3}, {4, 4}, {2, 3, 4, 2}, {1, 1}, {1, 6}}) {
        const size_t m = shape[shape.ndim - 2], n = shape[shape.ndim - 1], k = std::min(m, n);
        const size_t batch = shape.total_nr_elems() / (m * n);
        auto v = random_values(shape.total_nr_elems(), -1, 1, rng);
        for (bool full : {false, true}) {
            auto out = run<SVD>(svd_param(full), {HostTensor::from(shape, v)});
            const size_t uc = full ? m : k, vr = full ? n : k;
            TensorShape us = shape, ss = shape, vs = shape;
            us[us.ndim - 1] = uc;
            vs[vs.ndim - 2] = vr;
            ss.ndim -= 1;
            ss[ss.ndim - 1] = k;
            EXPECT_EQ(out[0].shape().to_string(), us.to_string());
            EXPECT_EQ(out[1].shape().to_string(), ss.to_string());
            EXPECT_EQ(out[2].shape().to_string(), vs.to_string());
            auto u = out[0].values(), s = out[1].values(), vh = out[2].values();
            for (size_t b = 0; b < batch; ++b)
                check_factors(slice(v, b, m, n), slice(u, b, m, uc), slice(s, b, 1, k),
                              slice(vh, b, vr, n), m, n, full,
                              shape.to_string() + (full ? " full" : " thin") + " matrix " +
                                      std::to_string(b));
            // Without compute_uv the one output is S.
            auto only_s = run<SVD>(svd_param(full, false), {HostTensor::from(shape, v)});
            ASSERT_EQ(only_s.size(), 1u);
            EXPECT_TRUE(tensors_near(only_s[0], out[1], 1e-6));
        }
    }
}

TEST(SVD, RankDeficientAndOneByOne) {
    auto s = run1<SVD>(svd_param(false, false), {HostTensor::from({2, 2}, {1, 2, 2, 4})});
    EXPECT_TRUE(near(s.values(), {5, 0}, 1e-6));
    auto out = run<SVD>(svd_param(false), {HostTensor::from({1, 1}, {-2})});
    EXPECT_EQ(out[1].values(), (std::vector<double>{2}));
    EXPECT_EQ(out[0].values()[0] * out[2].values()[0], -1);
}

TEST(SVD, EmptyShapes) {
    // No singular values; full factors of an empty matrix are identities (numpy's too).
    auto thin = run<SVD>(svd_param(false), {HostTensor({0, 3}, dtype::Float32)});
    EXPECT_EQ(thin[0].shape().to_string(), "{0,0}");
    EXPECT_EQ(thin[1].shape().to_string(), "{0}");
    EXPECT_EQ(thin[2].shape().to_string(), "{0,3}");
    auto full = run<SVD>(svd_param(true), {HostTensor({0, 3}, dtype::Float32)});
    EXPECT_EQ(full[2].shape().to_string(), "{3,3}");
    EXPECT_EQ(full[2].values(), identity(3));
    auto batch0 = run<SVD>(svd_param(false), {HostTensor({0, 2, 2}, dtype::Float32)});
    EXPECT_EQ(batch0[0].shape().to_string(), "{0,2,2}");
    EXPECT_EQ(batch0[1].shape().to_string(), "{0,2}");
}

TEST(SVD, StridedInputsAndOutputs) {
    for (bool full : {false, true}) {
        Checker<SVD> c(naive_handle());
        c.set_param(svd_param(full)).set_noncontiguous(true).execs({{4, 3}}).execs({{2, 3, 5}});
        c.set_noncontiguous(false);
        c.exec_layouts({TensorLayout({5, 4}, dtype::Float32).dimshuffle({1, 0})});
        c.exec_layouts({TensorLayout({1, 3, 2}, dtype::Float32).broadcast({3, 3, 2})});
        c.exec_layouts({TensorLayout({3, 3}, {-3, 1}, dtype::Float32)});
    }
    std::mt19937 rng(92);
    auto a = HostTensor::from({2, 3, 4}, random_values(24, -1, 1, rng));
    auto padded = run_into_padded<SVD>(svd_param(false), {a});
    auto plain = run<SVD>(svd_param(false), {a});
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_FALSE(padded[i].layout().is_contiguous());
        EXPECT_TRUE(tensors_near(padded[i], plain[i], 0)) << i;
    }
}

TEST(SVD, LowPrecisionFloats) {
    std::mt19937 rng(93);
    auto v = random_values(12, -1, 1, rng);
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto a = HostTensor::from({4, 3}, v, dt);
        auto s = run1<SVD>(svd_param(false, false), {a});
        EXPECT_EQ(s.dtype(), dt);
        auto want = run1<SVD>(svd_param(false, false), {HostTensor::from({4, 3}, a.values())});
        EXPECT_TRUE(tensors_near(s, HostTensor::from({3}, want.values(), dt), default_epsilon(dt)))
                << dt.name();
    }
}

TEST(SVD, NonFiniteGivesNaN) {
    auto out = run<SVD>(svd_param(false), {HostTensor::from({2, 2}, {1, INFINITY, 0, 1})});
    for (auto& t : out)
        for (double x : t.values())
            EXPECT_TRUE(std::isnan(x));
}

TEST(SVD, RejectsVectorsAndNonFloat) {
    expect_error<ShapeError>(
            [&] { run<SVD>(svd_param(false), {HostTensor({4}, dtype::Float32)}); },
            {"SVD(full_matrices=false, compute_uv=true)", "(..., M, N)", "{4(1)} float32"});
    expect_error<DTypeError>(
            [&] {
                run<SVD>(svd_param(false), {HostTensor({2, 2}, dtype::Int8)});
            },
            {"SVD(", "must be float", "int8"});
}
