// DeformablePSROIPooling and its gradient: the sample points in float32 as MegDNN places them
// (src/common/psroi_geometry.h), the bilinear values, sums and gradients in double.
#include <cmath>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/psroi_geometry.h"
#include "src/common/roi.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

using Param = param::DeformablePSROIPooling;

double at(const TensorND& t, size_t i0, size_t i1, size_t i2, size_t i3) {
    size_t idx[4] = {i0, i1, i2, i3};
    return load_scalar(t, offset_of(t.layout, idx)).f;
}

// One roi: its image, its geometry and, per bin, the offsets of its part (x then y), already
// times trans_std.
struct RoiBins {
    size_t image = 0;
    psroi::Roi r;
    std::vector<float> off_x, off_y;  // (pooled_h, pooled_w), row-major
};

std::vector<RoiBins> rois_of(const Param& p, const TensorND& rois, const TensorND& trans,
                             size_t batch, const std::string& who) {
    std::vector<RoiBins> out(rois.layout.shape[0]);
    for (size_t k = 0; k < out.size(); ++k) {
        float v[5];
        for (size_t j = 0; j < 5; ++j) {
            size_t idx[2] = {k, j};
            v[j] = static_cast<float>(load_scalar(rois, offset_of(rois.layout, idx)).f);
        }
        int64_t b = roi::batch_index(v[0], batch);
        NM_THROW_IF(b < 0, IndexError, roi::bad_batch_message(who, k, v[0], batch));
        RoiBins& rb = out[k];
        rb.image = static_cast<size_t>(b);
        rb.r = psroi::roi_of(p, v[1], v[2], v[3], v[4]);
        rb.off_x.assign(static_cast<size_t>(p.pooled_h) * p.pooled_w, 0.f);
        rb.off_y = rb.off_x;
        if (p.no_trans)
            continue;
        for (size_t ph = 0; ph < p.pooled_h; ++ph)
            for (size_t pw = 0; pw < p.pooled_w; ++pw) {
                auto i = static_cast<size_t>(psroi::part_of(ph, p.pooled_h, p.part_size));
                auto j = static_cast<size_t>(psroi::part_of(pw, p.pooled_w, p.part_size));
                rb.off_x[ph * p.pooled_w + pw] =
                        static_cast<float>(at(trans, k, 0, i, j)) * p.trans_std;
                rb.off_y[ph * p.pooled_w + pw] =
                        static_cast<float>(at(trans, k, 1, i, j)) * p.trans_std;
            }
    }
    return out;
}

// Calls f(y, x) with the clamped coordinates of every sample bin (ph, pw) of roi rb takes.
template <class F>
void for_each_sample(const Param& p, const RoiBins& rb, size_t ph, size_t pw, int64_t h, int64_t w,
                     F&& f) {
    const psroi::Roi& r = rb.r;
    size_t bin = ph * p.pooled_w + pw;
    float ys = psroi::bin_start(r.y0, ph, r.bin_h, rb.off_y[bin], r.roi_h);
    float xs = psroi::bin_start(r.x0, pw, r.bin_w, rb.off_x[bin], r.roi_w);
    for (uint32_t iy = 0; iy < p.sample_per_part; ++iy)
        for (uint32_t ix = 0; ix < p.sample_per_part; ++ix) {
            float y, x;
            if (psroi::take(xs + static_cast<float>(ix) * r.sub_w, w, x) &&
                psroi::take(ys + static_cast<float>(iy) * r.sub_h, h, y))
                f(y, x);
        }
}

class DeformablePSROIPoolingImpl final : public DeformablePSROIPooling {
public:
    using DeformablePSROIPooling::DeformablePSROIPooling;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0], &count = outputs[1];
        auto rois = rois_of(m_param, inputs[1], inputs[2], src.layout[0], param_str());
        auto h = static_cast<int64_t>(src.layout[2]), w = static_cast<int64_t>(src.layout[3]);
        for_each_index(dst.layout, [&](const auto& idx) {
            const RoiBins& rb = rois[idx[0]];
            double sum = 0;
            int64_t n = 0;
            for_each_sample(m_param, rb, idx[2], idx[3], h, w, [&](float y, float x) {
                psroi::Taps ty = psroi::taps_of(y), tx = psroi::taps_of(x);
                double ay = ty.a, ax = tx.a;
                auto v = [&](int64_t yy, int64_t xx) {
                    return at(src, rb.image, idx[1], static_cast<size_t>(yy),
                              static_cast<size_t>(xx));
                };
                sum += (1 - ay) * (1 - ax) * v(ty.lo, tx.lo) + ay * (1 - ax) * v(ty.hi, tx.lo) +
                       (1 - ay) * ax * v(ty.lo, tx.hi) + ay * ax * v(ty.hi, tx.hi);
                ++n;
            });
            store_scalar(dst, offset_of(dst.layout, idx.data()),
                         Scalar::of_float(n ? sum / static_cast<double>(n) : 0.0));
            store_scalar(count, offset_of(count.layout, idx.data()),
                         Scalar::of_float(static_cast<double>(n)));
        });
    }
};

// Each bin's diff / count spreads over its samples' taps (src) and, unless no_trans, adds each
// sample's slope along x and y, times trans_std and the roi's size, to its part's offsets.
class DeformablePSROIPoolingBackwardImpl final : public DeformablePSROIPoolingBackward {
public:
    using DeformablePSROIPoolingBackward::DeformablePSROIPoolingBackward;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &trans = inputs[2], &diff = inputs[3], &count = inputs[4];
        const TensorND &gsrc = outputs[0], &gtrans = outputs[1];
        auto rois = rois_of(m_param, inputs[1], trans, src.layout[0], param_str());
        auto h = static_cast<int64_t>(src.layout[2]), w = static_cast<int64_t>(src.layout[3]);
        TensorLayout src_dense(src.layout, src.layout.dtype),
                trans_dense(trans.layout, trans.layout.dtype);
        std::vector<double> gs(src.layout.total_nr_elems(), 0.0);
        std::vector<double> gt(trans.layout.total_nr_elems(), 0.0);
        for_each_index(diff.layout, [&](const auto& idx) {
            double cnt = load_scalar(count, offset_of(count.layout, idx.data())).f;
            if (!(cnt > 0))
                return;
            double g = load_scalar(diff, offset_of(diff.layout, idx.data())).f / cnt;
            const RoiBins& rb = rois[idx[0]];
            size_t c = idx[1];
            for_each_sample(m_param, rb, idx[2], idx[3], h, w, [&](float y, float x) {
                psroi::Taps ty = psroi::taps_of(y), tx = psroi::taps_of(x);
                double ay = ty.a, ax = tx.a;
                auto off = [&](int64_t yy, int64_t xx) {
                    size_t i[4] = {rb.image, c, static_cast<size_t>(yy), static_cast<size_t>(xx)};
                    return offset_of(src_dense, i);
                };
                gs[off(ty.lo, tx.lo)] += (1 - ay) * (1 - ax) * g;
                gs[off(ty.hi, tx.lo)] += ay * (1 - ax) * g;
                gs[off(ty.lo, tx.hi)] += (1 - ay) * ax * g;
                gs[off(ty.hi, tx.hi)] += ay * ax * g;
                if (m_param.no_trans)
                    return;
                auto v = [&](int64_t yy, int64_t xx) {
                    return at(src, rb.image, c, static_cast<size_t>(yy), static_cast<size_t>(xx));
                };
                double u00 = v(ty.lo, tx.lo), u01 = v(ty.hi, tx.lo), u10 = v(ty.lo, tx.hi),
                       u11 = v(ty.hi, tx.hi);
                double sx = (1 - ay) * (u10 - u00) + ay * (u11 - u01);
                double sy = (1 - ax) * (u01 - u00) + ax * (u11 - u10);
                auto pi = static_cast<size_t>(
                        psroi::part_of(idx[2], m_param.pooled_h, m_param.part_size));
                auto pj = static_cast<size_t>(
                        psroi::part_of(idx[3], m_param.pooled_w, m_param.part_size));
                size_t ix[4] = {idx[0], 0, pi, pj}, iy[4] = {idx[0], 1, pi, pj};
                gt[offset_of(trans_dense, ix)] += sx * m_param.trans_std * g * rb.r.roi_w;
                gt[offset_of(trans_dense, iy)] += sy * m_param.trans_std * g * rb.r.roi_h;
            });
        });
        for_each_index(gsrc.layout, [&](const auto& idx) {
            store_scalar(gsrc, offset_of(gsrc.layout, idx.data()),
                         Scalar::of_float(gs[offset_of(src_dense, idx.data())]));
        });
        for_each_index(gtrans.layout, [&](const auto& idx) {
            store_scalar(gtrans, offset_of(gtrans.layout, idx.data()),
                         Scalar::of_float(gt[offset_of(trans_dense, idx.data())]));
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(DeformablePSROIPooling, DeformablePSROIPoolingImpl);
NM_REGISTER_NAIVE(DeformablePSROIPoolingBackward, DeformablePSROIPoolingBackwardImpl);
}  // namespace neomeg::dnn::naive
