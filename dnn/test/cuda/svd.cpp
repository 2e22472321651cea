// SVD on the CUDA handle (cuSOLVER's gesvdj) against naive (Eigen): singular values equal naive's;
// each pair of singular vectors is naive's times one sign both share (neither library fixes the
// sign, so that is the promise: U diag(S) Vh is the same product); the full factors' extra
// columns are orthonormal. Both cuSOLVER paths (gesvdjBatched up to 32 x 32, gesvdj per matrix
// beyond), thin and full, float dtypes, strided inputs and padded outputs, empty batches and
// matrices, a batch of more than one gesvdjBatched call, and NaN.
#include <cmath>

#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/linalg.h"
#include "src/cuda/svd_plan.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::SVD svd_param(bool uv, bool full) {
    param::SVD p;
    p.compute_uv = uv;
    p.full_matrices = full;
    return p;
}

// Element (b, r, c) of a (batch, rows, cols) view of t's logical values.
double at3(const std::vector<double>& v, int64_t rows, int64_t cols, int64_t b, int64_t r,
           int64_t c) {
    return v[static_cast<size_t>((b * rows + r) * cols + c)];
}

// Checks got (u, s, vh from the GPU) against want (naive's), shapes (batch, m, ucols), (batch, k),
// (batch, vrows, n).
void expect_same_up_to_signs(const std::vector<HostTensor>& got,
                             const std::vector<HostTensor>& want, double eps,
                             const std::string& what) {
    ASSERT_EQ(got.size(), 3u);
    ASSERT_TRUE(tensors_near(got[1], want[1], eps)) << "S of " << what;
    const TensorShape &us = want[0].shape(), &vs = want[2].shape();
    const auto m = static_cast<int64_t>(us[us.ndim - 2]),
               ucols = static_cast<int64_t>(us[us.ndim - 1]);
    const auto vrows = static_cast<int64_t>(vs[vs.ndim - 2]),
               n = static_cast<int64_t>(vs[vs.ndim - 1]);
    const int64_t k = std::min(m, n);
    const auto batch =
            static_cast<int64_t>(want[1].layout().total_nr_elems()) / std::max<int64_t>(k, 1);
    auto gu = got[0].values(), wu = want[0].values(), gv = got[2].values(), wv = want[2].values();
    for (int64_t b = 0; b < batch; ++b) {
        for (int64_t i = 0; i < k; ++i) {
            double dot = 0;
            for (int64_t r = 0; r < m; ++r)
                dot += at3(gu, m, ucols, b, r, i) * at3(wu, m, ucols, b, r, i);
            const double sign = dot < 0 ? -1 : 1;
            for (int64_t r = 0; r < m; ++r)
                EXPECT_NEAR(sign * at3(gu, m, ucols, b, r, i), at3(wu, m, ucols, b, r, i), eps)
                        << "U of " << what << ", matrix " << b << " (" << r << ", " << i << ")";
            for (int64_t c = 0; c < n; ++c)
                EXPECT_NEAR(sign * at3(gv, vrows, n, b, i, c), at3(wv, vrows, n, b, i, c), eps)
                        << "Vh of " << what << ", matrix " << b << " (" << i << ", " << c << ")";
        }
        // Full factors: the columns past k span the rest of the space, in no fixed basis.
        for (int64_t i = 0; i < ucols; ++i)
            for (int64_t j = k; j < ucols; ++j) {
                double dot = 0;
                for (int64_t r = 0; r < m; ++r)
                    dot += at3(gu, m, ucols, b, r, i) * at3(gu, m, ucols, b, r, j);
                EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, eps) << "U^T U of " << what;
            }
        for (int64_t i = 0; i < vrows; ++i)
            for (int64_t j = k; j < vrows; ++j) {
                double dot = 0;
                for (int64_t c = 0; c < n; ++c)
                    dot += at3(gv, vrows, n, b, i, c) * at3(gv, vrows, n, b, j, c);
                EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, eps) << "Vh Vh^T of " << what;
            }
    }
}

// The outputs of SVD on `handle`, written into contiguous or padded layouts.
std::vector<HostTensor> run_svd(Handle& cuda, const param::SVD& p, const HostTensor& src,
                                bool padded_outputs, std::string* kernel) {
    auto naive_op = Handle::make_naive()->create_operator<SVD>();
    naive_op->param() = p;
    auto want = run_op(*naive_op, {src.contiguous()});
    auto op = cuda.create_operator<SVD>();
    op->param() = p;
    std::vector<TensorLayout> outs;
    for (auto& w : want)
        outs.push_back(padded_outputs ? padded_layout(w.layout()) : w.layout());
    auto got = run_on_device(*op, {src}, outs);
    *kernel = last_kernel(*op);
    return got;
}

}  // namespace

TEST_F(Cuda, SvdMatchesNaiveUpToSharedSigns) {
    const TensorShape shapes[] = {{1, 1},       {3, 3},   {5, 3},   {3, 5},   {2, 4, 3},
                                  {2, 3, 4, 6}, {32, 32}, {33, 33}, {50, 20}, {3, 20, 50}};
    std::mt19937 rng(5);
    for (const TensorShape& shape : shapes)
        for (bool full : {false, true})
            for (bool strided : {false, true}) {
                TensorLayout l(shape, dtype::Float32);
                HostTensor src(strided ? padded_layout(l) : l);
                fill_uniform(src, -1, 1, rng);
                std::string kernel;
                auto p = svd_param(true, full);
                auto naive_op = Handle::make_naive()->create_operator<SVD>();
                naive_op->param() = p;
                auto want = run_op(*naive_op, {src.contiguous()});
                auto got = run_svd(*handle, p, src, strided, &kernel);
                std::string what = shape.to_string() + (full ? " full" : " thin") +
                                   (strided ? " strided" : "") + " (" + kernel + ")";
                size_t m = shape[shape.ndim - 2], n = shape[shape.ndim - 1];
                EXPECT_EQ(kernel,
                          m <= 32 && n <= 32 ? "cusolver:gesvdj_batched" : "cusolver:gesvdj")
                        << what;
                expect_same_up_to_signs(got, want, 2e-4, what);
            }
}

TEST_F(Cuda, SvdNarrowFloatsMatchNaive) {
    for (DType dt : {DType(dtype::Float16), DType(dtype::BFloat16)}) {
        std::mt19937 rng(7);
        HostTensor src(TensorLayout({2, 6, 4}, dt));
        fill_uniform(src, -1, 1, rng);
        std::string kernel;
        auto p = svd_param(true, false);
        auto naive_op = Handle::make_naive()->create_operator<SVD>();
        naive_op->param() = p;
        auto want = run_op(*naive_op, {src});
        auto got = run_svd(*handle, p, src, false, &kernel);
        // Both decompose the same widened values in double and round once.
        expect_same_up_to_signs(got, want, default_epsilon(dt), dt.name());
    }
}

TEST_F(Cuda, SvdSingularValuesOnlyMatchNaive) {
    for (const TensorShape& s :
         {TensorShape{4, 3}, TensorShape{2, 3, 7}, TensorShape{40, 60}, TensorShape{0, 3, 3}}) {
        CudaChecker<SVD> c(handle.get());
        c.set_param(svd_param(false, false)).set_epsilon(2e-5);
        c.execs({s});
        c.set_noncontiguous(true).execs({s});
    }
}

TEST_F(Cuda, SvdEmptyMatricesGetIdentityFactors) {
    for (bool full : {false, true}) {
        CudaChecker<SVD> c(handle.get());
        c.set_param(svd_param(true, full)).expect_kernel("cuda");
        c.execs({{2, 0, 3}});
        c.execs({{3, 0}});
    }
}

TEST_F(Cuda, SvdOfNonFiniteMatrixIsNaN) {
    // Matrix 1 holds NaN, matrix 2 inf: all NaN, as naive; matrix 0 is decomposed.
    HostTensor src =
            HostTensor::from({3, 2, 2}, {3, 0, 0, 4, 1, std::nan(""), 0, 1, 1, 0, 0, INFINITY});
    std::string kernel;
    auto got = run_svd(*handle, svd_param(true, false), src, false, &kernel);
    auto s = got[1].values(), u = got[0].values(), vh = got[2].values();
    EXPECT_NEAR(s[0], 4, 1e-6);
    EXPECT_NEAR(s[1], 3, 1e-6);
    for (size_t i = 2; i < 6; ++i)
        EXPECT_TRUE(std::isnan(s[i])) << i;
    for (size_t i = 4; i < 12; ++i) {
        EXPECT_TRUE(std::isnan(u[i])) << i;
        EXPECT_TRUE(std::isnan(vh[i])) << i;
    }
}

TEST_F(Cuda, SvdBatchBeyondOneBatchedCallMatchesNaive) {
    // Two gesvdjBatched calls (a full chunk, then 3 matrices), each with its own place in the
    // workspace's arrays: every matrix, the last ones included, is naive's.
    const size_t batch = static_cast<size_t>(neomeg::dnn::cuda::kSvdBatchedChunk) + 3;
    std::mt19937 rng(11);
    HostTensor src(TensorLayout({batch, 3, 2}, dtype::Float32));
    fill_uniform(src, -1, 1, rng);
    std::string kernel;
    auto p = svd_param(true, false);
    auto naive_op = Handle::make_naive()->create_operator<SVD>();
    naive_op->param() = p;
    auto want = run_op(*naive_op, {src});
    auto got = run_svd(*handle, p, src, false, &kernel);
    EXPECT_EQ(kernel, "cusolver:gesvdj_batched");
    expect_same_up_to_signs(got, want, 2e-4, "a batch of " + std::to_string(batch));
}
