// Layout rule of Gather (torch.gather): dst takes index's shape and src's dtype.
#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"

namespace neomeg::dnn {

void Gather::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &src = inputs[0], &index = inputs[1];
    NM_REQUIRE(ShapeError, src.ndim > 0, "src must have at least one dim, got ", src.to_string());
    size_t ax = indexing::normalize_axis(m_param.axis, src.ndim, *this);
    indexing::check_index_dtype(index, "index", *this);
    bool ok = index.ndim == src.ndim;
    for (size_t d = 0; ok && d < src.ndim; ++d)
        ok = d == ax || index.shape[d] <= src.shape[d];
    NM_REQUIRE(ShapeError, ok, "index ", index.to_string(), " must have the rank of src ",
               src.to_string(), " and no larger dims outside axis ", ax);
    outputs[0] = TensorLayout(index, src.dtype);
}

}  // namespace neomeg::dnn
