// Backward rules of Correlation (data1, data2) and DeformablePSROIPooling (src, trans; the rois
// get none) against central differences of the forward ops.
#include <gtest/gtest.h>

#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/vision.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

using namespace neomeg::imperative::grad_check;
using namespace neomeg::imperative::grad_check::single;

namespace {

// Magnitudes in [lo, hi) with random signs: data1's in [0.5, 1) and data2's in [0.1, 0.3) keep
// |a - b|, |a| and |b| above 0.1, so the differences' step never crosses a kink of |a - b|.
std::vector<float> signed_magnitudes(const dnn::TensorShape& shape, uint32_t seed, float lo,
                                     float hi) {
    auto v = rand_values(shape, seed);
    for (float& x : v) {
        float m = lo + (hi - lo) * std::abs(x);
        x = x < 0 ? -m : m;
    }
    return v;
}

}  // namespace

TEST(GradVision, CorrelationAgainstFiniteDifferences) {
    for (bool mul : {true, false}) {
        dnn::param::Correlation p;
        p.kernel_size = 3;
        p.max_displacement = 2;
        p.stride1 = 2;
        p.pad_size = 2;
        p.is_multiply = mul;
        std::vector<dnn::TensorShape> shapes = {{2, 2, 5, 6}, {2, 2, 5, 6}};
        auto f = [&](const std::vector<Tensor>& x) {
            return imperative::apply(ops::Correlation(p), x)[0];
        };
        std::vector<std::vector<float>> xv = {signed_magnitudes(shapes[0], 1, 0.5f, 1.f),
                                              signed_magnitudes(shapes[1], 2, 0.1f, 0.3f)};
        check_grads_at(f, shapes, xv, {true, true}, 3);
        check_grads_at(f, shapes, xv, {false, true}, 4);
    }
}

TEST(GradVision, DeformablePSROIPoolingAgainstFiniteDifferences) {
    dnn::param::DeformablePSROIPooling p;
    p.no_trans = false;
    p.part_size = p.pooled_h = p.pooled_w = 2;
    p.sample_per_part = 2;
    p.trans_std = 0.1f;
    // Rois inside (1, 3, 8, 9) images, small offsets: every sample stays inside.
    std::vector<dnn::TensorShape> shapes = {{2, 3, 8, 9}, {2, 5}, {2, 2, 2, 2}};
    auto f = [&](const std::vector<Tensor>& x) {
        return imperative::apply(ops::DeformablePSROIPooling(p), x)[0];
    };
    std::vector<std::vector<float>> xv = {rand_values(shapes[0], 5),
                                          {0, 1, 2, 5, 6, 1, 2, 1, 6, 5},
                                          rand_values(shapes[2], 6, 0.3f)};
    check_grads_at(f, shapes, xv, {true, false, true}, 7, 1e-2f, 1e-3f);
    check_grads_at(f, shapes, xv, {false, false, true}, 8, 1e-2f, 1e-3f);
}
