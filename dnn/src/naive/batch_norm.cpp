// Naive BatchNormForward/Backward. src's layout is viewed with the channel axis first, so each
// channel is one run of M = N * (product of the axes after C) logical offsets; the per-channel
// tensors ({C} or {1, C, 1, ...}) enumerate channels in order.
#include <cmath>

#include "neomeg/dnn/operators/norm.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

std::vector<ptrdiff_t> channel_major_offsets(const TensorLayout& l) {
    std::vector<size_t> perm{1, 0};
    for (size_t i = 2; i < l.ndim; ++i)
        perm.push_back(i);
    return offsets_of(l.dimshuffle(perm));
}

class BatchNormForwardImpl final : public BatchNormForward {
public:
    using BatchNormForward::BatchNormForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorND &src = in[0], &scale = in[1], &bias = in[2];
        const TensorND &run_mean = in[3], &run_var = in[4];
        size_t channels = src.layout[1];
        auto s = channel_major_offsets(src.layout), d = channel_major_offsets(out[0].layout);
        size_t m_size = channels ? s.size() / channels : 0;
        bool training = m_param.fwd_mode == Param::FwdMode::TRAINING;
        double momentum = m_param.momentum, eps = m_param.epsilon;
        std::vector<std::vector<ptrdiff_t>> po;
        for (size_t i = 1; i < 5; ++i)
            po.push_back(offsets_of(in[i].layout));
        std::vector<std::vector<ptrdiff_t>> oo;
        for (size_t i = 1; i < 5; ++i)
            oo.push_back(offsets_of(out[i].layout));
        for (size_t c = 0; c < channels; ++c) {
            // Read every per-channel input before writing: the running outputs may alias them.
            double sc = load(scale, po[0][c]), bi = load(bias, po[1][c]);
            double rm = load(run_mean, po[2][c]), rv = load(run_var, po[3][c]);
            const ptrdiff_t* run = s.data() + c * m_size;
            double mean = rm, var = rv;
            if (training) {
                Moments m = moments(src, run, m_size);
                mean = m.mean;
                var = m.var;
                if (m_size > 0) {  // one value: the unbiased variance 0 * 1 / 0 is NaN
                    double unbiased = var * double(m_size) / double(m_size - 1);
                    rm = rm * momentum + mean * (1 - momentum);
                    rv = rv * momentum + unbiased * (1 - momentum);
                }
            }
            double inv_std = 1.0 / std::sqrt(var + eps);
            for (size_t k = 0; k < m_size; ++k)
                store(out[0], d[c * m_size + k], (load(src, run[k]) - mean) * inv_std * sc + bi);
            store(out[1], oo[0][c], mean);
            store(out[2], oo[1][c], inv_std);
            store(out[3], oo[2][c], rm);
            store(out[4], oo[3][c], rv);
        }
    }
};

class BatchNormBackwardImpl final : public BatchNormBackward {
public:
    using BatchNormBackward::BatchNormBackward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorND &dy = in[0], &src = in[1], &scale = in[2];
        const TensorND &saved_mean = in[3], &saved_inv_std = in[4];
        size_t channels = src.layout[1];
        auto dyo = channel_major_offsets(dy.layout), so = channel_major_offsets(src.layout);
        auto go = channel_major_offsets(out[0].layout);
        auto sco = offsets_of(scale.layout), mo = offsets_of(saved_mean.layout);
        auto io = offsets_of(saved_inv_std.layout);
        auto dso = offsets_of(out[1].layout), dbo = offsets_of(out[2].layout);
        size_t m_size = channels ? so.size() / channels : 0;
        bool training = m_param.fwd_mode == Param::FwdMode::TRAINING;
        for (size_t c = 0; c < channels; ++c) {
            double sc = load(scale, sco[c]), mean = load(saved_mean, mo[c]);
            double inv_std = load(saved_inv_std, io[c]);
            size_t base = c * m_size;
            double dbias = 0, dscale = 0;
            for (size_t k = 0; k < m_size; ++k) {
                double dyk = load(dy, dyo[base + k]);
                dbias += dyk;
                dscale += dyk * (load(src, so[base + k]) - mean) * inv_std;
            }
            for (size_t k = 0; k < m_size; ++k) {
                double dyk = load(dy, dyo[base + k]);
                double g = dyk;
                // In training the batch statistics depend on every element of the channel.
                if (training) {
                    double xhat = (load(src, so[base + k]) - mean) * inv_std;
                    g = dyk - (dbias + xhat * dscale) / double(m_size);
                }
                store(out[0], go[base + k], sc * inv_std * g);
            }
            store(out[1], dso[c], dscale);
            store(out[2], dbo[c], dbias);
        }
    }
};

}  // namespace
NM_REGISTER_NAIVE(BatchNormForward, BatchNormForwardImpl);
NM_REGISTER_NAIVE(BatchNormBackward, BatchNormBackwardImpl);
}  // namespace neomeg::dnn::naive
