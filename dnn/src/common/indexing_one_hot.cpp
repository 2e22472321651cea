// Layout rules of IndexingOneHot and IndexingSetOneHot: index has the data's shape without the
// axis; the picked values (dst, sub) have the data's shape with the axis of size 1.
#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"

namespace neomeg::dnn {
namespace {

// Shape of `data` with `axis` reduced to 1, and checks that `index` is `data` without `axis`.
TensorShape one_hot_shape(const TensorLayout& data, const TensorLayout& index, int32_t axis,
                          const indexing::Who& who) {
    NM_THROW_IF(data.ndim == 0, ShapeError, who, ": data must have at least one dim, got ",
                data.to_string());
    size_t ax = indexing::normalize_axis(axis, data.ndim, who);
    indexing::check_index_dtype(index, "index", who);
    bool ok = index.ndim + 1 == data.ndim;
    for (size_t d = 0, i = 0; ok && d < data.ndim; ++d) {
        if (d != ax)
            ok = index.shape[i++] == data.shape[d];
    }
    NM_THROW_IF(!ok, ShapeError, who, ": index ", index.to_string(), " must have the shape of ",
                data.to_string(), " without axis ", ax);
    TensorShape r = data;
    r.shape[ax] = 1;
    return r;
}

}  // namespace

void IndexingOneHot::deduce_layout(std::span<const TensorLayout> inputs,
                                   std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    TensorShape s = one_hot_shape(inputs[0], inputs[1], m_param.axis, *this);
    outputs[0] = TensorLayout(s, inputs[0].dtype);
}

void IndexingSetOneHot::deduce_layout(std::span<const TensorLayout> inputs,
                                      std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout &data = inputs[0], &sub = inputs[2];
    TensorShape s = one_hot_shape(data, inputs[1], m_param.axis, *this);
    NM_REQUIRE(DTypeError, sub.dtype == data.dtype, "sub ", sub.to_string(),
               " must have the dtype of data ", data.to_string());
    NM_REQUIRE(ShapeError, sub.eq_shape(s), "sub ", sub.to_string(), " must have shape ",
               s.to_string(), " (data ", data.to_string(), " with the axis of size 1)");
    outputs[0] = TensorLayout(data, data.dtype);
}

}  // namespace neomeg::dnn
