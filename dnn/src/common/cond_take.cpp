// Layout rules of CondTake and NonZero, whose true output size depends on the data. Under the
// static-shape contract the layouts are capacities (every element taken) and a {1} int32 output
// receives the actual count; callers view the first `count` elements.
#include <limits>

#include "neomeg/dnn/operators/indexing.h"

namespace neomeg::dnn {

void CondTake::deduce_layout(std::span<const TensorLayout> inputs,
                             std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &data = inputs[0], &mask = inputs[1];
    NM_REQUIRE(DTypeError, mask.dtype == dtype::Bool, "mask must be bool, got ", mask.to_string());
    NM_REQUIRE(ShapeError, mask.eq_shape(data), "mask ", mask.to_string(),
               " must have the shape of data ", data.to_string());
    size_t capacity = data.total_nr_elems();
    NM_REQUIRE(ShapeError, capacity <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
               "data ", data.to_string(), " has more elements than int32 indices can address");
    outputs[0] = TensorLayout({capacity}, data.dtype);
    outputs[1] = TensorLayout({capacity}, dtype::Int32);
    outputs[2] = TensorLayout({1}, dtype::Int32);
}

}  // namespace neomeg::dnn
