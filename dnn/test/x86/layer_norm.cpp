// LayerNormForward and LayerNormBackward on the x86 handle (our loops for contiguous tensors,
// oneDNN layer normalisation for padded ones) against naive: with and without weight and bias,
// one to every axis normalised (a scalar mean and rstd), rows of length 1 and primes, more rows
// than the backward's row blocks (and a last block short), a BERT-mini step's 2048 rows of 256,
// padded inputs and outputs, float16 and bfloat16 data with float32 statistics (computed in
// float32), and the cases that go to naive.
#include "neomeg/dnn/operators/norm.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct Case {
    TensorShape src;
    uint32_t normalized_dim;
};

std::vector<Case> cases() {
    return {{{1, 1}, 1},       {{6, 1}, 1},   {{4, 7}, 1},    {{2, 3, 5}, 1},
            {{2, 3, 4, 5}, 2}, {{3, 5}, 2},   {{5, 37}, 1},   {{2, 3, 2, 3, 4}, 3},
            {{8, 16, 768}, 1}, {{130, 3}, 1}, {{1000, 1}, 1}, {{16, 128, 256}, 1}};
}

param::LayerNorm ln(bool affine, uint32_t normalized_dim) {
    param::LayerNorm p;
    p.affine = affine;
    p.normalized_dim = normalized_dim;
    p.eps = 1e-5f;
    return p;
}

TensorShape leading(const Case& k) {
    TensorShape s;
    s.ndim = k.src.ndim - k.normalized_dim;
    for (size_t i = 0; i < s.ndim; ++i)
        s[i] = k.src[i];
    return s;
}

TensorShape trailing(const Case& k) {
    TensorShape s;
    s.ndim = k.normalized_dim;
    for (size_t i = 0; i < s.ndim; ++i)
        s[i] = k.src[k.src.ndim - k.normalized_dim + i];
    return s;
}

std::vector<TensorShape> forward_inputs(const Case& k, bool affine) {
    if (affine)
        return {k.src, trailing(k), trailing(k)};
    return {k.src};
}

std::vector<TensorShape> backward_inputs(const Case& k, bool affine) {
    std::vector<TensorShape> s{k.src, k.src, leading(k), leading(k)};
    if (affine)
        s.push_back(trailing(k));
    return s;
}

}  // namespace

TEST_F(X86, LayerNormForwardMatchesNaive) {
    for (const Case& k : cases())
        for (bool affine : {false, true}) {
            Checker<LayerNormForward> c(handle.get());
            // An offset mean: the variance must not come from E[x^2] - E[x]^2.
            c.set_param(ln(affine, k.normalized_dim)).set_range(0, 3, 5);
            c.execs(forward_inputs(k, affine));
            c.set_noncontiguous(true).execs(forward_inputs(k, affine));
        }
}

TEST_F(X86, LayerNormBackwardMatchesNaive) {
    for (const Case& k : cases())
        for (bool affine : {false, true}) {
            Checker<LayerNormBackward> c(handle.get());
            // rstd must be positive; mean and rstd need not be src's own statistics.
            c.set_param(ln(affine, k.normalized_dim)).set_range(3, 0.5, 2);
            c.execs(backward_inputs(k, affine));
            c.set_noncontiguous(true).execs(backward_inputs(k, affine));
        }
}

// Statistics from the forward feed the backward: the pair the autograd runs.
TEST_F(X86, LayerNormForwardThenBackward) {
    std::mt19937 rng(37);
    Case k{{4, 6, 10}, 1};
    for (bool affine : {false, true}) {
        auto p = ln(affine, k.normalized_dim);
        std::vector<HostTensor> in;
        for (const TensorShape& s : forward_inputs(k, affine)) {
            in.emplace_back(s, dtype::Float32);
            fill_uniform(in.back(), -2, 2, rng);
        }
        EXPECT_EQ(run_and_compare<LayerNormForward>(*handle, p, in), "hwy");
        auto fwd = handle->create_operator<LayerNormForward>();
        fwd->param() = p;
        auto out = run_op(*fwd, in);
        HostTensor dy(k.src, dtype::Float32);
        fill_uniform(dy, -1, 1, rng);
        std::vector<HostTensor> bin{dy, in[0], out[1], out[2]};
        if (affine)
            bin.push_back(in[1]);
        EXPECT_EQ(run_and_compare<LayerNormBackward>(*handle, p, bin), "hwy");
        // A padded dy goes to oneDNN's primitive through a staging copy.
        HostTensor padded(padded_layout(dy.layout()));
        padded.set_values(dy.values());
        bin[0] = padded;
        EXPECT_TRUE(run_and_compare<LayerNormBackward>(*handle, p, bin).starts_with("onednn:"));
    }
}

TEST_F(X86, LayerNormOtherDtypesAndEmptyRunNaive) {
    std::mt19937 rng(41);
    auto p = ln(true, 1);
    for (DType dt : {DType(dtype::Float16), DType(dtype::BFloat16)}) {
        Checker<LayerNormForward> c(handle.get());
        c.set_param(p).set_dtype(0, dt).set_dtype(1, dt).set_dtype(2, dt).execs({{3, 8}, {8}, {8}});
    }
    HostTensor empty({0, 8}, dtype::Float32), w({8}, dtype::Float32), b({8}, dtype::Float32);
    fill_uniform(w, -1, 1, rng);
    fill_uniform(b, -1, 1, rng);
    EXPECT_EQ(run_and_compare<LayerNormForward>(*handle, p, {empty, w, b}), "naive");
}

// 16-bit data (and weight) with float32 statistics, as autocast runs it: the float32 plan between
// conversions, within the 16-bit dtype's rounding of naive, and never naive itself.
TEST_F(X86, LayerNormSixteenBitData) {
    for (DType dt : {DType(dtype::Float16), DType(dtype::BFloat16)})
        for (const Case& k : cases())
            for (bool affine : {false, true}) {
                Checker<LayerNormForward> f(handle.get());
                f.set_param(ln(affine, k.normalized_dim)).set_range(0, 3, 5);
                for (size_t i = 0; i < (affine ? 3u : 1u); ++i)
                    f.set_dtype(i, dt);
                f.execs(forward_inputs(k, affine));
                Checker<LayerNormBackward> b(handle.get());
                b.set_param(ln(affine, k.normalized_dim)).set_range(3, 0.5, 2);
                b.set_dtype(0, dt).set_dtype(1, dt);
                if (affine)
                    b.set_dtype(4, dt);
                b.execs(backward_inputs(k, affine));
            }
    std::mt19937 rng(43);
    HostTensor x({4, 8}, dtype::BFloat16), dy({4, 8}, dtype::BFloat16);
    HostTensor mean({4}, dtype::Float32), rstd({4}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    fill_uniform(dy, -1, 1, rng);
    fill_uniform(mean, -1, 1, rng);
    fill_uniform(rstd, 0.5, 2, rng);
    EXPECT_NE(run_and_compare<LayerNormForward>(*handle, ln(false, 1), {x}, {}, 2e-2), "naive");
    EXPECT_NE(run_and_compare<LayerNormBackward>(*handle, ln(false, 1), {dy, x, mean, rstd}, {},
                                                 2e-2),
              "naive");
}
