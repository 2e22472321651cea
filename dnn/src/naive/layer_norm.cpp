// Naive LayerNormForward/Backward. Logical row-major offsets of src split into rows of the
// normalised (trailing) size; mean/rstd offsets enumerate the rows in the same order.
#include <cmath>

#include "neomeg/dnn/operators/norm.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

size_t row_size(const TensorLayout& src, uint32_t normalized_dim) {
    size_t n = 1;
    for (size_t i = src.ndim - normalized_dim; i < src.ndim; ++i)
        n *= src[i];
    return n;
}

class LayerNormForwardImpl final : public LayerNormForward {
public:
    using LayerNormForward::LayerNormForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorND& src = in[0];
        auto s = offsets_of(src.layout), d = offsets_of(out[0].layout);
        auto mo = offsets_of(out[1].layout), ro = offsets_of(out[2].layout);
        std::vector<ptrdiff_t> wo, bo;
        if (m_param.affine) {
            wo = offsets_of(in[1].layout);
            bo = offsets_of(in[2].layout);
        }
        size_t len = row_size(src.layout, m_param.normalized_dim);
        for (size_t r = 0; r < mo.size(); ++r) {
            const ptrdiff_t* row = s.data() + r * len;
            Moments m = moments(src, row, len);
            double rstd = 1.0 / std::sqrt(m.var + double(m_param.eps));
            for (size_t k = 0; k < len; ++k) {
                double y = (load(src, row[k]) - m.mean) * rstd;
                if (m_param.affine)
                    y = y * load(in[1], wo[k]) + load(in[2], bo[k]);
                store(out[0], d[r * len + k], y);
            }
            store(out[1], mo[r], m.mean);
            store(out[2], ro[r], rstd);
        }
    }
};

class LayerNormBackwardImpl final : public LayerNormBackward {
public:
    using LayerNormBackward::LayerNormBackward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorND &dy = in[0], &src = in[1], &mean = in[2], &rstd = in[3];
        bool affine = m_param.affine;
        auto dyo = offsets_of(dy.layout), so = offsets_of(src.layout);
        auto mo = offsets_of(mean.layout), ro = offsets_of(rstd.layout);
        auto go = offsets_of(out[0].layout);
        size_t len = row_size(src.layout, m_param.normalized_dim);
        std::vector<ptrdiff_t> wo;
        if (affine)
            wo = offsets_of(in[4].layout);
        std::vector<double> dw(len, 0.0), db(len, 0.0), g(len), xhat(len);
        for (size_t r = 0; r < mo.size(); ++r) {
            double mu = load(mean, mo[r]), rs = load(rstd, ro[r]);
            // With g = dy * weight: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
            double g_mean = 0, gx_mean = 0;
            for (size_t k = 0; k < len; ++k) {
                size_t i = r * len + k;
                double dyk = load(dy, dyo[i]);
                xhat[k] = (load(src, so[i]) - mu) * rs;
                g[k] = affine ? dyk * load(in[4], wo[k]) : dyk;
                g_mean += g[k];
                gx_mean += g[k] * xhat[k];
                dw[k] += dyk * xhat[k];
                db[k] += dyk;
            }
            if (len) {
                g_mean /= double(len);
                gx_mean /= double(len);
            }
            for (size_t k = 0; k < len; ++k)
                store(out[0], go[r * len + k], rs * (g[k] - g_mean - xhat[k] * gx_mean));
        }
        if (affine) {
            auto dwo = offsets_of(out[1].layout), dbo = offsets_of(out[2].layout);
            for (size_t k = 0; k < len; ++k) {
                store(out[1], dwo[k], dw[k]);
                store(out[2], dbo[k], db[k]);
            }
        }
    }
};

}  // namespace
NM_REGISTER_NAIVE(LayerNormForward, LayerNormForwardImpl);
NM_REGISTER_NAIVE(LayerNormBackward, LayerNormBackwardImpl);
}  // namespace neomeg::dnn::naive
