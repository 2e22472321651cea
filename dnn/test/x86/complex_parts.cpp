// CreateComplex and ComplexPart on x86 (copies through float32 part views) against naive's
// loops, on broadcast, strided and transposed layouts; and complex Elemwise, which runs naive's.
#include <random>

#include "naive/complex_test_util.h"
#include "neomeg/dnn/operators/elemwise.h"
#include "x86/x86_test.h"

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

// Runs a fresh Op of `handle` on the inputs into a dst of `out` layout; returns dst.
template <class Op>
HostTensor run_into(Handle& handle, const typename Op::Param& p,
                    const std::vector<HostTensor>& inputs, const TensorLayout& out,
                    std::string* kernel = nullptr) {
    auto op = handle.create_operator<Op>();
    op->param() = p;
    std::vector<TensorND> in;
    for (auto& t : inputs)
        in.push_back(t.nd());
    HostTensor dst(out);
    TensorND dst_nd = dst.nd();
    op->exec(in, {&dst_nd, 1});
    if (kernel)
        *kernel = last_kernel(*op);
    return dst;
}

}  // namespace

TEST_F(X86, CreateComplexCopiesPartsLikeNaive) {
    std::mt19937 rng(5);
    auto naive = Handle::make_naive();
    HostTensor re({3, 1, 5}, dtype::Float32), im({4, 5}, dtype::Float32);
    fill_uniform(re, -3, 3, rng);
    fill_uniform(im, -3, 3, rng);
    TensorLayout dense({3, 4, 5}, dtype::Complex64);
    for (const TensorLayout& out : {dense, padded_layout(dense)}) {
        std::string kernel;
        auto got = run_into<CreateComplex>(*handle, {}, {re, im}, out, &kernel);
        auto want = run_into<CreateComplex>(*naive, {}, {re, im}, dense);
        EXPECT_EQ(complex_values(got), complex_values(want));
        EXPECT_NE(kernel, "naive");
        EXPECT_NE(kernel, "no kernel report");
    }
}

TEST_F(X86, ComplexPartCopiesLikeNaive) {
    std::mt19937 rng(6);
    auto naive = Handle::make_naive();
    // Dense, and a transposed view (the tiled copy's case).
    TensorLayout dense({16, 40}, dtype::Complex64), transposed({16, 40}, {1, 16}, dtype::Complex64);
    for (const TensorLayout& in_layout : {dense, transposed}) {
        HostTensor z = complex_tensor(in_layout, random_complex(16 * 40, rng));
        for (auto which : {ComplexPart::Param::Part::REAL, ComplexPart::Param::Part::IMAG}) {
            ComplexPart::Param p;
            p.part = which;
            TensorLayout out({16, 40}, dtype::Float32);
            std::string kernel;
            auto got = run_into<ComplexPart>(*handle, p, {z}, padded_layout(out), &kernel);
            auto want = run_into<ComplexPart>(*naive, p, {z}, out);
            EXPECT_EQ(got.values(), want.values());
            EXPECT_NE(kernel, "naive");
        }
    }
}

TEST_F(X86, ComplexElemwiseRunsNaivesKernel) {
    std::mt19937 rng(7);
    auto naive = Handle::make_naive();
    HostTensor a = complex_tensor(TensorLayout({4, 6}, dtype::Complex64), random_complex(24, rng));
    HostTensor b = complex_tensor(TensorLayout({6}, dtype::Complex64), random_complex(6, rng));
    for (auto m :
         {Elemwise::Param::Mode::ADD, Elemwise::Param::Mode::SUB, Elemwise::Param::Mode::MUL}) {
        Elemwise::Param p;
        p.mode = m;
        TensorLayout out({4, 6}, dtype::Complex64);
        auto got = run_into<Elemwise>(*handle, p, {a, b}, out);
        auto want = run_into<Elemwise>(*naive, p, {a, b}, out);
        EXPECT_EQ(complex_values(got), complex_values(want)) << param::to_string(m);
    }
}
