// Naive dropout. Element i (logical row-major index) is kept iff the Philox uniform (seed, i) is
// at least drop_prob, so the mask does not depend on src's strides or on how work is split.
#include "neomeg/dnn/operators/norm.h"
#include "src/common/philox.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

// 1 / (1 - p), or 0 when every element is dropped.
double keep_scale(float p) {
    return p < 1.f ? 1.0 / (1.0 - double(p)) : 0.0;
}

class DropoutForwardImpl final : public DropoutForward {
public:
    using DropoutForward::DropoutForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        auto s = offsets_of(in[0].layout);
        auto d = offsets_of(out[0].layout);
        auto m = offsets_of(out[1].layout);
        double scale = keep_scale(m_param.drop_prob);
        for (size_t i = 0; i < s.size(); ++i) {
            float u = philox::unit_interval(philox::bits_at(m_param.seed, i), 24);
            bool keep = u >= m_param.drop_prob;
            elem<uint8_t>(out[1], m[i]) = keep ? 1 : 0;
            store(out[0], d[i], keep ? load(in[0], s[i]) * scale : 0.0);
        }
    }
};

class DropoutBackwardImpl final : public DropoutBackward {
public:
    using DropoutBackward::DropoutBackward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        auto dy = offsets_of(in[0].layout);
        auto m = offsets_of(in[1].layout);
        auto g = offsets_of(out[0].layout);
        double scale = keep_scale(m_param.drop_prob);
        for (size_t i = 0; i < dy.size(); ++i)
            store(out[0], g[i], elem<uint8_t>(in[1], m[i]) ? load(in[0], dy[i]) * scale : 0.0);
    }
};

}  // namespace
NM_REGISTER_NAIVE(DropoutForward, DropoutForwardImpl);
NM_REGISTER_NAIVE(DropoutBackward, DropoutBackwardImpl);
}  // namespace neomeg::dnn::naive
