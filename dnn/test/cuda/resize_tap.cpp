// Resize's tap rule of the CUDA kernels (kern::resize_tap), on the CPU: the forward and backward
// sums the kernels compute from it, in their order, are compared with naive Resize and
// ResizeBackward over upsampling, downsampling, size-1 axes and every mode. Needs no GPU.
#include "common/host_tensor.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/cuda/kernels/args.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using neomeg::dnn::cuda::kern::resize_tap;
using neomeg::dnn::cuda::kern::ResizeMode;
using neomeg::dnn::cuda::kern::ResizeTap;

namespace {

struct Geometry {
    size_t in_h, in_w, out_h, out_w;
};

const Geometry kGeometries[] = {{4, 5, 7, 9}, {7, 9, 4, 5}, {1, 1, 3, 4}, {3, 4, 1, 1},
                                {5, 5, 5, 5}, {2, 3, 9, 2}, {6, 1, 2, 7}};

param::Resize resize_param(param::Resize::InterpolationMode mode, bool align, const Geometry& g) {
    param::Resize p;
    p.mode = mode;
    p.align_corners = align;
    p.out_h = static_cast<uint32_t>(g.out_h);
    p.out_w = static_cast<uint32_t>(g.out_w);
    return p;
}

// The four (h, w, weight) taps of dst pixel (oh, ow), in the kernels' order.
struct Taps {
    ResizeTap h, w;
};
Taps taps(const param::Resize& p, const Geometry& g, size_t oh, size_t ow) {
    auto mode = static_cast<ResizeMode>(p.mode);
    return {resize_tap(mode, p.align_corners, static_cast<int64_t>(g.in_h),
                       static_cast<int64_t>(g.out_h), static_cast<int64_t>(oh)),
            resize_tap(mode, p.align_corners, static_cast<int64_t>(g.in_w),
                       static_cast<int64_t>(g.out_w), static_cast<int64_t>(ow))};
}

template <class F>
void for_each_tap(const Taps& t, F&& f) {
    f(t.h.i0, t.w.i0, (1 - t.h.w) * (1 - t.w.w));
    f(t.h.i0, t.w.i1, (1 - t.h.w) * t.w.w);
    f(t.h.i1, t.w.i0, t.h.w * (1 - t.w.w));
    f(t.h.i1, t.w.i1, t.h.w * t.w.w);
}

}  // namespace

TEST(CudaResizeTap, SumsMatchNaive) {
    using Mode = param::Resize::InterpolationMode;
    auto naive = Handle::make_naive();
    std::mt19937 rng(5);
    const size_t n = 2, c = 3;
    for (const Geometry& g : kGeometries)
        for (auto [mode, align] : {std::pair{Mode::NEAREST, false}, std::pair{Mode::LINEAR, false},
                                   std::pair{Mode::LINEAR, true}}) {
            param::Resize p = resize_param(mode, align, g);
            HostTensor src({n, c, g.in_h, g.in_w}, dtype::Float32);
            fill_uniform(src, -1, 1, rng);
            auto op = naive->create_operator<Resize>();
            op->param() = p;
            auto want = run_op(*op, {src})[0].values();
            auto sv = src.values();
            std::vector<double> got;
            for (size_t i = 0; i < n * c; ++i)
                for (size_t oh = 0; oh < g.out_h; ++oh)
                    for (size_t ow = 0; ow < g.out_w; ++ow) {
                        double acc = 0;
                        for_each_tap(taps(p, g, oh, ow), [&](int64_t h, int64_t w, double wt) {
                            acc += wt * sv[(i * g.in_h + static_cast<size_t>(h)) * g.in_w +
                                           static_cast<size_t>(w)];
                        });
                        got.push_back(static_cast<float>(acc));
                    }
            EXPECT_EQ(got, want) << "forward " << op->param_str() << " from " << g.in_h << "x"
                                 << g.in_w;

            HostTensor diff({n, c, g.out_h, g.out_w}, dtype::Float32);
            fill_uniform(diff, -1, 1, rng);
            auto back = naive->create_operator<ResizeBackward>();
            back->param() = p;
            auto bwant = run_op(*back, {diff}, {TensorShape{n, c, g.in_h, g.in_w}})[0].values();
            auto dv = diff.values();
            std::vector<double> acc(n * c * g.in_h * g.in_w, 0.0);
            for (size_t i = 0; i < n * c; ++i)
                for (size_t oh = 0; oh < g.out_h; ++oh)
                    for (size_t ow = 0; ow < g.out_w; ++ow) {
                        double d = dv[(i * g.out_h + oh) * g.out_w + ow];
                        for_each_tap(taps(p, g, oh, ow), [&](int64_t h, int64_t w, double wt) {
                            acc[(i * g.in_h + static_cast<size_t>(h)) * g.in_w +
                                static_cast<size_t>(w)] += wt * d;
                        });
                    }
            std::vector<double> bgot;
            for (double v : acc)
                bgot.push_back(static_cast<float>(v));
            EXPECT_EQ(bgot, bwant) << "backward " << op->param_str();
        }
}
