// The depthwise filter gradient of ConvolutionBackwardFilterBlocked by our own loop
// (depthwise_blocked_hwy.h), threads splitting the channel blocks.
#include "src/x86/depthwise_blocked.h"

#include <vector>

#include "src/common/channel_blocked.h"
#include "src/x86/depthwise_blocked_hwy.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

class DepthwiseBlockedFilterPlan final : public Plan {
public:
    DepthwiseBlockedFilterPlan(const DwBlockedGeom& g, bool flip, size_t channels,
                               const TensorLayout& grad)
        : m_g(g), m_flip(flip), m_channels(channels), m_grad(grad) {}

    size_t workspace_in_bytes() const override { return 0; }
    const char* name() const override { return "depthwise_blocked:hwy"; }

    // The call's tensors: src, diff, grad.
    void run(std::span<const TensorND> t, Workspace, dnnl::stream&) override {
        const auto* x = static_cast<const float*>(t[0].raw_ptr());
        const auto* dy = static_cast<const float*>(t[1].raw_ptr());
        auto* df = static_cast<float*>(t[2].raw_ptr());
        const DwBlockedGeom& g = m_g;
        const size_t taps = g.kh * g.kw;
        const size_t work = g.n * g.blocks * g.block * g.oh * g.ow * taps;
        const ptrdiff_t s_oc = m_grad.stride[0], s_x = m_grad.stride[m_grad.ndim - 1],
                        s_y = m_grad.ndim == 4 ? m_grad.stride[2] : 0;
        parallel_ranges(g.blocks, work, kParallelGrain, [&](size_t b, size_t e) {
            std::vector<double> acc(taps * g.block);
            for (size_t cb = b; cb < e; ++cb) {
                dw_blocked_filter_grad(g, x, dy, cb, acc.data());
                for (size_t l = 0; l < g.block && cb * g.block + l < m_channels; ++l)
                    for (size_t ky = 0; ky < g.kh; ++ky)
                        for (size_t kx = 0; kx < g.kw; ++kx) {
                            // CONVOLUTION mode's filter is the correlation's reversed.
                            const size_t ty = m_flip ? g.kh - 1 - ky : ky;
                            const size_t tx = m_flip ? g.kw - 1 - kx : kx;
                            df[static_cast<ptrdiff_t>(cb * g.block + l) * s_oc +
                               static_cast<ptrdiff_t>(ty) * s_y +
                               static_cast<ptrdiff_t>(tx) * s_x] =
                                    static_cast<float>(acc[(ky * g.kw + kx) * g.block + l]);
                        }
            }
        });
    }

private:
    DwBlockedGeom m_g;
    bool m_flip;
    size_t m_channels;
    TensorLayout m_grad;
};

}  // namespace

std::unique_ptr<Plan> depthwise_blocked_filter_plan(const ConvArgs& args, const TensorLayout& src,
                                                    const TensorLayout& diff,
                                                    const TensorLayout& grad) {
    const size_t spatial = grad.ndim - 2;
    if ((spatial != 1 && spatial != 2) || src.dtype != dtype::Float32 ||
        diff.dtype != dtype::Float32 || grad.dtype != dtype::Float32 || !src.is_contiguous() ||
        !diff.is_contiguous() || src.ndim != grad.ndim + 1 || diff.ndim != src.ndim ||
        src.is_empty() || diff.is_empty())
        return nullptr;
    const size_t c = grad[0], block = src[src.ndim - 1];
    if (args.group != c || grad[1] != 1 || diff[diff.ndim - 1] != block ||
        src[1] != channel_blocks(c, block) || diff[1] != src[1] || args.stride.size() != spatial ||
        args.padding.size() != spatial || args.dilation.size() != spatial)
        return nullptr;
    DwBlockedGeom g;
    g.n = src[0];
    g.blocks = src[1];
    g.block = block;
    const size_t off = 2 - spatial;  // 1-D: the H axis is absent
    auto in = [&](size_t d) { return src[2 + d - off]; };
    auto out = [&](size_t d) { return diff[2 + d - off]; };
    auto k = [&](size_t d) { return grad[2 + d - off]; };
    size_t* sizes[2][3] = {{&g.ih, &g.oh, &g.kh}, {&g.iw, &g.ow, &g.kw}};
    ptrdiff_t* params[2][3] = {{&g.sh, &g.ph, &g.dh}, {&g.sw, &g.pw, &g.dw}};
    for (size_t d = off; d < 2; ++d) {
        *sizes[d][0] = in(d);
        *sizes[d][1] = out(d);
        *sizes[d][2] = k(d);
        *params[d][0] = args.stride[d - off];
        *params[d][1] = args.padding[d - off];
        *params[d][2] = args.dilation[d - off];
    }
    return std::make_unique<DepthwiseBlockedFilterPlan>(g, args.flip, c, grad);
}

}  // namespace neomeg::dnn::x86
