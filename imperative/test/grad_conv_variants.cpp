// Backward rules of DeformableConvForward (src, filter, offset, mask) and
// RegionRestrictedConvolutionForward (src, filter) against central differences of the forward ops.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/convolution.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

using namespace neomeg::imperative::grad_check;
using namespace neomeg::imperative::grad_check::single;

namespace {

// Offsets of whole pixels plus fractions in [0.2, 0.8]: along one coordinate the bilinear sample
// is linear inside a cell, and the differences' step of 0.01 never leaves it.
std::vector<float> smooth_offsets(const dnn::TensorShape& shape, uint32_t seed) {
    auto v = rand_values(shape, seed, 2.f);
    for (float& x : v) {
        float whole = std::floor(x), frac = x - whole;
        x = whole + 0.2f + 0.6f * frac;
    }
    return v;
}

}  // namespace

TEST(GradConvVariants, DeformableConvAgainstFiniteDifferences) {
    dnn::param::DeformableConv p;
    p.stride = {1, 2};
    p.padding = {1, 1};
    p.dilation = {2, 1};
    p.group = 2;
    // src (1, 4, 5, 6), filter (4, 2, 2, 3): output (1, 4, 5, 3); two deformable groups.
    std::vector<dnn::TensorShape> shapes = {
            {1, 4, 5, 6}, {4, 2, 2, 3}, {1, 24, 5, 3}, {1, 12, 5, 3}};
    auto f = [&](const std::vector<Tensor>& x) {
        return imperative::apply(ops::DeformableConvForward(p), x)[0];
    };
    std::vector<std::vector<float>> xv = {rand_values(shapes[0], 1), rand_values(shapes[1], 2),
                                          smooth_offsets(shapes[2], 3), rand_values(shapes[3], 4)};
    check_grads_at(f, shapes, xv, {true, true, true, true}, 5);
    // Only some inputs asked for: the others get nothing computed for them.
    check_grads_at(f, shapes, xv, {false, true, false, false}, 6);
    check_grads_at(f, shapes, xv, {false, false, true, false}, 7);
}

TEST(GradConvVariants, RegionRestrictedConvAgainstFiniteDifferences) {
    dnn::param::RegionRestrictedConvolution p;
    p.stride = {2, 1};
    p.padding = {1, 1};
    p.group = 2;
    // src (2, 4, 5, 4), filter (2, 2, 3, 3): output (2, 2, 3, 4).
    std::vector<int32_t> in_ids(2 * 5 * 4), out_ids(2 * 3 * 4);
    for (size_t i = 0; i < in_ids.size(); ++i)
        in_ids[i] = static_cast<int32_t>(i * 7 % 3);
    for (size_t i = 0; i < out_ids.size(); ++i)
        out_ids[i] = static_cast<int32_t>(i * 5 % 3);
    Tensor rin = make_i32(in_ids, {2, 5, 4});
    Tensor rout = make_i32(out_ids, {2, 3, 4});
    auto f = [&](const std::vector<Tensor>& x) {
        std::vector<Tensor> in{x[0], x[1], rin, rout};
        return imperative::apply(ops::RegionRestrictedConvolutionForward(p), in)[0];
    };
    check_grads(f, {{2, 4, 5, 4}, {2, 2, 3, 3}}, {true, true});
    check_grads(f, {{2, 4, 5, 4}, {2, 2, 3, 3}}, {false, true});
}
