// Correlation and its gradients on the x86 handle against naive: both modes, odd windows from 1
// to 5, rows of 1 to 9 displacements (the forward takes four a pass), strides past and below the
// displacements, padding wider than the window, single-pixel outputs, channel counts around the
// vector width (1, 3, 8, 17), several images, padded (strided) inputs and outputs, an empty batch,
// and float16 (naive's kernel). The x86 kernels sum in float32 (naive in double) and are held to
// the bound of that arithmetic.
#include "neomeg/dnn/operators/vision.h"
#include "src/common/correlation_geometry.h"
#include "x86/vision_loops.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Correlation corr_param(uint32_t k, uint32_t md, uint32_t s1, uint32_t s2, uint32_t pad,
                              bool mul) {
    param::Correlation p;
    p.kernel_size = k;
    p.max_displacement = md;
    p.stride1 = s1;
    p.stride2 = s2;
    p.pad_size = pad;
    p.is_multiply = mul;
    return p;
}

// The forward: each of the kernel_size window rows is one float32 sum of kernel_size * C terms
// of size at most 2 (|a - b| with values in [-1, 1]), the rows added in double, the total
// divided by kernel_size^2 C: relative to the largest possible output (2), the error of a
// float_sum_bound sum of kernel_size * C terms.
double forward_bound(const param::Correlation& p, size_t c) {
    return float_sum_bound(p.kernel_size * c, 2.0, 1);
}

// A gradient: one float32 accumulation of (2R + 1)^2 updates, each a box sum of diff over at
// most kernel_size^2 outputs (|diff| <= 1) divided by kernel_size^2 C, rounded to float32,
// times a value of at most 1: each update is at most 1 / C.
double backward_bound(const param::Correlation& p, size_t c) {
    size_t side = 2 * (p.max_displacement / p.stride2) + 1;
    size_t n = side * side;
    return float_sum_bound(n + 1, static_cast<double>(n) / static_cast<double>(c));
}

void check(Handle& h, const param::Correlation& p, const TensorShape& s, bool padded,
           std::mt19937& rng) {
    HostTensor a = make_tensor(s, padded, rng), b = make_tensor(s, padded, rng);
    auto y = expect_naive_near<Correlation>(h, p, forward_bound(p, s[1]), {a, b});
    HostTensor dy = make_tensor(y[0].shape(), padded, rng);
    expect_naive_near<CorrelationBackwardData1>(h, p, backward_bound(p, s[1]), {dy, a, b});
    expect_naive_near<CorrelationBackwardData2>(h, p, backward_bound(p, s[1]), {dy, a, b});
}

}  // namespace

TEST_F(X86, CorrelationMatchesNaive) {
    std::mt19937 rng(3);
    const std::vector<param::Correlation> params = {
            corr_param(1, 1, 1, 1, 0, true),  corr_param(3, 2, 1, 1, 2, true),
            corr_param(3, 4, 2, 2, 3, false), corr_param(1, 2, 3, 1, 1, true),
            corr_param(3, 1, 1, 2, 1, false), corr_param(5, 0, 1, 1, 4, true),
            corr_param(5, 3, 2, 1, 6, false), corr_param(3, 3, 3, 4, 2, true),
    };
    for (bool padded : {false, true})
        for (const auto& p : params)
            for (TensorShape s : {TensorShape{2, 3, 9, 11}, TensorShape{1, 17, 8, 7},
                                  TensorShape{1, 8, 10, 9}, TensorShape{3, 1, 9, 9}})
                check(*handle, p, s, padded, rng);
}

// Sizes where the output is a single pixel, and a FlowNet-like geometry over several threads'
// rows.
TEST_F(X86, CorrelationEdgeShapesMatchNaive) {
    std::mt19937 rng(7);
    check(*handle, corr_param(3, 1, 1, 1, 2, true), {1, 2, 1, 1}, false, rng);
    check(*handle, corr_param(1, 2, 1, 3, 0, false), {2, 5, 5, 5}, true, rng);
    check(*handle, corr_param(1, 4, 1, 2, 4, true), {2, 16, 24, 32}, false, rng);
    // The bench's FlowNet geometry (rows of 9 displacements: two blocks of four and one apart),
    // both modes, channels past a vector and not a multiple of one.
    check(*handle, corr_param(1, 4, 1, 1, 4, true), {1, 64, 12, 16}, false, rng);
    check(*handle, corr_param(1, 4, 1, 1, 4, false), {1, 19, 10, 9}, true, rng);
    // No images: nothing to compute.
    param::Correlation p = corr_param(1, 1, 1, 1, 0, true);
    HostTensor empty({0, 2, 5, 5}, dtype::Float32);
    auto y = expect_naive_near<Correlation>(*handle, p, 0, {empty, empty});
    EXPECT_EQ(y[0].shape().to_string(), TensorShape({0, 9, 3, 3}).to_string());
}

// float16 runs naive's kernel (the loops take float32 only).
TEST_F(X86, CorrelationFloat16RunsNaive) {
    std::mt19937 rng(9);
    TensorShape s{1, 2, 6, 6};
    HostTensor a = make_tensor(s, false, rng, {}, -1, 1, dtype::Float16);
    HostTensor b = make_tensor(s, false, rng, {}, -1, 1, dtype::Float16);
    expect_naive_bits<Correlation>(*handle, corr_param(3, 1, 1, 1, 1, true), {a, b}, {}, "naive");
}
