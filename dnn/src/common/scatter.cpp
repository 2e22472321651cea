// Layout rule of Scatter (torch.scatter / scatter_add): dst is a copy of data's shape and dtype.
#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"

namespace neomeg::dnn {

void Scatter::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &data = inputs[0], &index = inputs[1], &src = inputs[2];
    NM_REQUIRE(ShapeError, data.ndim > 0, "data must have at least one dim, got ",
               data.to_string());
    size_t ax = indexing::normalize_axis(m_param.axis, data.ndim, *this);
    indexing::check_index_dtype(index, "index", *this);
    NM_REQUIRE(DTypeError, src.dtype == data.dtype, "src ", src.to_string(),
               " must have the dtype of data ", data.to_string());
    NM_REQUIRE(DTypeError, m_param.mode != Param::Mode::ADD || !data.dtype.is_bool(),
               "cannot accumulate into bool data ", data.to_string());
    bool ok = index.ndim == data.ndim;
    for (size_t d = 0; ok && d < data.ndim; ++d)
        ok = d == ax || index.shape[d] <= data.shape[d];
    NM_REQUIRE(ShapeError, ok, "index ", index.to_string(), " must have the rank of data ",
               data.to_string(), " and no larger dims outside axis ", ax);
    NM_REQUIRE(ShapeError, src.eq_shape(index), "src ", src.to_string(),
               " must have the shape of index ", index.to_string());
    outputs[0] = TensorLayout(data, data.dtype);
}

}  // namespace neomeg::dnn
