// SVD's host-side logic on the CPU (no GPU): svd_plan picks cuSOLVER's call and lays out the
// workspace; svd_layout.h's mapping from cuSOLVER's column-major results to the outputs, fed with
// Eigen's decomposition packed as cuSOLVER packs its own, reproduces naive's outputs exactly.
#include <gtest/gtest.h>

#include "common/host_tensor.h"
#include "neomeg/dnn/operators/linalg.h"
#include "src/common/svd_decompose.h"
#include "src/cuda/svd_plan.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::cuda;

namespace {

// Every output of one matrix through the mapping, from `a`'s decomposition packed column-major
// into cuSOLVER's shapes (ws_ucols and ws_vcols columns; naive's thin factors padded with zeros
// when the plan asks for full ones, which the mapping must never read).
std::vector<double> outputs_through_mapping(const SvdMatrix& a, const kern::SvdShape& sh, bool full,
                                            bool failed) {
    SvdMatrix u, vh;
    Eigen::VectorXd s;
    svd_decompose(a, sh.uv, full, u, s, vh);
    std::vector<double> ws_u(static_cast<size_t>(sh.m * sh.ws_ucols), 1e30),
            ws_v(static_cast<size_t>(sh.n * sh.ws_vcols), 1e30);
    for (Eigen::Index r = 0; r < u.rows(); ++r)
        for (Eigen::Index c = 0; c < u.cols(); ++c)
            ws_u[static_cast<size_t>(r + c * sh.m)] = u(r, c);
    for (Eigen::Index r = 0; r < vh.rows(); ++r)
        for (Eigen::Index c = 0; c < vh.cols(); ++c)
            ws_v[static_cast<size_t>(c + r * sh.n)] = vh(r, c);  // V = Vh^T, column-major
    std::vector<double> out;
    for (int64_t e = 0; e < kern::svd_outputs_per_matrix(sh); ++e)
        out.push_back(kern::svd_value(sh, kern::svd_element(sh, e), s.data(), ws_u.data(),
                                      ws_v.data(), failed));
    return out;
}

// Naive's outputs of one matrix, in the same order (S, then U and Vh).
std::vector<double> naive_outputs(const SvdMatrix& a, bool uv, bool full) {
    param::SVD p;
    p.compute_uv = uv;
    p.full_matrices = full;
    auto op = Handle::make_naive()->create_operator<SVD>();
    op->param() = p;
    std::vector<double> vals(a.data(), a.data() + a.size());
    auto outs = test::run_op(
            *op,
            {test::HostTensor::from({static_cast<size_t>(a.rows()), static_cast<size_t>(a.cols())},
                                    vals, dtype::Float32)});
    std::vector<double> r = outs[uv ? 1 : 0].values();
    if (uv)
        for (size_t i : {0u, 2u}) {
            auto v = outs[i].values();
            r.insert(r.end(), v.begin(), v.end());
        }
    return r;
}

}  // namespace

TEST(CudaSvdLayout, MappingReproducesNaive) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> dist(-1, 1);
    for (auto [m, n] : {std::pair{3, 3}, {5, 2}, {2, 5}, {40, 35}, {1, 7}, {0, 3}, {4, 0}})
        for (bool uv : {false, true})
            for (bool full : {false, true}) {
                auto plan = plan_svd(TensorLayout({static_cast<size_t>(m), static_cast<size_t>(n)},
                                                  dtype::Float32),
                                     uv, full);
                ASSERT_TRUE(plan);
                SvdMatrix a(m, n);
                for (int r = 0; r < m; ++r)
                    for (int c = 0; c < n; ++c)
                        // Through float32, as the naive operator reads its input.
                        a(r, c) = static_cast<float>(dist(rng));
                auto got = outputs_through_mapping(a, plan->shape, full, false);
                auto want = naive_outputs(a, uv, full);
                ASSERT_EQ(got.size(), want.size()) << m << "x" << n;
                for (size_t i = 0; i < got.size(); ++i)
                    EXPECT_EQ(static_cast<float>(got[i]), want[i])
                            << m << "x" << n << (uv ? " uv" : "") << (full ? " full" : "")
                            << ", output element " << i;
            }
}

TEST(CudaSvdLayout, FailedMatrixIsAllNaN) {
    auto plan = plan_svd(TensorLayout({3, 2}, dtype::Float32), true, true);
    ASSERT_TRUE(plan);
    SvdMatrix a(3, 2);
    a << 1, 2, 3, 4, 5, 6;
    auto got = outputs_through_mapping(a, plan->shape, true, true);
    ASSERT_EQ(got.size(), 2u + 9u + 4u);
    for (double v : got)
        EXPECT_TRUE(std::isnan(v));
}

TEST(CudaSvdPlan, SmallMatricesGoToTheBatchedCall) {
    auto p = plan_svd(TensorLayout({7, 32, 20}, dtype::Float32), true, false);
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->batched);
    EXPECT_EQ(p->batch, 7);
    // gesvdjBatched writes full factors whatever the outputs are.
    EXPECT_EQ(p->shape.ws_ucols, 32);
    EXPECT_EQ(p->shape.ws_vcols, 20);
    EXPECT_EQ(p->shape.ucols, 20);
    EXPECT_EQ(p->shape.vrows, 20);
    auto big = plan_svd(TensorLayout({2, 33, 20}, dtype::Float32), true, false);
    ASSERT_TRUE(big);
    EXPECT_FALSE(big->batched);
    // gesvdj's econ: k columns.
    EXPECT_EQ(big->shape.ws_ucols, 20);
    EXPECT_EQ(big->shape.ws_vcols, 20);
    auto full = plan_svd(TensorLayout({33, 20}, dtype::Float32), true, true);
    ASSERT_TRUE(full);
    EXPECT_EQ(full->shape.ws_ucols, 33);
    EXPECT_EQ(full->shape.ucols, 33);
}

TEST(CudaSvdPlan, WorkspaceRegionsAreDisjointAndAligned) {
    for (bool uv : {false, true}) {
        auto p = plan_svd(TensorLayout({3, 40, 50}, dtype::Float32), uv, true);
        ASSERT_TRUE(p);
        const SvdRegions& r = p->ws;
        const size_t d = sizeof(double);
        EXPECT_EQ(r.a, 0u);
        EXPECT_GE(r.s, r.a + 3 * 40 * 50 * d);
        EXPECT_GE(r.u, r.s + 3 * 40 * d);
        // U and V have their room without vectors too (cuSOLVER may use it).
        EXPECT_GE(r.v, r.u + 3 * 40 * 40 * d);
        EXPECT_GE(r.info, r.v + 3 * 50 * 50 * d);
        EXPECT_GE(r.bad, r.info + 3 * sizeof(int));
        EXPECT_GE(r.end, r.bad + 3 * sizeof(int));
        for (size_t off : {r.s, r.u, r.v, r.info, r.bad, r.end})
            EXPECT_EQ(off % 256, 0u);
        EXPECT_EQ(p->workspace_bytes(10), r.end + 10 * d);
    }
}

TEST(CudaSvdPlan, OneCallsArraysAreTheStartOfTheBatchs) {
    // The work-size query gets the arrays of one call, laid out as the batch's regions are.
    auto p = plan_svd(TensorLayout({5, 40, 30}, dtype::Float32), true, false);
    ASSERT_TRUE(p);
    SvdRegions one = svd_regions(p->shape, 1);
    const size_t d = sizeof(double);
    EXPECT_EQ(one.s, 9728u);  // A's 9600 bytes, rounded up to 256
    EXPECT_GE(one.u, one.s + 30 * d);
    EXPECT_GE(one.v, one.u + 40 * 30 * d);  // econ: k columns of U
    EXPECT_GE(one.info, one.v + 30 * 30 * d);
    EXPECT_LT(one.info, p->ws.info);
    EXPECT_EQ(one.info % 256, 0u);
}

TEST(CudaSvdPlan, BatchedCallsTakeChunksOfTheBatch) {
    const auto sizes = [](int64_t batch) {
        return plan_svd(TensorLayout({static_cast<size_t>(batch), 4, 3}, dtype::Float32), true,
                        false)
                ->call_sizes();
    };
    const auto chunk = kSvdBatchedChunk;
    EXPECT_EQ(sizes(7), (std::vector<int64_t>{7}));
    EXPECT_EQ(sizes(chunk), (std::vector<int64_t>{chunk}));
    EXPECT_EQ(sizes(2 * chunk), (std::vector<int64_t>{chunk}));
    EXPECT_EQ(sizes(2 * chunk + 5), (std::vector<int64_t>{chunk, 5}));
    EXPECT_EQ(sizes(0), (std::vector<int64_t>{}));
    // A batch beyond int: calls of int size each.
    auto huge = plan_svd(TensorLayout({size_t{3} << 30, 1, 1}, dtype::Float32), false, false);
    ASSERT_TRUE(huge);
    EXPECT_TRUE(huge->batched);
    EXPECT_EQ(huge->call_sizes(), (std::vector<int64_t>{chunk}));  // 3 << 30 is a multiple
    // gesvdj: one matrix per call, whatever the batch.
    auto big = plan_svd(TensorLayout({9, 33, 2}, dtype::Float32), true, true);
    ASSERT_TRUE(big);
    EXPECT_EQ(big->chunk, 1);
    EXPECT_EQ(big->call_sizes(), (std::vector<int64_t>{1}));
    // No decomposition, no call.
    EXPECT_EQ(plan_svd(TensorLayout({9, 0, 2}, dtype::Float32), true, true)->call_sizes(),
              (std::vector<int64_t>{}));
}

TEST(CudaSvdPlan, EmptyMatricesNeedNoWorkspace) {
    auto p = plan_svd(TensorLayout({2, 0, 3}, dtype::Float32), true, true);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->shape.k, 0);
    EXPECT_FALSE(p->batched);
    EXPECT_EQ(p->workspace_bytes(0), 0u);
    EXPECT_EQ(p->shape.ucols, 0);
    EXPECT_EQ(p->shape.vrows, 3);
}

TEST(CudaSvdPlan, CasesBeyondCusolversIntsAreDeclined) {
    // 50000 x 50000 elements overflow cuSOLVER's int index; the operator then runs staged.
    EXPECT_FALSE(plan_svd(TensorLayout({50000, 50000}, dtype::Float32), false, false));
    EXPECT_FALSE(plan_svd(TensorLayout({size_t{1} << 31, 1}, dtype::Float32), false, false));
    EXPECT_TRUE(plan_svd(TensorLayout({40000, 50000}, dtype::Float32), false, false));
}
