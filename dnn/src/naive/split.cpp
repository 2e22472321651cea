#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

// Each dst receives the slab of src that starts where the previous dst ended along axis.
class SplitImpl final : public Split {
public:
    using Split::Split;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND& src = inputs[0];
        auto ndim = static_cast<int32_t>(src.layout.ndim);
        size_t axis = static_cast<size_t>(m_param.axis < 0 ? m_param.axis + ndim : m_param.axis);
        size_t start = 0;
        for (const TensorND& dst : outputs) {
            for_each_index(dst.layout, [&](const auto& idx) {
                auto sidx = idx;
                sidx[axis] += start;
                store_scalar(dst, offset_of(dst.layout, idx.data()),
                             load_scalar(src, offset_of(src.layout, sidx.data())));
            });
            start += dst.layout.shape[axis];
        }
    }
};

}  // namespace
NM_REGISTER_NAIVE(Split, SplitImpl);
}  // namespace neomeg::dnn::naive
