// NMSKeep's overlap test, shared by the naive and x86 kernels (the CUDA kernel spells out the same
// steps with rounded intrinsics): MegEngine's inter > union * thresh in float32, every product and
// sum rounded on its own, so that the kernels agree bit for bit. A zero union (two empty boxes)
// suppresses nothing, nor does a NaN threshold. The operands' order (a the candidate, b a kept
// box) is MegEngine's, which decides std::min's and std::max's result where a coordinate is NaN.
#pragma once

#include <algorithm>

namespace neomeg::dnn::nms {

struct Box {
    float x1, y1, x2, y2;
};

inline float area(const Box& b) {
    return (b.x2 - b.x1) * (b.y2 - b.y1);
}

// Whether box a (area area_a) overlaps box b (area area_b) by an IoU above thresh.
inline bool overlaps(const Box& a, float area_a, const Box& b, float area_b, float thresh) {
    float w = std::max(std::min(a.x2, b.x2) - std::max(a.x1, b.x1), 0.f);
    float h = std::max(std::min(a.y2, b.y2) - std::max(a.y1, b.y1), 0.f);
    float inter = w * h;
    float uni = area_a + area_b - inter;
    return inter > uni * thresh;
}

}  // namespace neomeg::dnn::nms
