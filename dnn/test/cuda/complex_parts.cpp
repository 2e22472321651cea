// complex64 on the CUDA handle: CreateComplex and ComplexPart run CUDA copies through float32 part
// views, equal to naive's loops; complex Elemwise (no CUDA code) runs staged naive, and every
// other CUDA kernel declines complex tensors rather than misreading them (kernel.h).
#include <random>

#include "cuda/cuda_test.h"
#include "naive/complex_test_util.h"
#include "neomeg/dnn/operators/elemwise.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

std::vector<cf> random_complex(size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-4, 4);
    std::vector<cf> v(n);
    for (auto& z : v)
        z = {u(rng), u(rng)};
    return v;
}

template <class Op>
HostTensor run_naive(const typename Op::Param& p, const std::vector<HostTensor>& inputs) {
    auto naive = Handle::make_naive();
    auto op = naive->create_operator<Op>();
    op->param() = p;
    return std::move(run_op(*op, inputs)[0]);
}

}  // namespace

TEST_F(Cuda, CreateComplexMatchesNaive) {
    std::mt19937 rng(5);
    HostTensor re({3, 1, 5}, dtype::Float32), im({4, 5}, dtype::Float32);
    fill_uniform(re, -3, 3, rng);
    fill_uniform(im, -3, 3, rng);
    auto want = run_naive<CreateComplex>({}, {re, im});
    auto op = handle->create_operator<CreateComplex>();
    for (const TensorLayout& out : {want.layout(), padded_layout(want.layout())}) {
        auto got = run_on_device(*op, {re, im}, {out});
        EXPECT_EQ(complex_values(got[0]), complex_values(want));
        EXPECT_EQ(last_kernel(*op), "cuda");
    }
}

TEST_F(Cuda, ComplexPartMatchesNaive) {
    std::mt19937 rng(6);
    HostTensor z = complex_tensor(TensorLayout({8, 12}, {1, 8}, dtype::Complex64),
                                  random_complex(96, rng));
    for (auto which : {ComplexPart::Param::Part::REAL, ComplexPart::Param::Part::IMAG}) {
        ComplexPart::Param p;
        p.part = which;
        auto want = run_naive<ComplexPart>(p, {z});
        auto op = handle->create_operator<ComplexPart>();
        op->param() = p;
        auto got = run_on_device(*op, {z}, {padded_layout(want.layout())});
        EXPECT_EQ(got[0].values(), want.values());
        EXPECT_EQ(last_kernel(*op), "cuda");
    }
}

TEST_F(Cuda, ComplexElemwiseRunsStagedNaive) {
    std::mt19937 rng(7);
    HostTensor a = complex_tensor(TensorLayout({4, 6}, dtype::Complex64), random_complex(24, rng));
    HostTensor b = complex_tensor(TensorLayout({6}, dtype::Complex64), random_complex(6, rng));
    Elemwise::Param p;
    p.mode = Elemwise::Param::Mode::MUL;
    auto want = run_naive<Elemwise>(p, {a, b});
    auto op = handle->create_operator<Elemwise>();
    op->param() = p;
    auto got = run_on_device(*op, {a, b}, {want.layout()});
    EXPECT_EQ(complex_values(got[0]), complex_values(want));
    EXPECT_EQ(last_kernel(*op), "naive(staged)");
}
