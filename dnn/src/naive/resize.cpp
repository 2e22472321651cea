#include <algorithm>

#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/common/resize_taps.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

resize::AxisTaps axis_taps(const param::Resize& p, size_t in, size_t out, size_t o) {
    return resize::axis_taps(static_cast<resize::Mode>(p.mode), p.align_corners,
                             static_cast<int64_t>(in), static_cast<int64_t>(out),
                             static_cast<int64_t>(o));
}

// Calls f(src_h, src_w, weight) for the taps of dst pixel (oh, ow) (common/resize_taps.h), rows
// outer.
template <class F>
void for_each_tap(const param::Resize& p, const TensorShape& src, size_t oh, size_t ow, F&& f) {
    resize::AxisTaps th = axis_taps(p, src.shape[2], p.out_h, oh),
                     tw = axis_taps(p, src.shape[3], p.out_w, ow);
    for (int a = 0; a < th.n; ++a)
        for (int b = 0; b < tw.n; ++b)
            f(static_cast<size_t>(th.idx[a]), static_cast<size_t>(tw.idx[b]), th.w[a] * tw.w[b]);
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
