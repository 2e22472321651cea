#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/naive/handle.h"
#include "src/naive/slab.h"

namespace neomeg::dnn::naive {
namespace {

// Each dst receives the slab of src that starts where the previous dst ended along axis.
class SplitImpl final : public Split {
public:
    using Split::Split;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        copy_slabs(outputs, inputs[0], m_param.axis, SlabDirection::out_of_whole);
    }
};

}  // namespace
NM_REGISTER_NAIVE(Split, SplitImpl);
}  // namespace neomeg::dnn::naive
