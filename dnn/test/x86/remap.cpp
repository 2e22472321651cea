// Remap and its gradients on the x86 handle against naive: every border mode with
// LINEAR and NEAREST, points inside, on pixel centres and halves, past every edge, far outside,
// NaN and infinite, 1-pixel and odd images, outputs larger and smaller than src, padded inputs
// and outputs, enough channels for the OpenMP split, empty outputs, and float16 (naive's kernel).
// The forward sums a point's four taps in float32 and is held to the bound of that arithmetic
// (kBound); the gradients must be naive's bits, at every instruction set of their vector loops.
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/vision.h"
#include "x86/highway_targets.h"
#include "x86/vision_loops.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using BMode = param::Remap::BorderMode;
using IMode = param::Remap::InterpolationMode;

// A bilinear point's four products of weights summing to 1, values in [-1, 1]
// (vision_loops.h's float_sum_bound).
const double kBound = float_sum_bound(4, 1.0);

// (N, OH, OW, 2) points: random in [-3, size + 3) with some exact centres, halves and specials.
std::vector<double> map_values(const TensorShape& s, double w, double h, std::mt19937& rng) {
    std::uniform_real_distribution<double> ux(-3, w + 3), uy(-3, h + 3);
    std::vector<double> v(s.total_nr_elems());
    const double special[] = {0.5,
                              1.0,
                              -0.5,
                              1e12,
                              -1e12,
                              std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::quiet_NaN(),
                              w - 1,
                              h - 0.5};
    for (size_t i = 0; i < v.size(); i += 2) {
        v[i] = ux(rng);
        v[i + 1] = uy(rng);
        if (i / 2 % 5 == 0)
            v[i + (i / 2 % 2)] = special[(i / 10) % 9];
        if (i / 2 % 7 == 3)
            v[i] = std::round(v[i]) + 0.5;
    }
    return v;
}

}  // namespace

TEST_F(X86, RemapAndGradientsMatchNaive) {
    std::mt19937 rng(13);
    struct Case {
        TensorShape src;
        size_t oh, ow;
    };
    const std::vector<Case> cases = {{{2, 3, 7, 5}, 4, 6},
                                     {{1, 2, 1, 1}, 3, 3},
                                     {{2, 1, 9, 11}, 13, 2},
                                     {{1, 3, 5, 5}, 1, 1},
                                     // a block of eight planes and a part block (the scatter's)
                                     {{2, 10, 7, 5}, 5, 4}};
    for (bool padded : {false, true})
        for (IMode im : {IMode::LINEAR, IMode::NEAREST})
            for (BMode bm : {BMode::REPLICATE, BMode::REFLECT, BMode::REFLECT_101, BMode::WRAP,
                             BMode::CONSTANT})
                for (const Case& c : cases) {
                    param::Remap p;
                    p.border_type = bm;
                    p.imode = im;
                    p.scalar = 0.25f;
                    TensorShape ms{c.src[0], c.oh, c.ow, 2}, dst{c.src[0], c.src[1], c.oh, c.ow};
                    HostTensor x = make_tensor(c.src, padded, rng);
                    HostTensor m = make_tensor(ms, padded, rng,
                                               map_values(ms, static_cast<double>(c.src[3]),
                                                          static_cast<double>(c.src[2]), rng));
                    HostTensor dy = make_tensor(dst, padded, rng);
                    expect_naive_near<Remap>(*handle, p, kBound, {x, m});
                    expect_naive_bits<RemapBackwardData>(*handle, p, {m, dy}, {c.src});
                    expect_naive_bits<RemapBackwardMat>(*handle, p, {x, m, dy});
                }
}

TEST_F(X86, RemapLargeEmptyAndFloat16) {
    std::mt19937 rng(17);
    TensorShape src{2, 32, 40, 48}, ms{2, 40, 48, 2}, dst{2, 32, 40, 48};
    HostTensor x = make_tensor(src, false, rng);
    HostTensor m = make_tensor(ms, false, rng, map_values(ms, 48, 40, rng));
    HostTensor dy = make_tensor(dst, false, rng);
    param::Remap p;
    p.border_type = BMode::REFLECT;
    expect_naive_near<Remap>(*handle, p, kBound, {x, m});
    expect_naive_bits<RemapBackwardData>(*handle, p, {m, dy}, {src});
    expect_naive_bits<RemapBackwardMat>(*handle, p, {x, m, dy});

    HostTensor none({2, 3, 4, 4}, dtype::Float32), m0({2, 0, 3, 2}, dtype::Float32);
    fill_uniform(none, -1, 1, rng);
    expect_naive_bits<Remap>(*handle, p, {none, m0});
    HostTensor dy0({2, 3, 0, 3}, dtype::Float32);
    expect_naive_bits<RemapBackwardData>(*handle, p, {m0, dy0}, {{2, 3, 4, 4}});

    HostTensor h16 = make_tensor({1, 2, 4, 4}, false, rng, {}, -1, 1, dtype::Float16);
    HostTensor m16 = make_tensor({1, 3, 3, 2}, false, rng, {}, -1, 5);
    expect_naive_bits<Remap>(*handle, p, {h16, m16}, {}, "naive");
}

// Batches that split across threads by whole images (parallel_items: on two or more threads a
// batch of 2 or 8 images; of 3 on two threads, not) and that split each image's loops instead
// (1, 3), with enough work to cross the threading grain, dense and padded (the planes' forward
// loop), border modes that fold taps and one that reads the scalar.
TEST_F(X86, RemapBatchesMatchNaive) {
    std::mt19937 rng(37);
    for (size_t batch : {1, 2, 3, 8})
        for (bool padded : {false, true})
            for (BMode bm : {BMode::REFLECT_101, BMode::CONSTANT}) {
                param::Remap p;
                p.border_type = bm;
                p.scalar = 0.5f;
                TensorShape src{batch, 16, 24, 20}, ms{batch, 40, 40, 2}, dst{batch, 16, 40, 40};
                HostTensor x = make_tensor(src, padded, rng);
                HostTensor m = make_tensor(ms, padded, rng, map_values(ms, 20, 24, rng));
                HostTensor dy = make_tensor(dst, padded, rng);
                expect_naive_near<Remap>(*handle, p, kBound, {x, m});
                expect_naive_bits<RemapBackwardData>(*handle, p, {m, dy}, {src});
                expect_naive_bits<RemapBackwardMat>(*handle, p, {x, m, dy});
            }
}

// The gradients' vector loops (warp_grad_hwy.cpp: the map gradient's lanes over a row's points,
// the data gradient's eight interleaved planes) at every instruction set this CPU has among
// AVX-512 (8 doubles), AVX2 (4) and Highway's emulation: rows of 19 points (whole vectors and a
// tail), 11 channels (a block of eight planes and a part block), every border mode (CONSTANT's
// taps read the scalar), both interpolations, points anywhere and mostly inside, dense and padded
// tensors (a padded diff takes the one-point-at-a-time loops); the targets restored afterwards.
TEST_F(X86, RemapGradientsMatchNaiveAtEachHighwayTarget) {
#ifdef NEOMEG_WITH_DNNL
    std::mt19937 rng(29);
    TensorShape src{2, 11, 9, 12}, ms{2, 5, 19, 2}, dst{2, 11, 5, 19};
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        for (bool padded : {false, true})
            for (IMode im : {IMode::LINEAR, IMode::NEAREST})
                for (BMode bm : {BMode::REPLICATE, BMode::REFLECT, BMode::REFLECT_101, BMode::WRAP,
                                 BMode::CONSTANT}) {
                    param::Remap p;
                    p.border_type = bm;
                    p.imode = im;
                    p.scalar = -0.75f;
                    HostTensor x = make_tensor(src, padded, rng);
                    HostTensor dy = make_tensor(dst, padded, rng);
                    // Points anywhere (few vectors of whole interiors), and points inside
                    // the image but every seventh on or past an edge (the map gradient's
                    // loop reads a row's two taps as one 64-bit pair where a vector's lanes
                    // are all inside).
                    std::vector<double> inside = map_values(ms, 12, 9, rng);
                    std::uniform_real_distribution<double> ux(0, 11), uy(0, 8);
                    for (size_t i = 0; i < inside.size(); i += 2)
                        if (i / 2 % 7 != 3) {
                            inside[i] = ux(rng);
                            inside[i + 1] = uy(rng);
                        }
                    for (const auto& values : {map_values(ms, 12, 9, rng), inside}) {
                        HostTensor m = make_tensor(ms, padded, rng, values);
                        expect_naive_bits<RemapBackwardData>(*handle, p, {m, dy}, {src});
                        expect_naive_bits<RemapBackwardMat>(*handle, p, {x, m, dy});
                    }
                }
    });
    EXPECT_GE(ran, 1u);
#endif
}

// The forward's two loops (warp_sampling.h's forward_image): at least half of the channels-last
// lanes used (8 channels and up, of 16 per block) takes the channels-last copy, fewer the planes'
// loop. Both sum a point's four products in the same order, so every channel of a many-channel
// call must equal, bit for bit, the same channel remapped alone (one channel: the planes' loop);
// and both stay within the bound of naive. Channel counts on both sides of the rule and of a
// block, every border mode, both interpolations, NaN and infinities in the image (their products
// reach the sums either way), a padded src, at each Highway target the CPU has.
TEST_F(X86, RemapForwardChannelsLastMatchesPlanes) {
#ifdef NEOMEG_WITH_DNNL
    std::mt19937 rng(31);
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        for (size_t channels : {7, 8, 16, 17, 33})
            for (IMode im : {IMode::LINEAR, IMode::NEAREST})
                for (BMode bm : {BMode::REPLICATE, BMode::REFLECT, BMode::REFLECT_101, BMode::WRAP,
                                 BMode::CONSTANT}) {
                    param::Remap p;
                    p.border_type = bm;
                    p.imode = im;
                    p.scalar = 0.5f;
                    const size_t h = 6, w = 9, oh = 5, ow = 11;
                    TensorShape src{2, channels, h, w}, ms{2, oh, ow, 2};
                    std::uniform_real_distribution<double> u(-1, 1);
                    std::vector<double> xv(src.total_nr_elems());
                    for (double& v : xv)
                        v = u(rng);
                    xv[5] = std::numeric_limits<double>::quiet_NaN();
                    xv[w * h + 3] = std::numeric_limits<double>::infinity();
                    xv[xv.size() - 2] = -std::numeric_limits<double>::infinity();
                    HostTensor x = make_tensor(src, channels % 2 == 1, rng, xv);
                    HostTensor m = make_tensor(
                            ms, false, rng,
                            map_values(ms, static_cast<double>(w), static_cast<double>(h), rng));
                    expect_naive_near<Remap>(*handle, p, kBound, {x, m});
                    auto op = handle->create_operator<Remap>();
                    op->param() = p;
                    const std::vector<double> all = run_op(*op, {x, m})[0].values();
                    const size_t plane = oh * ow;
                    for (size_t c = 0; c < channels; ++c) {
                        std::vector<double> one;
                        for (size_t n = 0; n < 2; ++n)
                            one.insert(one.end(), xv.begin() + (n * channels + c) * h * w,
                                       xv.begin() + (n * channels + c + 1) * h * w);
                        auto alone = run_op(*op, {HostTensor::from({2, 1, h, w}, one), m})[0];
                        std::vector<double> got;
                        for (size_t n = 0; n < 2; ++n)
                            got.insert(got.end(), all.begin() + (n * channels + c) * plane,
                                       all.begin() + (n * channels + c + 1) * plane);
                        EXPECT_TRUE(tensors_near(HostTensor::from({2, 1, oh, ow}, got), alone, 0))
                                << op->param_str() << " channels " << channels << " channel " << c;
                    }
                }
    });
    EXPECT_GE(ran, 1u);
#endif
}
