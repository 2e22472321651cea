// DeformableConvForward and its gradients, in double on dense copies. Each (n, ic, tap, oh, ow)
// has one sample point; the forward is an ordinary grouped contraction of the masked samples
// ("columns") with the filter, and the gradients go back through the columns to the samples'
// values (src), positions (offset) and weights (mask).
#include <cmath>

#include "neomeg/dnn/operators/convolution.h"
#include "src/common/deformable_conv.h"
#include "src/naive/dense.h"
#include "src/naive/handle.h"

namespace neomeg::dnn::naive {
namespace {

using Sample = DeformSample;

// The geometry in plain integers and the position of sample (n, ic, tap, oh, ow).
struct Walk {
    long N, IC, IH, IW, OC, OH, OW, FH, FW, K, icg, ocg, icdg, dg;
    long sh, sw, ph, pw, dh, dw;

    explicit Walk(const DeformableGeometry& g)
        : N(long(g.conv.n)),
          IC(long(g.conv.ic)),
          IH(long(g.ih())),
          IW(long(g.iw())),
          OC(long(g.conv.oc)),
          OH(long(g.oh())),
          OW(long(g.ow())),
          FH(long(g.fh())),
          FW(long(g.fw())),
          K(FH * FW),
          icg(long(g.conv.icg)),
          ocg(long(g.conv.ocg)),
          icdg(IC / long(g.dg)),
          dg(long(g.dg)),
          sh(g.conv.stride[1]),
          sw(g.conv.stride[2]),
          ph(g.conv.pad[1]),
          pw(g.conv.pad[2]),
          dh(g.conv.dil[1]),
          dw(g.conv.dil[2]) {}

    // Index into the dense (N, IC, K, OH, OW) columns.
    size_t col(long n, long ic, long k, long oh, long ow) const {
        return size_t((((n * IC + ic) * K + k) * OH + oh) * OW + ow);
    }
    // Indices of the h and w offsets and of the mask of (n, ic, k, oh, ow).
    size_t off_h(long n, long ic, long k, long oh, long ow) const {
        return size_t(((n * 2 * dg * K + 2 * ((ic / icdg) * K + k)) * OH + oh) * OW + ow);
    }
    size_t off_w(long n, long ic, long k, long oh, long ow) const {
        return off_h(n, ic, k, oh, ow) + size_t(OH * OW);
    }
    size_t mask(long n, long ic, long k, long oh, long ow) const {
        return size_t(((n * dg * K + (ic / icdg) * K + k) * OH + oh) * OW + ow);
    }
    size_t filter(long oc, long ic, long k) const { return size_t((oc * icg + ic % icg) * K + k); }
    size_t dst(long n, long oc, long oh, long ow) const {
        return size_t(((n * OC + oc) * OH + oh) * OW + ow);
    }

    // Calls f(n, ic, k, oh, ow, sample, plane) for every sample point; plane is src[n, ic]'s
    // first element index.
    template <class F>
    void each_sample(const std::vector<double>& offset, F&& f) const {
        for (long n = 0; n < N; ++n)
            for (long ic = 0; ic < IC; ++ic)
                for (long k = 0; k < K; ++k)
                    for (long oh = 0; oh < OH; ++oh)
                        for (long ow = 0; ow < OW; ++ow) {
                            double h = double(oh * sh - ph + (k / FW) * dh) +
                                       offset[off_h(n, ic, k, oh, ow)];
                            double w = double(ow * sw - pw + (k % FW) * dw) +
                                       offset[off_w(n, ic, k, oh, ow)];
                            f(n, ic, k, oh, ow, deform_locate(h, w, IH, IW),
                              size_t((n * IC + ic) * IH * IW));
                        }
    }

    // The tap at (h0 + i, w0 + j) of plane, 0 outside.
    double tap(const std::vector<double>& src, size_t plane, const Sample& s, int i, int j) const {
        long r = s.h0 + i, c = s.w0 + j;
        return r >= 0 && r < IH && c >= 0 && c < IW ? src[plane + size_t(r * IW + c)] : 0.0;
    }
    double value(const std::vector<double>& src, size_t plane, const Sample& s) const {
        if (!s.inside)
            return 0;
        return (1 - s.lh) *
                       ((1 - s.lw) * tap(src, plane, s, 0, 0) + s.lw * tap(src, plane, s, 0, 1)) +
               s.lh * ((1 - s.lw) * tap(src, plane, s, 1, 0) + s.lw * tap(src, plane, s, 1, 1));
    }

    // The masked samples, (N, IC, K, OH, OW).
    std::vector<double> columns(const std::vector<double>& src, const std::vector<double>& offset,
                                const std::vector<double>& mask_v) const {
        std::vector<double> cols(size_t(N * IC * K * OH * OW));
        each_sample(offset, [&](long n, long ic, long k, long oh, long ow, const Sample& s,
                                size_t plane) {
            cols[col(n, ic, k, oh, ow)] = mask_v[mask(n, ic, k, oh, ow)] * value(src, plane, s);
        });
        return cols;
    }
};

class DeformableConvForwardImpl final : public DeformableConvForward {
public:
    using DeformableConvForward::DeformableConvForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        Walk g(deformable_conv_geometry(*this, m_param, in[0].layout, in[1].layout, in[2].layout,
                                        in[3].layout));
        auto cols = g.columns(load_dense(in[0]), load_dense(in[2]), load_dense(in[3]));
        auto filter = load_dense(in[1]);
        std::vector<double> dst(size_t(g.N * g.OC * g.OH * g.OW));
        for (long n = 0; n < g.N; ++n)
            for (long oc = 0; oc < g.OC; ++oc) {
                long ic0 = oc / g.ocg * g.icg;
                for (long ic = ic0; ic < ic0 + g.icg; ++ic)
                    for (long k = 0; k < g.K; ++k) {
                        double f = filter[g.filter(oc, ic, k)];
                        for (long oh = 0; oh < g.OH; ++oh)
                            for (long ow = 0; ow < g.OW; ++ow)
                                dst[g.dst(n, oc, oh, ow)] += f * cols[g.col(n, ic, k, oh, ow)];
                    }
            }
        store_dense(out[0], dst);
    }
};

class DeformableConvBackwardFilterImpl final : public DeformableConvBackwardFilter {
public:
    using DeformableConvBackwardFilter::DeformableConvBackwardFilter;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        Walk g(deformable_conv_geometry(*this, m_param, in[0].layout, out[0].layout, in[1].layout,
                                        in[2].layout));
        auto cols = g.columns(load_dense(in[0]), load_dense(in[1]), load_dense(in[2]));
        auto diff = load_dense(in[3]);
        std::vector<double> grad(size_t(g.OC * g.icg * g.K));
        for (long n = 0; n < g.N; ++n)
            for (long oc = 0; oc < g.OC; ++oc) {
                long ic0 = oc / g.ocg * g.icg;
                for (long ic = ic0; ic < ic0 + g.icg; ++ic)
                    for (long k = 0; k < g.K; ++k) {
                        double acc = 0;
                        for (long oh = 0; oh < g.OH; ++oh)
                            for (long ow = 0; ow < g.OW; ++ow)
                                acc += diff[g.dst(n, oc, oh, ow)] * cols[g.col(n, ic, k, oh, ow)];
                        grad[g.filter(oc, ic, k)] += acc;
                    }
            }
        store_dense(out[0], grad);
    }
};

class DeformableConvBackwardDataImpl final : public DeformableConvBackwardData {
public:
    using DeformableConvBackwardData::DeformableConvBackwardData;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        Walk g(deformable_conv_geometry(*this, m_param, in[0].layout, in[1].layout, in[2].layout,
                                        in[3].layout));
        auto src = load_dense(in[0]), filter = load_dense(in[1]), offset = load_dense(in[2]),
             mask = load_dense(in[3]), diff = load_dense(in[4]);
        // d loss / d column: the filter's adjoint applied to diff.
        std::vector<double> col_grad(size_t(g.N * g.IC * g.K * g.OH * g.OW));
        for (long n = 0; n < g.N; ++n)
            for (long ic = 0; ic < g.IC; ++ic) {
                long oc0 = ic / g.icg * g.ocg;
                for (long oc = oc0; oc < oc0 + g.ocg; ++oc)
                    for (long k = 0; k < g.K; ++k) {
                        double f = filter[g.filter(oc, ic, k)];
                        for (long oh = 0; oh < g.OH; ++oh)
                            for (long ow = 0; ow < g.OW; ++ow)
                                col_grad[g.col(n, ic, k, oh, ow)] += f * diff[g.dst(n, oc, oh, ow)];
                    }
            }
        std::vector<double> src_grad(src.size()), offset_grad(offset.size()),
                mask_grad(mask.size());
        g.each_sample(offset, [&](long n, long ic, long k, long oh, long ow, const Sample& s,
                                  size_t plane) {
            if (!s.inside)
                return;
            double cg = col_grad[g.col(n, ic, k, oh, ow)];
            double m = mask[g.mask(n, ic, k, oh, ow)];
            mask_grad[g.mask(n, ic, k, oh, ow)] += cg * g.value(src, plane, s);
            double v00 = g.tap(src, plane, s, 0, 0), v01 = g.tap(src, plane, s, 0, 1),
                   v10 = g.tap(src, plane, s, 1, 0), v11 = g.tap(src, plane, s, 1, 1);
            offset_grad[g.off_h(n, ic, k, oh, ow)] +=
                    cg * m * ((1 - s.lw) * (v10 - v00) + s.lw * (v11 - v01));
            offset_grad[g.off_w(n, ic, k, oh, ow)] +=
                    cg * m * ((1 - s.lh) * (v01 - v00) + s.lh * (v11 - v10));
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) {
                    long r = s.h0 + i, c = s.w0 + j;
                    if (r >= 0 && r < g.IH && c >= 0 && c < g.IW)
                        src_grad[plane + size_t(r * g.IW + c)] +=
                                cg * m * (i ? s.lh : 1 - s.lh) * (j ? s.lw : 1 - s.lw);
                }
        });
        store_dense(out[0], src_grad);
        store_dense(out[1], offset_grad);
        store_dense(out[2], mask_grad);
    }
};

}  // namespace
NM_REGISTER_NAIVE(DeformableConvForward, DeformableConvForwardImpl);
NM_REGISTER_NAIVE(DeformableConvBackwardData, DeformableConvBackwardDataImpl);
NM_REGISTER_NAIVE(DeformableConvBackwardFilter, DeformableConvBackwardFilterImpl);
}  // namespace neomeg::dnn::naive
