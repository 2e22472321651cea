#include <algorithm>
#include <vector>

#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

using Mode = param::Padding::Mode;

// Index into a src dim of size n that padded position j (counted from src's first element, so
// negative in the front border) copies; -1 where CONSTANT writes the value instead. REFLECT
// mirrors about the first and last elements without repeating them, and keeps mirroring when
// the border is wider than src, as numpy.pad does.
int64_t source_index(Mode mode, int64_t n, int64_t j) {
    if (j >= 0 && j < n)
        return j;
    switch (mode) {
        case Mode::CONSTANT:
            return -1;
        case Mode::REPLICATE:
            return std::clamp<int64_t>(j, 0, n - 1);
        case Mode::REFLECT: {
            if (n == 1)
                return 0;
            int64_t period = 2 * (n - 1);
            int64_t r = ((j % period) + period) % period;
            return r < n ? r : period - r;
        }
    }
    return -1;
}

// Fills sidx with the src multi-index that padded multi-index pidx copies; false for the
// constant border.
bool source_of(const param::Padding& p, const TensorShape& src, const size_t* pidx, size_t* sidx) {
    for (size_t d = 0; d < src.ndim; ++d) {
        int64_t s = source_index(p.mode, static_cast<int64_t>(src.shape[d]),
                                 static_cast<int64_t>(pidx[d]) - p.front_offsets[d]);
        if (s < 0)
            return false;
        sidx[d] = static_cast<size_t>(s);
    }
    return true;
}

class PaddingImpl final : public Padding {
public:
    using Padding::Padding;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        const Scalar border = Scalar::of_float(m_param.value);
        size_t sidx[TensorShape::MAX_NDIM];
        for_each_index(dst.layout, [&](const auto& idx) {
            bool inside = source_of(m_param, src.layout, idx.data(), sidx);
            store_scalar(dst, offset_of(dst.layout, idx.data()),
                         inside ? load_scalar(src, offset_of(src.layout, sidx)) : border);
        });
    }
};

// Sums in double in the workspace, then writes grad once, so float16 gradients that collect many
// border elements are rounded only at the end.
class PaddingBackwardImpl final : public PaddingBackward {
public:
    using PaddingBackward::PaddingBackward;
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
        size_t sidx[TensorShape::MAX_NDIM];
        for_each_index(diff.layout, [&](const auto& idx) {
            if (source_of(m_param, grad.layout, idx.data(), sidx))
                acc[offset_of(acc_layout, sidx)] +=
                        load_scalar(diff, offset_of(diff.layout, idx.data())).f;
        });
        for_each_index(grad.layout, [&](const auto& idx) {
            store_scalar(grad, offset_of(grad.layout, idx.data()),
                         Scalar::of_float(acc[offset_of(acc_layout, idx.data())]));
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Padding, PaddingImpl);
NM_REGISTER_NAIVE(PaddingBackward, PaddingBackwardImpl);
}  // namespace neomeg::dnn::naive
