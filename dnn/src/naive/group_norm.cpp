// Naive GroupNormForward/Backward. In src's logical row-major order each (sample, group) is one
// run of (C / group) * S elements, S the product of the axes after C; mean/rstd ({N, group})
// enumerate the runs in the same order.
#include <cmath>

#include "neomeg/dnn/operators/norm.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

struct Groups {
    size_t count, size, spatial, channels_per_group, group;
    // Channel of element k of run r.
    size_t channel(size_t r, size_t k) const {
        return (r % group) * channels_per_group + k / spatial;
    }
};

Groups groups_of(const TensorLayout& src, uint32_t group) {
    size_t spatial = 1;
    for (size_t i = 2; i < src.ndim; ++i)
        spatial *= src[i];
    size_t cpg = src[1] / group;
    return {src[0] * group, cpg * spatial, spatial, cpg, group};
}

class GroupNormForwardImpl final : public GroupNormForward {
public:
    using GroupNormForward::GroupNormForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorND& src = in[0];
        Groups g = groups_of(src.layout, m_param.group);
        auto s = offsets_of(src.layout), d = offsets_of(out[0].layout);
        auto mo = offsets_of(out[1].layout), ro = offsets_of(out[2].layout);
        std::vector<ptrdiff_t> wo, bo;
        if (m_param.affine) {
            wo = offsets_of(in[1].layout);
            bo = offsets_of(in[2].layout);
        }
        for (size_t r = 0; r < g.count; ++r) {
            const ptrdiff_t* run = s.data() + r * g.size;
            Moments m = moments(src, run, g.size);
            double rstd = 1.0 / std::sqrt(m.var + double(m_param.eps));
            for (size_t k = 0; k < g.size; ++k) {
                double y = (load(src, run[k]) - m.mean) * rstd;
                if (m_param.affine) {
                    size_t c = g.channel(r, k);
                    y = y * load(in[1], wo[c]) + load(in[2], bo[c]);
                }
                store(out[0], d[r * g.size + k], y);
            }
            store(out[1], mo[r], m.mean);
            store(out[2], ro[r], rstd);
        }
    }
};

class GroupNormBackwardImpl final : public GroupNormBackward {
public:
    using GroupNormBackward::GroupNormBackward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorND &dy = in[0], &src = in[1], &mean = in[2], &rstd = in[3];
        bool affine = m_param.affine;
        Groups g = groups_of(src.layout, m_param.group);
        auto dyo = offsets_of(dy.layout), so = offsets_of(src.layout);
        auto mo = offsets_of(mean.layout), ro = offsets_of(rstd.layout);
        auto go = offsets_of(out[0].layout);
        std::vector<ptrdiff_t> wo;
        if (affine)
            wo = offsets_of(in[4].layout);
        size_t channels = src.layout[1];
        std::vector<double> dw(channels, 0.0), db(channels, 0.0), gr(g.size), xhat(g.size);
        for (size_t r = 0; r < g.count; ++r) {
            double mu = load(mean, mo[r]), rs = load(rstd, ro[r]);
            // With gr = dy * weight: dx = rstd * (gr - mean(gr) - xhat * mean(gr * xhat)).
            double g_mean = 0, gx_mean = 0;
            for (size_t k = 0; k < g.size; ++k) {
                size_t i = r * g.size + k, c = g.channel(r, k);
                double dyk = load(dy, dyo[i]);
                xhat[k] = (load(src, so[i]) - mu) * rs;
                gr[k] = affine ? dyk * load(in[4], wo[c]) : dyk;
                g_mean += gr[k];
                gx_mean += gr[k] * xhat[k];
                dw[c] += dyk * xhat[k];
                db[c] += dyk;
            }
            if (g.size) {
                g_mean /= double(g.size);
                gx_mean /= double(g.size);
            }
            for (size_t k = 0; k < g.size; ++k)
                store(out[0], go[r * g.size + k], rs * (gr[k] - g_mean - xhat[k] * gx_mean));
        }
        if (affine) {
            auto dwo = offsets_of(out[1].layout), dbo = offsets_of(out[2].layout);
            for (size_t c = 0; c < channels; ++c) {
                store(out[1], dwo[c], dw[c]);
                store(out[2], dbo[c], db[c]);
            }
        }
    }
};

}  // namespace
NM_REGISTER_NAIVE(GroupNormForward, GroupNormForwardImpl);
NM_REGISTER_NAIVE(GroupNormBackward, GroupNormBackwardImpl);
}  // namespace neomeg::dnn::naive
