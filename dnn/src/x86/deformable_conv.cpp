// DeformableConvForward and its gradients on x86, as MegEngine's and torchvision's CPU kernels
// compute them: per image, the masked bilinear samples of every (input channel, tap) at every
// output position ("columns") built across OpenMP threads and contracted with the filter by GEMM
// (columns_conv.h, shared with the region-restricted convolution); the data gradient scatters
// the column gradient back to src, offset and mask. Samples follow naive's rule
// (src/common/deformable_conv.h) and are computed in double, rounded once into the columns; naive
// sums the products in double, the GEMM in float32, so results differ from naive's by the
// float32 sum's rounding (tests: dnn/test/x86/deformable_conv.cpp). float32 only; other dtypes
// run naive.
#include <algorithm>
#include <vector>

#include "neomeg/dnn/operators/convolution.h"
#include "src/common/deformable_conv.h"
#include "src/x86/columns_conv.h"
#include "src/x86/from_double.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

using namespace dense_gemm;

// The geometry in plain integers, with the deformable groups.
struct Geo : columns_conv::Geo {
    long icdg, dg;
    explicit Geo(const DeformableGeometry& g)
        : columns_conv::Geo(g.conv), icdg(IC / long(g.dg)), dg(long(g.dg)) {}
};

// The sample point of (n, ic, k, oh, ow) and its value (0 outside), in double as naive.
struct Sampler {
    const Geo& g;
    const float* src;  // dense (N, IC, IH, IW)
    const float* off;  // dense (N, 2 * dg * K, OH, OW)

    size_t off_h(long n, long ic, long k, long oh, long ow) const {
        return size_t(((n * 2 * g.dg * g.K + 2 * ((ic / g.icdg) * g.K + k)) * g.OH + oh) * g.OW +
                      ow);
    }
    size_t mask_at(long n, long ic, long k, long oh, long ow) const {
        return size_t(((n * g.dg * g.K + (ic / g.icdg) * g.K + k) * g.OH + oh) * g.OW + ow);
    }
    DeformSample at(long n, long ic, long k, long oh, long ow) const {
        size_t o = off_h(n, ic, k, oh, ow);
        double h = double(oh * g.sh - g.ph + (k / g.FW) * g.dh) + off[o];
        double w = double(ow * g.sw - g.pw + (k % g.FW) * g.dw) + off[o + size_t(g.P())];
        return deform_locate(h, w, g.IH, g.IW);
    }
    double tap(const float* plane, const DeformSample& s, int i, int j) const {
        long r = s.h0 + i, c = s.w0 + j;
        return r >= 0 && r < g.IH && c >= 0 && c < g.IW ? plane[r * g.IW + c] : 0.0;
    }
    double value(const float* plane, const DeformSample& s) const {
        if (!s.inside)
            return 0;
        return (1 - s.lh) * ((1 - s.lw) * tap(plane, s, 0, 0) + s.lw * tap(plane, s, 0, 1)) +
               s.lh * ((1 - s.lw) * tap(plane, s, 1, 0) + s.lw * tap(plane, s, 1, 1));
    }
    const float* plane(long n, long ic) const { return src + (n * g.IC + ic) * g.IH * g.IW; }
};

// Image n's masked samples, (IC * K) x (OH * OW), across threads by rows.
void columns(const Geo& g, const Sampler& s, const float* mask, long n, float* cols) {
    const long P = g.P();
    parallel_ranges(
            g.col_rows(), g.col_rows() * size_t(P) * 16, kParallelGrain, [&](size_t b, size_t e) {
                for (size_t row = b; row < e; ++row) {
                    long ic = long(row) / g.K, k = long(row) % g.K;
                    const float* plane = s.plane(n, ic);
                    float* out = cols + row * size_t(P);
                    // The row's offset and mask planes and tap position, once per row (the
                    // same values Sampler::at forms per sample).
                    const float* oh_plane = s.off + s.off_h(n, ic, k, 0, 0);
                    const float* ow_plane = oh_plane + P;
                    const float* m_plane = mask + s.mask_at(n, ic, k, 0, 0);
                    const long kh = (k / g.FW) * g.dh - g.ph, kw = (k % g.FW) * g.dw - g.pw;
                    for (long oh = 0; oh < g.OH; ++oh)
                        for (long ow = 0; ow < g.OW; ++ow) {
                            long p = oh * g.OW + ow;
                            double h = double(oh * g.sh + kh) + oh_plane[p];
                            double w = double(ow * g.sw + kw) + ow_plane[p];
                            DeformSample smp = deform_locate(h, w, g.IH, g.IW);
                            out[p] = static_cast<float>(double(m_plane[p]) * s.value(plane, smp));
                        }
                }
            });
}

template <class Op>
class DeformKernel : public columns_conv::Kernel<Op> {
public:
    using columns_conv::Kernel<Op>::Kernel;

protected:
    bool takes(std::span<const TensorND> in, std::span<const TensorND> out) const override {
        return float32_call(in, out);
    }
};

// The forward (in: src, filter, offset, mask) and the filter gradient (in: src, offset, mask,
// diff): the columns of src contracted with the filter or the diff.
template <class Op, bool kFilterGrad>
class ContractImpl final : public DeformKernel<Op> {
public:
    using DeformKernel<Op>::DeformKernel;

protected:
    static constexpr size_t kOffset = kFilterGrad ? 1 : 2, kMask = kOffset + 1,
                            kOperand = kFilterGrad ? 3 : 1;

    void run(std::span<const TensorND> in, std::span<const TensorND> out) override {
        const TensorLayout& filter = kFilterGrad ? out[0].layout : in[1].layout;
        Geo g(deformable_conv_geometry(*this, this->m_param, in[0].layout, filter,
                                       in[kOffset].layout, in[kMask].layout));
        if (out[0].layout.is_empty())
            return;
        std::vector<float> bs, bo, bm, bx, bd;
        Sampler s{g, dense(in[0], bs), dense(in[kOffset], bo)};
        const float* mask = dense(in[kMask], bm);
        float* o = dense_out(out[0], bd);
        columns_conv::contract(kFilterGrad, g, dense(in[kOperand], bx), o,
                               [&](long n, float* cols) { columns(g, s, mask, n, cols); });
        store(out[0], o);
    }
};

using DeformableConvForwardImpl = ContractImpl<DeformableConvForward, false>;
using DeformableConvBackwardFilterImpl = ContractImpl<DeformableConvBackwardFilter, true>;

class DeformableConvBackwardDataImpl final : public DeformKernel<DeformableConvBackwardData> {
public:
    using DeformKernel::DeformKernel;

protected:
    // in: src, filter, offset, mask, diff; out: src, offset and mask gradients.
    void run(std::span<const TensorND> in, std::span<const TensorND> out) override {
        Geo g(deformable_conv_geometry(*this, m_param, in[0].layout, in[1].layout, in[2].layout,
                                       in[3].layout));
        std::vector<float> bs, bf, bo, bm, bd, b0, b1, b2;
        Sampler s{g, dense(in[0], bs), dense(in[2], bo)};
        const float* filter = dense(in[1], bf);
        const float* mask = dense(in[3], bm);
        const float* diff = dense(in[4], bd);
        float* src_grad = dense_out(out[0], b0);
        float* off_grad = dense_out(out[1], b1);
        float* mask_grad = dense_out(out[2], b2);
        const long P = g.P(), plane_n = g.IH * g.IW;
        columns_conv::backward_data(g, filter, diff, [&](long n, const float* col_grad) {
            // src's gradient: each input plane sums its samples' shares in double (planes
            // across threads).
            parallel_ranges(
                    size_t(g.IC), size_t(g.IC * g.K * P) * 24, kParallelGrain,
                    [&](size_t b, size_t e) {
                        std::vector<double> acc(static_cast<size_t>(plane_n));
                        for (long ic = long(b); ic < long(e); ++ic) {
                            std::fill(acc.begin(), acc.end(), 0.0);
                            for (long k = 0; k < g.K; ++k) {
                                const float* cg = col_grad + (ic * g.K + k) * P;
                                for (long oh = 0; oh < g.OH; ++oh)
                                    for (long ow = 0; ow < g.OW; ++ow) {
                                        DeformSample smp = s.at(n, ic, k, oh, ow);
                                        if (!smp.inside)
                                            continue;
                                        double cm = double(cg[oh * g.OW + ow]) *
                                                    mask[s.mask_at(n, ic, k, oh, ow)];
                                        for (int i = 0; i < 2; ++i)
                                            for (int j = 0; j < 2; ++j) {
                                                long r = smp.h0 + i, c = smp.w0 + j;
                                                if (r >= 0 && r < g.IH && c >= 0 && c < g.IW)
                                                    acc[size_t(r * g.IW + c)] +=
                                                            cm * (i ? smp.lh : 1 - smp.lh) *
                                                            (j ? smp.lw : 1 - smp.lw);
                                            }
                                    }
                            }
                            float* o = src_grad + (n * g.IC + ic) * plane_n;
                            for (long i = 0; i < plane_n; ++i)
                                o[i] = from_double<float>(acc[size_t(i)]);
                        }
                    });
            // offset's and mask's gradients: each (deformable group, tap, output row) sums its
            // group's channels in double (rows across threads).
            size_t rows = size_t(g.dg * g.K * g.OH);
            parallel_ranges(
                    rows, rows * size_t(g.OW * g.icdg) * 24, kParallelGrain,
                    [&](size_t b, size_t e) {
                        for (size_t u = b; u < e; ++u) {
                            long d = long(u) / (g.K * g.OH), k = long(u) / g.OH % g.K,
                                 oh = long(u) % g.OH;
                            for (long ow = 0; ow < g.OW; ++ow) {
                                double gm = 0, gh = 0, gw = 0;
                                size_t mi = 0, oi = 0;
                                for (long ic = d * g.icdg; ic < (d + 1) * g.icdg; ++ic) {
                                    mi = s.mask_at(n, ic, k, oh, ow);
                                    oi = s.off_h(n, ic, k, oh, ow);
                                    DeformSample smp = s.at(n, ic, k, oh, ow);
                                    if (!smp.inside)
                                        continue;
                                    const float* plane = s.plane(n, ic);
                                    double cg =
                                            col_grad[size_t((ic * g.K + k) * P + oh * g.OW + ow)];
                                    double m = mask[mi];
                                    gm += cg * s.value(plane, smp);
                                    double v00 = s.tap(plane, smp, 0, 0),
                                           v01 = s.tap(plane, smp, 0, 1),
                                           v10 = s.tap(plane, smp, 1, 0),
                                           v11 = s.tap(plane, smp, 1, 1);
                                    gh += cg * m *
                                          ((1 - smp.lw) * (v10 - v00) + smp.lw * (v11 - v01));
                                    gw += cg * m *
                                          ((1 - smp.lh) * (v01 - v00) + smp.lh * (v11 - v10));
                                }
                                if (g.icdg == 0)
                                    continue;
                                mask_grad[mi] = from_double<float>(gm);
                                off_grad[oi] = from_double<float>(gh);
                                off_grad[oi + size_t(P)] = from_double<float>(gw);
                            }
                        }
                    });
        });
        store(out[0], src_grad);
        store(out[1], off_grad);
        store(out[2], mask_grad);
    }
};

}  // namespace
NM_REGISTER_X86(DeformableConvForward, DeformableConvForwardImpl);
NM_REGISTER_X86(DeformableConvBackwardData, DeformableConvBackwardDataImpl);
NM_REGISTER_X86(DeformableConvBackwardFilter, DeformableConvBackwardFilterImpl);
}  // namespace neomeg::dnn::x86
