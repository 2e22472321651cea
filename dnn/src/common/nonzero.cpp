// Layout rule of NonZero; like CondTake, the coords layout is a capacity (every element nonzero)
// and a {1} int32 output receives the actual count of columns written.
#include <limits>

#include "neomeg/dnn/operators/indexing.h"

namespace neomeg::dnn {

void NonZero::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    // np.nonzero rejects 0-d input too: its coords would have no rows to say which element.
    NM_REQUIRE(ShapeError, src.ndim > 0, "src must have at least one dim, got ", src.to_string());
    NM_REQUIRE(ShapeError,
               src.total_nr_elems() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
               "src ", src.to_string(), " has more elements than an int32 count can hold");
    outputs[0] = TensorLayout({src.ndim, src.total_nr_elems()}, dtype::Int32);
    outputs[1] = TensorLayout({1}, dtype::Int32);
}

}  // namespace neomeg::dnn
