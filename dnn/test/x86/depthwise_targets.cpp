// The 3x3 depthwise loops on plain NCHW tensors (depthwise_3x3_avx512_hwy.cpp and the loops it
// falls back on) against naive at every Highway target the CPU has: strides 1 and 2, padding 0
// and 1, widths below, at and off a vector's multiple (1 to 64 columns, odd and even), odd
// heights, batch 1 and 2, one channel and primes.
#include <cmath>
#include <limits>

#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

std::vector<ConvCase> cases_3x3() {
    const size_t sizes[][2] = {{1, 1},   {5, 7},  {9, 15}, {8, 16}, {11, 17}, {6, 31}, {7, 32},
                               {13, 33}, {4, 47}, {3, 56}, {5, 57}, {2, 64},  {6, 65}};
    const size_t channels[] = {1, 3, 7, 13};
    std::vector<ConvCase> cases;
    size_t i = 0;
    for (int32_t stride : {1, 2})
        for (int32_t pad : {0, 1})
            for (const auto& hw : sizes) {
                if (pad == 0 && (hw[0] < 3 || hw[1] < 3))
                    continue;
                const size_t n = 1 + i % 2, c = channels[i % 4];
                ++i;
                cases.push_back({{n, c, hw[0], hw[1]},
                                 {c, 1, 3, 3},
                                 conv_param({stride, stride}, {pad, pad}, {1, 1},
                                            static_cast<uint32_t>(c))});
            }
    return cases;
}

}  // namespace

TEST_F(X86, Depthwise3x3MatchesNaiveAtEveryTarget) {
    const std::vector<ConvCase> cases = conv_both_modes(cases_3x3());
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t t) {
                for (const ConvCase& k : cases) {
                    SCOPED_TRACE(testing::Message()
                                 << "target " << hwy::TargetName(t) << ", " << param::to_string(k.p)
                                 << ", src " << k.src.to_string());
                    Checker<ConvolutionForward> f(handle.get());
                    f.set_param(k.p).execs({k.src, k.filter});
                    Checker<ConvolutionBackwardData> d(handle.get());
                    d.set_param(k.p).set_output_shapes({k.src}).execs(
                            {k.filter, conv_dst_shape(k)});
                    Checker<ConvolutionBackwardFilter> g(handle.get());
                    g.set_param(k.p)
                            .set_output_shapes({k.filter})
                            .execs({k.src, conv_dst_shape(k)});
                }
            });
    EXPECT_GE(ran, 1u);
}

// Infinities in columns that some taps' sums of the filter gradient do not read (3x3, padding
// 1): with a stride of 1, column 0 (tap 2 reads it for no output) and column w - 1 (tap 0 for
// none); with a stride of 2 and an even width, column w - 1 (tap 2 of the last output reads it,
// tap 0 of none). The loops sum tap 0 and tap 2 as diff moved by a column against each column,
// so a sum that must not meet such a column masks it; naive's sums never meet it, so those taps
// stay finite. Every target.
TEST_F(X86, Depthwise3x3FilterGradientInfinitiesOutsideTaps) {
    const double inf = std::numeric_limits<double>::infinity();
    struct Inf {
        size_t c, y, x;
    };
    struct K {
        ConvCase k;
        std::vector<Inf> infs;
    };
    const std::vector<K> all = {
            {{{1, 2, 6, 20}, {2, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 2)},
             {{0, 2, 0}, {1, 3, 19}}},
            {{{1, 2, 6, 16}, {2, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 2)},
             {{0, 2, 0}, {1, 3, 15}}},
            {{{1, 2, 7, 20}, {2, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 2)},
             {{0, 3, 19}, {1, 4, 19}}},
            {{{1, 2, 7, 32}, {2, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 2)},
             {{0, 3, 31}, {1, 4, 31}}},
    };
    std::mt19937 rng(17);
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t t) {
                for (const K& c : all) {
                    const ConvCase& k = c.k;
                    SCOPED_TRACE(testing::Message()
                                 << "target " << hwy::TargetName(t) << ", " << param::to_string(k.p)
                                 << ", src " << k.src.to_string());
                    HostTensor x = random_tensor(k.src, rng);
                    HostTensor dy = random_tensor(conv_dst_shape(k), rng);
                    std::vector<double> v = x.values();
                    for (const Inf& i : c.infs)
                        v[(i.c * k.src[2] + i.y) * k.src[3] + i.x] = inf;
                    x.set_values(v);
                    auto op = handle->create_operator<ConvolutionBackwardFilter>();
                    op->param() = k.p;
                    auto ref = Handle::make_naive()->create_operator<ConvolutionBackwardFilter>();
                    ref->param() = k.p;
                    HostTensor got = run_op(*op, {x, dy}, {k.filter})[0];
                    HostTensor want = run_op(*ref, {x, dy}, {k.filter})[0];
                    EXPECT_TRUE(tensors_near(got, want, 1e-4));
                    // Each channel's taps that do not read its infinity (naive's finite ones, at
                    // least three: a whole column of taps) stay finite.
                    for (size_t ch = 0; ch < 2; ++ch) {
                        size_t finite = 0;
                        for (size_t tap = 0; tap < 9; ++tap) {
                            const bool fin = std::isfinite(want.at({ch, 0, tap / 3, tap % 3}));
                            finite += fin;
                            EXPECT_EQ(std::isfinite(got.at({ch, 0, tap / 3, tap % 3})), fin)
                                    << "channel " << ch << ", tap " << tap;
                        }
                        EXPECT_GE(finite, 3u) << "channel " << ch;
                    }
                }
            });
    EXPECT_GE(ran, 1u);
}

// Stride 2 on tensors past depthwise_conv.cpp's in_cache (2 MiB of input and output), where the
// filter gradient takes the band loop of depthwise_3x3_avx2_hwy.cpp at every target (the AVX-512
// column walk reads each plane's rows once per vector column: 2x slower from memory), and the
// other passes their from-memory loops; padding 0 and 1, odd and even sizes. Every target.
TEST_F(X86, Depthwise3x3StrideTwoPastTheCacheMatchesNaive) {
    const std::vector<ConvCase> cases = {
            {{3, 64, 56, 56}, {64, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 64)},
            {{2, 67, 57, 65}, {67, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 67)},
            {{3, 40, 63, 70}, {40, 1, 3, 3}, conv_param({2, 2}, {0, 0}, {1, 1}, 40)}};
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t t) {
                for (const ConvCase& k : cases) {
                    SCOPED_TRACE(testing::Message()
                                 << "target " << hwy::TargetName(t) << ", " << param::to_string(k.p)
                                 << ", src " << k.src.to_string());
                    Checker<ConvolutionForward> f(handle.get());
                    f.set_param(k.p).execs({k.src, k.filter});
                    Checker<ConvolutionBackwardFilter> g(handle.get());
                    g.set_param(k.p)
                            .set_output_shapes({k.filter})
                            .execs({k.src, conv_dst_shape(k)});
                }
            });
    EXPECT_GE(ran, 1u);
}
