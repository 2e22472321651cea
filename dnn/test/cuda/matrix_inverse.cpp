// MatrixInverse on the CUDA handle against naive: single matrices and batches, 1 x 1 to 300 x 300
// (more rows than a block has threads), pivoting, empty batches and empty matrices, float dtypes,
// strided inputs and padded outputs, a matrix holding NaN (all-NaN inverse), and a singular matrix
// as naive's ParamError with the matrices before it written and those after it not.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/linalg.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Well-conditioned matrices: random entries in [-1, 1) plus n on the diagonal, and the rows of
// every other matrix reversed, so that elimination has to pivot.
std::vector<double> conditioned(const TensorShape& s, uint32_t seed) {
    size_t n = s[s.ndim - 1], total = s.total_nr_elems();
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(-1, 1);
    std::vector<double> v(total);
    for (size_t i = 0; i < total; ++i) {
        size_t m = n ? i / (n * n) : 0, r = n ? i / n % n : 0, c = n ? i % n : 0;
        size_t diag_row = m % 2 ? n - 1 - c : c;
        v[i] = dist(rng) + (r == diag_row ? static_cast<double>(n) : 0.0);
    }
    return v;
}

}  // namespace

TEST_F(Cuda, MatrixInverseMatchesNaive) {
    const TensorShape shapes[] = {{1, 1},     {3, 3},    {2, 3, 4, 4}, {4, 40, 40},
                                  {300, 300}, {0, 3, 3}, {2, 0, 0}};
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (const TensorShape& s : shapes) {
            CudaChecker<MatrixInverse> c(handle.get());
            c.set_dtype(0, dt).set_values(0, conditioned(s, 3)).expect_kernel("cuda");
            c.execs({s});
            c.set_noncontiguous(true).execs({s});
        }
    CudaChecker<MatrixInverse> c(handle.get());
    c.set_values(0, {1, 2, 3, 4, 1, std::nan(""), 0, 1}).expect_kernel("cuda").execs({{2, 2, 2}});
}

TEST_F(Cuda, MatrixInverseSingularIsNaivesError) {
    // Matrix 1 of 3 is singular.
    HostTensor src = HostTensor::from({3, 2, 2}, {2, 0, 0, 4, 1, 2, 2, 4, 1, 0, 0, 1});
    auto naive = Handle::make_naive()->create_operator<MatrixInverse>();
    std::string want;
    try {
        run_op(*naive, {src});
    } catch (const ParamError& e) {
        want = e.what();
    }
    ASSERT_FALSE(want.empty());
    auto op = handle->create_operator<MatrixInverse>();
    HostTensor init = HostTensor::from({3, 2, 2}, std::vector<double>(12, -7));
    DeviceTensor ds = DeviceTensor::from(src), dd = DeviceTensor::from(init);
    std::vector<TensorND> in{ds.nd()}, out{dd.nd()};
    std::vector<TensorLayout> in_layouts{ds.nd().layout}, out_layouts{dd.nd().layout};
    size_t ws = op->get_workspace_in_bytes(in_layouts, out_layouts);
    DeviceTensor w(TensorLayout({ws}, dtype::Uint8));
    try {
        op->exec(in, out, {static_cast<std::byte*>(w.nd().raw_ptr()), ws});
        FAIL() << "expected ParamError";
    } catch (const ParamError& e) {
        EXPECT_EQ(std::string(e.what()), want);
    }
    EXPECT_EQ(dd.to_host().values(),
              (std::vector<double>{0.5, 0, 0, 0.25, -7, -7, -7, -7, -7, -7, -7, -7}));
}
