#include <algorithm>
#include <cmath>

#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

// dst position o along an axis reads (1 - w) * src[i0] + w * src[i1].
struct Tap {
    size_t i0, i1;
    double w;
};

// Source taps of dst position o when an axis of `in` elements is resampled to `out`.
// NEAREST is MegDNN's floor(o * in / out) (integer arithmetic, so exact). LINEAR without
// align_corners maps pixel centres, src = (o + 0.5) * in / out - 0.5 clamped at 0, as MegEngine's
// F.vision.interpolate and PyTorch do; with align_corners, src = o * (in - 1) / (out - 1).
Tap tap_of(const param::Resize& p, size_t in, size_t out, size_t o) {
    if (p.mode == param::Resize::InterpolationMode::NEAREST) {
        size_t i = std::min(o * in / out, in - 1);
        return {i, i, 0};
    }
    double src;
    if (p.align_corners)
        src = out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) /
                                static_cast<double>(out - 1)
                      : 0.0;
    else
        src = std::max((static_cast<double>(o) + 0.5) * static_cast<double>(in) /
                                       static_cast<double>(out) -
                               0.5,
                       0.0);
    auto i0 = std::min(static_cast<size_t>(std::floor(src)), in - 1);
    return {i0, std::min(i0 + 1, in - 1), src - static_cast<double>(i0)};
}

// Calls f(src_h, src_w, weight) for the (up to) four taps of dst pixel (oh, ow).
template <class F>
void for_each_tap(const param::Resize& p, const TensorShape& src, size_t oh, size_t ow, F&& f) {
    Tap th = tap_of(p, src.shape[2], p.out_h, oh), tw = tap_of(p, src.shape[3], p.out_w, ow);
    f(th.i0, tw.i0, (1 - th.w) * (1 - tw.w));
    f(th.i0, tw.i1, (1 - th.w) * tw.w);
    f(th.i1, tw.i0, th.w * (1 - tw.w));
    f(th.i1, tw.i1, th.w * tw.w);
}

class ResizeImpl final : public Resize {
public:
    using Resize::Resize;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        for_each_index(dst.layout, [&](const auto& idx) {
            double acc = 0;
            for_each_tap(m_param, src.layout, idx[2], idx[3], [&](size_t h, size_t w, double wt) {
                size_t sidx[4] = {idx[0], idx[1], h, w};
                acc += wt * load_scalar(src, offset_of(src.layout, sidx)).f;
            });
            store_scalar(dst, offset_of(dst.layout, idx.data()), Scalar::of_float(acc));
        });
    }
};

// Scatters each diff element onto its taps, summing in double in the workspace.
class ResizeBackwardImpl final : public ResizeBackward {
public:
    using ResizeBackward::ResizeBackward;
    size_t get_workspace_in_bytes(std::span<const TensorLayout>,
                                  std::span<const TensorLayout> outputs) override {
        return outputs[0].total_nr_elems() * sizeof(double);
    }
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace workspace) override {
        const TensorND &diff = inputs[0], &grad = outputs[0];
        TensorLayout acc_layout(grad.layout, grad.layout.dtype);  // contiguous index of grad
        auto* acc = reinterpret_cast<double*>(workspace.ptr);
        std::fill(acc, acc + grad.layout.total_nr_elems(), 0.0);
        for_each_index(diff.layout, [&](const auto& idx) {
            double g = load_scalar(diff, offset_of(diff.layout, idx.data())).f;
            for_each_tap(m_param, grad.layout, idx[2], idx[3], [&](size_t h, size_t w, double wt) {
                size_t gidx[4] = {idx[0], idx[1], h, w};
                acc[offset_of(acc_layout, gidx)] += wt * g;
            });
        });
        for_each_index(grad.layout, [&](const auto& idx) {
            store_scalar(grad, offset_of(grad.layout, idx.data()),
                         Scalar::of_float(acc[offset_of(acc_layout, idx.data())]));
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Resize, ResizeImpl);
NM_REGISTER_NAIVE(ResizeBackward, ResizeBackwardImpl);
}  // namespace neomeg::dnn::naive
