// Naive kernels of the shape-computing operators. The value-shaped ones check that the value
// they were given a shape from still says so: a caller that read it wrong fails, never copies
// the wrong elements.
#include <cstring>
#include <vector>

#include "neomeg/dnn/operators/tensor_shape.h"
#include "neomeg/dnn/preset_shape.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

class GetVarShapeImpl final : public GetVarShape {
public:
    using GetVarShape::GetVarShape;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorLayout& src = inputs[0].layout;
        const TensorND& dst = outputs[0];
        auto ndim = static_cast<int32_t>(src.ndim);
        size_t n = dst.layout.shape[0];
        for (size_t i = 0; i < n; ++i) {
            int32_t a = m_param.axes.empty() ? static_cast<int32_t>(i) : m_param.axes[i];
            a = a < 0 ? a + ndim : a;
            elem<int32_t>(dst, static_cast<ptrdiff_t>(i) * dst.layout.stride[0]) =
                    static_cast<int32_t>(src.shape[static_cast<size_t>(a)]);
        }
    }
};

// Copies src's elements in row-major order into dst's, whatever either's strides.
void copy_row_major(const TensorND& src, const TensorND& dst) {
    std::vector<ptrdiff_t> dst_offsets;
    dst_offsets.reserve(dst.layout.total_nr_elems());
    for_each_offset(dst.layout, [&](ptrdiff_t off) { dst_offsets.push_back(off); });
    size_t esize = src.layout.dtype.size();
    size_t k = 0;
    for_each_offset(src.layout, [&](ptrdiff_t off) {
        std::memcpy(static_cast<std::byte*>(dst.raw_ptr()) + dst_offsets[k++] * esize,
                    static_cast<const std::byte*>(src.raw_ptr()) + off * esize, esize);
    });
}

class ReshapeToImpl final : public ReshapeTo {
public:
    using ReshapeTo::ReshapeTo;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        check_preset_shape(kType, inputs[1], outputs[0].layout);
        copy_row_major(inputs[0], outputs[0]);
    }
};

class BroadcastToImpl final : public BroadcastTo {
public:
    using BroadcastTo::BroadcastTo;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        check_preset_shape(kType, inputs[1], dst.layout);
        // src as a view of dst's shape: stride 0 along broadcast axes.
        TensorLayout view = dst.layout;
        view.dtype = src.layout.dtype;
        size_t lead = dst.layout.ndim - src.layout.ndim;
        for (size_t i = 0; i < dst.layout.ndim; ++i)
            view.stride[i] =
                    i < lead || src.layout.shape[i - lead] == 1 ? 0 : src.layout.stride[i - lead];
        copy_row_major(TensorND(src.raw_ptr(), view), dst);
    }
};

class TakePrefixImpl final : public TakePrefix {
public:
    using TakePrefix::TakePrefix;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        check_preset_shape(kType, inputs[1], dst.layout);
        TensorLayout view = src.layout;
        view.shape[0] = dst.layout.shape[0];
        copy_row_major(TensorND(src.raw_ptr(), view), dst);
    }
};

}  // namespace
NM_REGISTER_NAIVE(GetVarShape, GetVarShapeImpl);
NM_REGISTER_NAIVE(ReshapeTo, ReshapeToImpl);
NM_REGISTER_NAIVE(BroadcastTo, BroadcastToImpl);
NM_REGISTER_NAIVE(TakePrefix, TakePrefixImpl);
}  // namespace neomeg::dnn::naive
