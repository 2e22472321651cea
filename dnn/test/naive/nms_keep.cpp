// NMSKeep (naive): MegEngine's outputs for a hand-made case (the same boxes through MegEngine
// 1.13's NMSKeep gave these indices and counts), a second formulation on random boxes (every
// pair's IoU in double, then the greedy scan over that matrix), the padding past the count,
// batches, edge shapes (no boxes, one box, max_output 0 and past N, all suppressed, empty
// boxes, ties), strided layouts and bad input.
#include <algorithm>
#include <random>

#include "common/nms_cases.h"
#include "naive/indexing_test_util.h"
#include "neomeg/dnn/operators/vision.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using namespace neomeg::dnn::test::indexing;

namespace {

HostTensor boxes(size_t batch, const std::vector<double>& v) {
    return HostTensor::from({batch, v.size() / 4 / batch, 4}, v, dtype::Float32);
}

// The reference: IoU of every pair in double (boxes of positive area, integer corners, so that
// the value is exact enough for thresholds away from any pair's IoU), then the greedy scan.
std::vector<double> reference(const std::vector<double>& b, size_t n, double thresh, size_t cap) {
    auto area = [&](size_t i) { return (b[4 * i + 2] - b[4 * i]) * (b[4 * i + 3] - b[4 * i + 1]); };
    std::vector<std::vector<double>> iou(n, std::vector<double>(n));
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            double w = std::min(b[4 * i + 2], b[4 * j + 2]) - std::max(b[4 * i], b[4 * j]);
            double h = std::min(b[4 * i + 3], b[4 * j + 3]) - std::max(b[4 * i + 1], b[4 * j + 1]);
            double inter = std::max(w, 0.0) * std::max(h, 0.0);
            iou[i][j] = inter / (area(i) + area(j) - inter);
        }
    std::vector<double> keep;
    std::vector<bool> removed(n, false);
    for (size_t i = 0; i < n && keep.size() < cap; ++i) {
        if (removed[i])
            continue;
        keep.push_back(static_cast<double>(i));
        for (size_t j = i + 1; j < n; ++j)
            removed[j] = removed[j] || iou[i][j] > thresh;
    }
    return keep;
}

// n boxes with integer corners in [0, 40), each at least 1 wide and high.
std::vector<double> random_int_boxes(size_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int> pos(0, 30), size(1, 12);
    std::vector<double> v;
    for (size_t i = 0; i < n; ++i) {
        int x = pos(rng), y = pos(rng);
        v.insert(v.end(), {double(x), double(y), double(x + size(rng)), double(y + size(rng))});
    }
    return v;
}

std::vector<double> row(const HostTensor& t, size_t b) {
    auto v = t.values();
    size_t w = t.shape()[1];
    return {v.begin() + static_cast<ptrdiff_t>(b * w),
            v.begin() + static_cast<ptrdiff_t>(b * w + w)};
}

}  // namespace

TEST(NMSKeep, MegEngineCase) {
    // Box 1 overlaps box 0 (IoU 0.81), the last two are empty: MegEngine keeps 0, 2, 3, 4 and pads
    // with the last kept index.
    auto b = boxes(1, {0, 0, 10, 10, 1, 1, 10, 10, 20, 20, 30, 30, 0, 0, 0, 0, 0, 0, 0, 0});
    auto outs = run<NMSKeep>(nms_param(0.5f, 7), {b});
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_TRUE(outs[0].shape().eq_shape(TensorShape{1, 7}));
    EXPECT_TRUE(outs[1].shape().eq_shape(TensorShape{1}));
    EXPECT_EQ(outs[0].dtype(), dtype::Int32);
    EXPECT_EQ(outs[1].dtype(), dtype::Int32);
    EXPECT_EQ(outs[0].values(), (std::vector<double>{0, 2, 3, 4, 4, 4, 4}));
    EXPECT_EQ(outs[1].values(), (std::vector<double>{4}));
    auto two = run<NMSKeep>(nms_param(0.5f, 2), {b});
    EXPECT_EQ(two[0].values(), (std::vector<double>{0, 2}));
    EXPECT_EQ(two[1].values(), (std::vector<double>{2}));
    // A batch of two: the second item the boxes reversed (MegEngine: 0 1 2 3 3 3, count 4).
    auto b2 = boxes(2, {0, 0, 10, 10, 1, 1, 10, 10, 20, 20, 30, 30, 0, 0, 0,  0,  0, 0, 0,  0,
                        0, 0, 0,  0,  0, 0, 0,  0,  20, 20, 30, 30, 1, 1, 10, 10, 0, 0, 10, 10});
    auto batched = run<NMSKeep>(nms_param(0.5f, 6), {b2});
    EXPECT_EQ(batched[0].values(), (std::vector<double>{0, 2, 3, 4, 4, 4, 0, 1, 2, 3, 3, 3}));
    EXPECT_EQ(batched[1].values(), (std::vector<double>{4, 4}));
}

TEST(NMSKeep, MatchesIouMatrixGreedyScan) {
    std::mt19937 rng(5);
    for (size_t n : {1, 2, 17, 60, 150})
        for (double thresh : {0.1, 0.3, 0.55, 0.8})
            for (size_t cap : {size_t(1), size_t(5), n, n + 3}) {
                auto v = random_int_boxes(n, rng);
                auto outs = run<NMSKeep>(
                        nms_param(static_cast<float>(thresh), static_cast<uint32_t>(cap)),
                        {boxes(1, v)});
                auto want = reference(v, n, thresh, cap);
                auto got = outs[0].values();
                ASSERT_EQ(outs[1].values()[0], static_cast<double>(want.size()));
                for (size_t k = 0; k < cap; ++k)
                    ASSERT_EQ(got[k], k < want.size() ? want[k] : want.back())
                            << "n " << n << " thresh " << thresh << " cap " << cap << " at " << k;
            }
}

TEST(NMSKeep, EdgeCases) {
    // No boxes: count 0, the capacity filled with 0; a batch of none: empty outputs.
    auto none = run<NMSKeep>(nms_param(0.5f, 3), {HostTensor({2, 0, 4}, dtype::Float32)});
    EXPECT_EQ(none[0].values(), (std::vector<double>(6, 0)));
    EXPECT_EQ(none[1].values(), (std::vector<double>{0, 0}));
    auto no_batch = run<NMSKeep>(nms_param(0.5f, 3), {HostTensor({0, 5, 4}, dtype::Float32)});
    EXPECT_TRUE(no_batch[0].shape().eq_shape(TensorShape{0, 3}));
    EXPECT_TRUE(no_batch[1].shape().eq_shape(TensorShape{0}));
    // max_output 0 keeps nothing.
    auto b = boxes(1, {0, 0, 2, 2, 5, 5, 6, 6});
    auto zero = run<NMSKeep>(nms_param(0.5f, 0), {b});
    EXPECT_TRUE(zero[0].shape().eq_shape(TensorShape{1, 0}));
    EXPECT_EQ(zero[1].values(), (std::vector<double>{0}));
    // One box is kept at any threshold, a negative one included.
    auto one = run<NMSKeep>(nms_param(-1.f, 2), {boxes(1, {1, 1, 3, 4})});
    EXPECT_EQ(one[0].values(), (std::vector<double>{0, 0}));
    EXPECT_EQ(one[1].values(), (std::vector<double>{1}));
    // Every box one copy of the first: all but it suppressed.
    auto same = run<NMSKeep>(nms_param(0.9f, 4), {boxes(1, {0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4})});
    EXPECT_EQ(same[0].values(), (std::vector<double>{0, 0, 0, 0}));
    EXPECT_EQ(same[1].values(), (std::vector<double>{1}));
    // A negative threshold suppresses every later box of positive area, overlapping or not
    // (inter 0 > union * -1).
    auto negative = run<NMSKeep>(nms_param(-1.f, 3), {b});
    EXPECT_EQ(negative[1].values(), (std::vector<double>{1}));
    // Empty boxes (zero union with each other) suppress nothing, even at threshold 0; IoU exactly
    // at the threshold is kept (the test is strictly greater).
    auto empty = run<NMSKeep>(nms_param(0.f, 3), {boxes(1, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3})});
    EXPECT_EQ(empty[1].values(), (std::vector<double>{3}));
    auto half = boxes(1, {0, 0, 2, 2, 0, 0, 2, 1, 2, 0, 4, 2});
    EXPECT_EQ(run<NMSKeep>(nms_param(0.5f, 3), {half})[1].values(), (std::vector<double>{3}));
    auto below = run<NMSKeep>(nms_param(0.49f, 3), {half});
    EXPECT_EQ(below[1].values(), (std::vector<double>{2}));
    EXPECT_EQ(row(below[0], 0), (std::vector<double>{0, 2, 2}));
}

TEST(NMSKeep, StridedLayouts) {
    auto h = Handle::make_naive();
    std::mt19937 rng(9);
    auto v = random_int_boxes(24, rng);
    Checker<NMSKeep> c(h.get());
    c.set_param(nms_param(0.3f, 10)).set_epsilon(0).set_values(0, v);
    c.set_noncontiguous(true).execs({{2, 12, 4}});
    // Coordinates as the slowest axis: (4, B, N) transposed to (B, N, 4).
    c.exec_layouts({TensorLayout({4, 2, 12}, dtype::Float32).dimshuffle({1, 2, 0})});
}

TEST(NMSKeep, BadInput) {
    auto p = nms_param(0.5f, 3);
    expect_error<ShapeError>(
            [&] {
                run<NMSKeep>(p, {HostTensor({5, 4}, dtype::Float32)});
            },
            {"NMSKeep", "boxes must have shape (batch, N, 4)", "{5,4}"});
    expect_error<ShapeError>(
            [&] {
                run<NMSKeep>(p, {HostTensor({1, 5, 5}, dtype::Float32)});
            },
            {"boxes must have shape (batch, N, 4)"});
    expect_error<DTypeError>(
            [&] {
                run<NMSKeep>(p, {HostTensor({1, 5, 4}, dtype::Float16)});
            },
            {"boxes must be float32"});
    expect_error<DTypeError>(
            [&] {
                run<NMSKeep>(p, {HostTensor({1, 5, 4}, dtype::Int32)});
            },
            {"boxes must be float32"});
}
