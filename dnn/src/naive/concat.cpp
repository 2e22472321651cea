#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

// Each src is copied into its slab of dst, which starts where the previous one ended along axis.
class ConcatImpl final : public Concat {
public:
    using Concat::Concat;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND& dst = outputs[0];
        auto ndim = static_cast<int32_t>(dst.layout.ndim);
        size_t axis = static_cast<size_t>(m_param.axis < 0 ? m_param.axis + ndim : m_param.axis);
        size_t start = 0;
        for (const TensorND& src : inputs) {
            for_each_index(src.layout, [&](const auto& idx) {
                auto didx = idx;
                didx[axis] += start;
                store_scalar(dst, offset_of(dst.layout, didx.data()),
                             load_scalar(src, offset_of(src.layout, idx.data())));
            });
            start += src.layout.shape[axis];
        }
    }
};

}  // namespace
NM_REGISTER_NAIVE(Concat, ConcatImpl);
}  // namespace neomeg::dnn::naive
