#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/naive/handle.h"
#include "src/naive/slab.h"

namespace neomeg::dnn::naive {
namespace {

// Each src is copied into its slab of dst, which starts where the previous one ended along axis.
class ConcatImpl final : public Concat {
public:
    using Concat::Concat;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        copy_slabs(inputs, outputs[0], m_param.axis, SlabDirection::into_whole);
    }
};

}  // namespace
NM_REGISTER_NAIVE(Concat, ConcatImpl);
}  // namespace neomeg::dnn::naive
