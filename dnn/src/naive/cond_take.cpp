#include "neomeg/dnn/operators/indexing.h"
#include "src/naive/handle.h"
#include "src/naive/indexing.h"

namespace neomeg::dnn::naive {
namespace {

// Writes only the first `count` elements of values and indices (the static-shape contract in
// dnn/ops/defs/indexing.py); count goes to outputs[2].
class CondTakeImpl final : public CondTake {
public:
    using CondTake::CondTake;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &data = inputs[0], &mask = inputs[1];
        const TensorND &values = outputs[0], &indices = outputs[1];
        int32_t count = 0, flat = 0;
        for_each_index(data.layout, [&](const auto& idx) {
            if (elem<bool>(mask, offset_of(mask.layout, idx.data()))) {
                ptrdiff_t k = count++;
                indexing::copy_elem(values, k * values.layout.stride[0], data,
                                    offset_of(data.layout, idx.data()));
                elem<int32_t>(indices, k * indices.layout.stride[0]) = flat;
            }
            ++flat;
        });
        elem<int32_t>(outputs[2], 0) = count;
    }
};

}  // namespace
NM_REGISTER_NAIVE(CondTake, CondTakeImpl);
}  // namespace neomeg::dnn::naive
