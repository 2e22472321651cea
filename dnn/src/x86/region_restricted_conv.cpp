// RegionRestrictedConvolutionForward and its gradients on x86, as a convolution by columns
// (columns_conv.h, shared with the deformable convolution): per image, the taps whose input
// position lies in src and whose input region id equals the output pixel's ("columns", zero
// elsewhere) built across OpenMP threads and contracted with the filter by GEMM; the data
// gradient adds the column gradient back onto the matching taps of src (each input plane in
// double, planes across threads). Naive sums the products in double, the GEMM in float32, so
// results differ from naive's by the float32 sum's rounding (tests:
// dnn/test/x86/region_restricted_conv.cpp). float32 data with int32 or uint8 region ids; other
// dtypes run naive.
#include <algorithm>
#include <vector>

#include "neomeg/dnn/operators/convolution.h"
#include "src/common/region_restricted_conv.h"
#include "src/x86/columns_conv.h"
#include "src/x86/from_double.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

using namespace dense_gemm;

using columns_conv::Geo;

// Region ids (int32 or uint8, any strides) as dense int32.
std::vector<int32_t> ids_of(const TensorND& t) {
    const TensorLayout& l = t.layout;
    std::vector<int32_t> v(l.total_nr_elems());
    const auto* base = static_cast<const std::byte*>(t.raw_ptr());
    bool u8 = l.dtype == dtype::Uint8;
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    for (size_t i = 0; i < v.size(); ++i) {
        ptrdiff_t off = 0;
        for (size_t d = 0; d < l.ndim; ++d)
            off += static_cast<ptrdiff_t>(idx[d]) * l.stride[d];
        v[i] = u8 ? static_cast<int32_t>(reinterpret_cast<const uint8_t*>(base)[off])
                  : reinterpret_cast<const int32_t*>(base)[off];
        for (size_t d = l.ndim; d-- > 0;)
            if (++idx[d] < l[d])
                break;
            else
                idx[d] = 0;
    }
    return v;
}

// Where tap k of output (oh, ow) reads in image n, or -1 (outside src, or another region).
struct Taps {
    const Geo& g;
    const std::vector<int32_t>& rin;
    const std::vector<int32_t>& rout;
    long at(long n, long k, long oh, long ow) const {
        long ih = oh * g.sh - g.ph + (k / g.FW) * g.dh, iw = ow * g.sw - g.pw + (k % g.FW) * g.dw;
        if (ih < 0 || ih >= g.IH || iw < 0 || iw >= g.IW ||
            rin[size_t((n * g.IH + ih) * g.IW + iw)] != rout[size_t((n * g.OH + oh) * g.OW + ow)])
            return -1;
        return ih * g.IW + iw;
    }
};

// Image n's columns, (IC * K) x (OH * OW), across threads by rows.
void columns(const Geo& g, const Taps& t, const float* src, long n, float* cols) {
    const long P = g.P();
    parallel_ranges(g.col_rows(), g.col_rows() * size_t(P) * 4, kParallelGrain,
                    [&](size_t b, size_t e) {
                        for (size_t row = b; row < e; ++row) {
                            long ic = long(row) / g.K, k = long(row) % g.K;
                            const float* plane = src + (n * g.IC + ic) * g.IH * g.IW;
                            float* out = cols + row * size_t(P);
                            for (long oh = 0; oh < g.OH; ++oh)
                                for (long ow = 0; ow < g.OW; ++ow) {
                                    long a = t.at(n, k, oh, ow);
                                    out[oh * g.OW + ow] = a < 0 ? 0.f : plane[a];
                                }
                        }
                    });
}

// float32 data; the region ids' dtypes are the operator's rule.
template <class Op>
class RegionKernel : public columns_conv::Kernel<Op> {
public:
    using columns_conv::Kernel<Op>::Kernel;

protected:
    bool takes(std::span<const TensorND> in, std::span<const TensorND> out) const override {
        return in[0].layout.dtype == dtype::Float32 && in[1].layout.dtype == dtype::Float32 &&
               out[0].layout.dtype == dtype::Float32;
    }
};

// The forward (in: src, filter, rin, rout) and the filter gradient (in: src, diff, rin, rout):
// the columns of src contracted with in[1].
template <class Op, bool kFilterGrad>
class ContractImpl final : public RegionKernel<Op> {
public:
    using RegionKernel<Op>::RegionKernel;

protected:
    void run(std::span<const TensorND> in, std::span<const TensorND> out) override {
        const TensorLayout& filter = kFilterGrad ? out[0].layout : in[1].layout;
        Geo g(region_restricted_geometry(*this, this->m_param, in[0].layout, filter, in[2].layout,
                                         in[3].layout));
        if (out[0].layout.is_empty())
            return;
        auto rin = ids_of(in[2]), rout = ids_of(in[3]);
        Taps t{g, rin, rout};
        std::vector<float> bs, bo, bd;
        const float* src = dense(in[0], bs);
        float* o = dense_out(out[0], bd);
        columns_conv::contract(kFilterGrad, g, dense(in[1], bo), o,
                               [&](long n, float* cols) { columns(g, t, src, n, cols); });
        store(out[0], o);
    }
};

using ForwardImpl = ContractImpl<RegionRestrictedConvolutionForward, false>;
using BackwardFilterImpl = ContractImpl<RegionRestrictedConvolutionBackwardFilter, true>;

class BackwardDataImpl final : public RegionKernel<RegionRestrictedConvolutionBackwardData> {
public:
    using RegionKernel::RegionKernel;

protected:
    // in: filter, diff, rin, rout; out: src's gradient.
    void run(std::span<const TensorND> in, std::span<const TensorND> out) override {
        Geo g(region_restricted_geometry(*this, m_param, out[0].layout, in[0].layout, in[2].layout,
                                         in[3].layout));
        if (out[0].layout.is_empty())
            return;
        auto rin = ids_of(in[2]), rout = ids_of(in[3]);
        Taps t{g, rin, rout};
        std::vector<float> bf, bd, bg;
        const float* filter = dense(in[0], bf);
        const float* diff = dense(in[1], bd);
        float* grad = dense_out(out[0], bg);
        const long P = g.P(), plane_n = g.IH * g.IW;
        // Each input plane adds its taps' column gradients in double (planes across threads).
        columns_conv::backward_data(g, filter, diff, [&](long n, const float* col_grad) {
            parallel_ranges(size_t(g.IC), size_t(g.IC * g.K * P) * 4, kParallelGrain,
                            [&](size_t b, size_t e) {
                                std::vector<double> acc(static_cast<size_t>(plane_n));
                                for (long ic = long(b); ic < long(e); ++ic) {
                                    std::fill(acc.begin(), acc.end(), 0.0);
                                    for (long k = 0; k < g.K; ++k) {
                                        const float* cg = col_grad + (ic * g.K + k) * P;
                                        for (long oh = 0; oh < g.OH; ++oh)
                                            for (long ow = 0; ow < g.OW; ++ow) {
                                                long a = t.at(n, k, oh, ow);
                                                if (a >= 0)
                                                    acc[size_t(a)] += cg[oh * g.OW + ow];
                                            }
                                    }
                                    float* o = grad + (n * g.IC + ic) * plane_n;
                                    for (long i = 0; i < plane_n; ++i)
                                        o[i] = from_double<float>(acc[size_t(i)]);
                                }
                            });
        });
        store(out[0], grad);
    }
};

}  // namespace
NM_REGISTER_X86(RegionRestrictedConvolutionForward, ForwardImpl);
NM_REGISTER_X86(RegionRestrictedConvolutionBackwardData, BackwardDataImpl);
NM_REGISTER_X86(RegionRestrictedConvolutionBackwardFilter, BackwardFilterImpl);
}  // namespace neomeg::dnn::x86
