// NMSKeep's test inputs, shared by the suites that check a backend's kernel against naive.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "neomeg/dnn/operators/vision.h"

namespace neomeg::dnn::test {

inline param::NMSKeep nms_param(float thresh, uint32_t max_output) {
    param::NMSKeep p;
    p.iou_thresh = thresh;
    p.max_output = max_output;
    return p;
}

// n boxes (x1, y1, x2, y2) at positions up to `spread` with sides up to `size`; every third one
// next to an earlier box, so that many pairs overlap and suppression decides something.
inline std::vector<double> random_boxes(size_t n, std::mt19937& rng, float spread = 100.f,
                                        float size = 30.f) {
    std::uniform_real_distribution<float> pos(0, spread), side(0.5f, size), jitter(-1.f, 1.f);
    std::vector<double> v;
    for (size_t i = 0; i < n; ++i) {
        float x = pos(rng), y = pos(rng);
        if (i % 3 == 0 && i > 0) {
            size_t j = (i * 7) % i;
            x = static_cast<float>(v[4 * j]) + jitter(rng);
            y = static_cast<float>(v[4 * j + 1]) + jitter(rng);
        }
        v.insert(v.end(), {x, y, x + side(rng), y + side(rng)});
    }
    return v;
}

}  // namespace neomeg::dnn::test
