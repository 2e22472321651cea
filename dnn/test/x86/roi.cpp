// ROIAlign, ROIPooling and their gradients on the x86 handle against naive: both modes, fixed
// and dense sampling, both alignments (offset 0 and 0.5), rois inside, past every edge,
// inverted, wholly outside and of a fractional batch index, several rois on one image (the
// backward's sums), odd and 1-pixel images, 1x1 outputs, NaN and infinite pixels, padded inputs
// and outputs, no rois, the bad-batch and bad-index errors, and float16 (naive's kernel).
// The forwards sum in float32 and are held to the bound of their arithmetic (align_bound,
// pool_bound; ROIPooling's maximum rounds nothing: bound 0); the gradients must be naive's bits.
#include <algorithm>
#include <limits>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/roi_geometry.h"
#include "x86/highway_targets.h"
#include "x86/vision_loops.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Rois over (3, C, 9, 8) images: inside, past every edge, inverted, outside, fractional batch,
// and two more on image 0 so that contributions overlap.
const std::vector<double> kRois = {0, 1.2, 0.5,  6.3, 7.1, 2,  -2,  -1.5, 4,   10,  1,   6,  5, 1,
                                   2, 1,   12.5, 10,  14,  13, 2.7, 0,    0,   7.5, 8.5, 0,  3, 3,
                                   3, 3,   0,    0,   0,   8,  9,   0,    2.5, 1.5, 5.5, 4.5};
constexpr size_t kNumRois = 8;

// ROIAlign's forward against naive (vision_loops.h's float_sum_bound): a bin sums at most the
// four taps of each of its sh x sw samples, whose weights sum to at most 1 per sample, then
// divides by the sample count (MAX sums four taps per sample and divides nothing: a smaller
// bound). Values are in [-1, 1].
double align_bound(const param::ROIAlign& p, const std::vector<double>& rois) {
    size_t most = 1;
    for (size_t k = 0; k + 5 <= rois.size(); k += 5) {
        double r[5];
        for (size_t j = 0; j < 5; ++j)
            r[j] = static_cast<float>(rois[k + j]);  // the rois tensor is float32
        roi::AlignGrid g = roi::align_grid(p, r, 0);
        most = std::max(most, static_cast<size_t>(g.sh) * g.sw);
    }
    return float_sum_bound(4 * most, 1.0, 1);
}

// ROIPooling's forward (float_sum_bound): a mean of at most all h x w pixels of weight 1, then a
// division; the maximum is exact.
double pool_bound(const param::ROIPooling& p, const TensorShape& src) {
    if (p.mode == param::ROIPooling::Mode::MAX)
        return 0;
    return float_sum_bound(src[2] * src[3], 1.0, 1);
}

std::vector<double> index_values(size_t count, uint32_t samples, std::mt19937& rng) {
    std::vector<double> v(count);
    std::uniform_int_distribution<uint32_t> pick(0, samples - 1);
    for (double& x : v)
        x = pick(rng);
    return v;
}

}  // namespace

TEST_F(X86, ROIAlignMatchesNaive) {
    using Mode = param::ROIAlign::Mode;
    std::mt19937 rng(3);
    for (bool padded : {false, true})
        for (Mode mode : {Mode::MAX, Mode::AVERAGE})
            for (uint32_t samples : {2u, 0u})
                for (TensorShape src : {TensorShape{3, 4, 9, 8}, TensorShape{3, 5, 1, 1}}) {
                    param::ROIAlign p;
                    p.mode = mode;
                    p.pooled_height = 3;
                    p.pooled_width = 2;
                    p.sample_height = samples;
                    p.sample_width = samples ? 3 : 0;
                    p.spatial_scale = 0.75f;
                    p.offset = 0.5f;
                    HostTensor x = make_tensor(src, padded, rng);
                    HostTensor rois = make_tensor({kNumRois, 5}, padded, rng, kRois);
                    auto fwd = expect_naive_near<ROIAlign>(*handle, p, align_bound(p, kRois),
                                                           {x, rois});
                    TensorShape pooled{kNumRois, src[1], 3, 2};
                    HostTensor dy = make_tensor(pooled, padded, rng);
                    // MAX: the forward's own indices (dense grids differ per roi), and any
                    // sample of a fixed grid.
                    HostTensor index = fwd[1];
                    if (mode == Mode::MAX && samples)
                        index = make_tensor(pooled, padded, rng,
                                            index_values(pooled.total_nr_elems(), 6, rng), 0, 0,
                                            dtype::Int32);
                    expect_naive_bits<ROIAlignBackward>(*handle, p, {dy, rois, index}, {src});
                }
}

TEST_F(X86, ROIPoolingMatchesNaive) {
    using Mode = param::ROIPooling::Mode;
    std::mt19937 rng(5);
    for (bool padded : {false, true})
        for (Mode mode : {Mode::MAX, Mode::AVERAGE})
            for (float scale : {0.5f, 1.f})
                for (TensorShape src : {TensorShape{3, 4, 9, 8}, TensorShape{3, 2, 13, 1}}) {
                    param::ROIPooling p;
                    p.mode = mode;
                    p.pooled_height = 3;
                    p.pooled_width = 2;
                    p.scale = scale;
                    HostTensor x = make_tensor(src, padded, rng);
                    HostTensor rois = make_tensor({kNumRois, 5}, padded, rng, kRois);
                    auto fwd = expect_naive_near<ROIPooling>(*handle, p, pool_bound(p, src),
                                                             {x, rois});
                    TensorShape pooled{kNumRois, src[1], 3, 2};
                    HostTensor dy = make_tensor(pooled, padded, rng);
                    expect_naive_bits<ROIPoolingBackward>(*handle, p, {dy, rois, fwd[1]}, {src});
                }
}

// Many rois and channels: the OpenMP split (the forward's (roi, channel) planes, the backward's
// (image, channel) planes, each summing several rois).
TEST_F(X86, ROIOpsLargeMatchNaive) {
    std::mt19937 rng(7);
    const size_t k = 64;
    std::vector<double> rois;
    std::uniform_real_distribution<double> u(-8, 72);
    for (size_t i = 0; i < k; ++i) {
        double x1 = u(rng), y1 = u(rng);
        for (double v : {static_cast<double>(i % 2), x1, y1, x1 + u(rng) / 2, y1 + u(rng) / 2})
            rois.push_back(v);
    }
    TensorShape src{2, 16, 64, 64}, pooled{k, 16, 7, 7};
    HostTensor x = make_tensor(src, false, rng), r = make_tensor({k, 5}, false, rng, rois);
    HostTensor dy = make_tensor(pooled, false, rng);
    param::ROIAlign a;
    a.pooled_height = a.pooled_width = 7;
    a.sample_height = a.sample_width = 2;
    for (auto mode : {param::ROIAlign::Mode::AVERAGE, param::ROIAlign::Mode::MAX}) {
        a.mode = mode;
        auto fwd = expect_naive_near<ROIAlign>(*handle, a, align_bound(a, rois), {x, r});
        expect_naive_bits<ROIAlignBackward>(*handle, a, {dy, r, fwd[1]}, {src});
    }
    param::ROIPooling q;
    q.pooled_height = q.pooled_width = 7;
    for (auto mode : {param::ROIPooling::Mode::AVERAGE, param::ROIPooling::Mode::MAX}) {
        q.mode = mode;
        auto fwd = expect_naive_near<ROIPooling>(*handle, q, pool_bound(q, src), {x, r});
        expect_naive_bits<ROIPoolingBackward>(*handle, q, {dy, r, fwd[1]}, {src});
    }
}

// 1x1 and 2x3 outputs, both alignments, dense, single and 3x3 sampling, and NaN and infinite
// pixels (in some taps, outside others': a pixel outside a sample's taps must not reach it).
TEST_F(X86, ROIOpsEdgeCasesMatchNaive) {
    std::mt19937 rng(19);
    for (bool padded : {false, true}) {
        TensorShape src{3, 5, 6, 7};
        HostTensor x = make_tensor(src, padded, rng);
        std::vector<double> v = x.values();
        v[1 * 5 * 42 + 2 * 42 + 3 * 7 + 4] = std::numeric_limits<double>::quiet_NaN();
        v[0 * 5 * 42 + 1 * 42 + 0 * 7 + 0] = std::numeric_limits<double>::infinity();
        v[2 * 5 * 42 + 4 * 42 + 5 * 7 + 6] = -std::numeric_limits<double>::infinity();
        x.set_values(v);
        HostTensor rois = make_tensor({kNumRois, 5}, padded, rng, kRois);
        for (auto [ph, pw] : {std::pair{1u, 1u}, std::pair{2u, 3u}}) {
            TensorShape pooled{kNumRois, src[1], ph, pw};
            HostTensor dy = make_tensor(pooled, padded, rng);
            for (auto mode : {param::ROIAlign::Mode::AVERAGE, param::ROIAlign::Mode::MAX})
                for (float offset : {0.f, 0.5f})
                    for (uint32_t samples : {0u, 1u, 3u}) {
                        param::ROIAlign a;
                        a.mode = mode;
                        a.pooled_height = ph;
                        a.pooled_width = pw;
                        a.sample_height = a.sample_width = samples;
                        a.offset = offset;
                        auto fwd = expect_naive_near<ROIAlign>(*handle, a, align_bound(a, kRois),
                                                               {x, rois});
                        expect_naive_bits<ROIAlignBackward>(*handle, a, {dy, rois, fwd[1]}, {src});
                    }
            for (auto mode : {param::ROIPooling::Mode::AVERAGE, param::ROIPooling::Mode::MAX}) {
                param::ROIPooling q;
                q.mode = mode;
                q.pooled_height = ph;
                q.pooled_width = pw;
                auto fwd = expect_naive_near<ROIPooling>(*handle, q, pool_bound(q, src), {x, rois});
                expect_naive_bits<ROIPoolingBackward>(*handle, q, {dy, rois, fwd[1]}, {src});
            }
        }
    }
}

// The forwards' vector loops (roi_bins_hwy.cpp) at every instruction set this CPU has among
// AVX-512 (16 lanes), AVX2 (8) and Highway's 4-lane emulation, over 20 channels (a partial block
// in each), the targets restored afterwards (an ONEDNN_MAX_CPU_ISA cap included).
TEST_F(X86, ROIForwardsMatchNaiveAtEachHighwayTarget) {
#ifdef NEOMEG_WITH_DNNL
    std::mt19937 rng(23);
    TensorShape src{3, 20, 9, 8};
    HostTensor rois = make_tensor({kNumRois, 5}, false, rng, kRois);
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        // Padded src is copied channels-last one element at a time, dense src (and dense
        // outputs) by the 8 x 8 register transposes (transpose_hwy.h).
        for (bool padded : {true, false}) {
            HostTensor x = make_tensor(src, padded, rng);
            for (auto mode : {param::ROIAlign::Mode::AVERAGE, param::ROIAlign::Mode::MAX}) {
                param::ROIAlign a;
                a.mode = mode;
                a.pooled_height = a.pooled_width = 3;
                expect_naive_near<ROIAlign>(*handle, a, align_bound(a, kRois), {x, rois});
            }
            for (auto mode : {param::ROIPooling::Mode::AVERAGE, param::ROIPooling::Mode::MAX}) {
                param::ROIPooling q;
                q.mode = mode;
                q.pooled_height = q.pooled_width = 3;
                expect_naive_near<ROIPooling>(*handle, q, pool_bound(q, src), {x, rois});
            }
        }
    });
    EXPECT_GE(ran, 1u);
#endif
}

TEST_F(X86, ROIOpsNoRoisBadBatchBadIndexAndFloat16) {
    std::mt19937 rng(11);
    HostTensor x = make_tensor({2, 3, 4, 4}, false, rng);
    HostTensor none({0, 5}, dtype::Float32);
    expect_naive_bits<ROIAlign>(*handle, {}, {x, none});
    expect_naive_bits<ROIPooling>(*handle, {}, {x, none});
    HostTensor dy0({0, 3, 1, 1}, dtype::Float32), i0({0, 3, 1, 1}, dtype::Int32);
    // No rois: the gradient is all zeros, written by the loops.
    expect_naive_bits<ROIAlignBackward>(*handle, {}, {dy0, none, i0}, {{2, 3, 4, 4}});
    expect_naive_bits<ROIPoolingBackward>(*handle, {}, {dy0, none, i0}, {{2, 3, 4, 4}});

    HostTensor bad = HostTensor::from({1, 5}, {2, 0, 0, 1, 1});
    auto align = handle->create_operator<ROIAlign>();
    EXPECT_THROW(run_op(*align, {x, bad}), IndexError);
    auto pool = handle->create_operator<ROIPooling>();
    EXPECT_THROW(run_op(*pool, {x, HostTensor::from({1, 5}, {-1, 0, 0, 1, 1})}), IndexError);
    HostTensor one = HostTensor::from({1, 5}, {0, 0, 0, 3, 3});
    HostTensor dy({1, 3, 1, 1}, dtype::Float32), idx({1, 3, 1, 1}, dtype::Int32);
    fill_uniform(dy, -1, 1, rng);
    idx.set_values({0, 99, 0});  // sample 99 of a 1x1 grid (dense: the roi's 4x4 bin has 4x4)
    param::ROIAlign a;
    a.sample_height = a.sample_width = 1;
    auto align_b = handle->create_operator<ROIAlignBackward>();
    align_b->param() = a;
    EXPECT_THROW(run_op(*align_b, {dy, one, idx}, {{2, 3, 4, 4}}), IndexError);
    auto pool_b = handle->create_operator<ROIPoolingBackward>();
    EXPECT_THROW(run_op(*pool_b, {dy, one, idx}, {{2, 3, 4, 4}}), IndexError);

    // float16: naive's kernel, the same answer.
    HostTensor h16 = make_tensor({2, 3, 4, 4}, false, rng, {}, -1, 1, dtype::Float16);
    expect_naive_bits<ROIAlign>(*handle, {}, {h16, one}, {}, "naive");
}
