// RegionRestrictedConvolutionForward and its gradients, in double on dense copies: one walk over
// the taps whose input position lies in src and whose region ids match, which the forward sums,
// BackwardData scatters and BackwardFilter correlates.
#include "src/common/region_restricted_conv.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/naive/dense.h"
#include "src/naive/handle.h"

namespace neomeg::dnn::naive {
namespace {

std::vector<int64_t> load_ids(const TensorND& t) {
    std::vector<int64_t> v;
    v.reserve(t.layout.total_nr_elems());
    for_each_offset(t.layout, [&](ptrdiff_t off) { v.push_back(load_scalar(t, off).i); });
    return v;
}

struct Walk : ConvDims2D {
    std::vector<int64_t> rin, rout;

    Walk(const ConvGeometry& g, const TensorND& rin_t, const TensorND& rout_t)
        : ConvDims2D(g), rin(load_ids(rin_t)), rout(load_ids(rout_t)) {}

    // f(src index, filter index, dst index) for every tap that reads src and whose regions match.
    template <class F>
    void each_tap(F&& f) const {
        for (long n = 0; n < N; ++n)
            for (long oc = 0; oc < OC; ++oc)
                for (long oh = 0; oh < OH; ++oh)
                    for (long ow = 0; ow < OW; ++ow) {
                        int64_t region = rout[size_t((n * OH + oh) * OW + ow)];
                        size_t d = size_t(((n * OC + oc) * OH + oh) * OW + ow);
                        for (long fh = 0; fh < FH; ++fh)
                            for (long fw = 0; fw < FW; ++fw) {
                                long ih = oh * sh - ph + fh * dh, iw = ow * sw - pw + fw * dw;
                                if (ih < 0 || ih >= IH || iw < 0 || iw >= IW ||
                                    rin[size_t((n * IH + ih) * IW + iw)] != region)
                                    continue;
                                for (long c = 0; c < icg; ++c) {
                                    long ic = oc / ocg * icg + c;
                                    f(size_t(((n * IC + ic) * IH + ih) * IW + iw),
                                      size_t(((oc * icg + c) * FH + fh) * FW + fw), d);
                                }
                            }
                    }
    }
};

class ForwardImpl final : public RegionRestrictedConvolutionForward {
public:
    using RegionRestrictedConvolutionForward::RegionRestrictedConvolutionForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        Walk w(region_restricted_geometry(*this, m_param, in[0].layout, in[1].layout, in[2].layout,
                                          in[3].layout),
               in[2], in[3]);
        auto src = load_dense(in[0]), filter = load_dense(in[1]);
        std::vector<double> dst(out[0].layout.total_nr_elems());
        w.each_tap([&](size_t s, size_t f, size_t d) { dst[d] += src[s] * filter[f]; });
        store_dense(out[0], dst);
    }
};

class BackwardDataImpl final : public RegionRestrictedConvolutionBackwardData {
public:
    using RegionRestrictedConvolutionBackwardData::RegionRestrictedConvolutionBackwardData;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        Walk w(region_restricted_geometry(*this, m_param, out[0].layout, in[0].layout, in[2].layout,
                                          in[3].layout),
               in[2], in[3]);
        auto filter = load_dense(in[0]), diff = load_dense(in[1]);
        std::vector<double> grad(out[0].layout.total_nr_elems());
        w.each_tap([&](size_t s, size_t f, size_t d) { grad[s] += filter[f] * diff[d]; });
        store_dense(out[0], grad);
    }
};

class BackwardFilterImpl final : public RegionRestrictedConvolutionBackwardFilter {
public:
    using RegionRestrictedConvolutionBackwardFilter::RegionRestrictedConvolutionBackwardFilter;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        Walk w(region_restricted_geometry(*this, m_param, in[0].layout, out[0].layout, in[2].layout,
                                          in[3].layout),
               in[2], in[3]);
        auto src = load_dense(in[0]), diff = load_dense(in[1]);
        std::vector<double> grad(out[0].layout.total_nr_elems());
        w.each_tap([&](size_t s, size_t f, size_t d) { grad[f] += src[s] * diff[d]; });
        store_dense(out[0], grad);
    }
};

}  // namespace
NM_REGISTER_NAIVE(RegionRestrictedConvolutionForward, ForwardImpl);
NM_REGISTER_NAIVE(RegionRestrictedConvolutionBackwardData, BackwardDataImpl);
NM_REGISTER_NAIVE(RegionRestrictedConvolutionBackwardFilter, BackwardFilterImpl);
}  // namespace neomeg::dnn::naive
