#include "neomeg/dnn/errors.h"
#include "neomeg/graph/value_infer.h"

namespace neomeg::graph {

std::vector<int32_t> read_shape_value(CompNode cn, const dnn::TensorND& value) {
    const dnn::TensorLayout& l = value.layout;
    NM_THROW_IF(l.dtype != dnn::dtype::Int32 || l.ndim > 1, ShapeError, "the shape input is ",
                l.to_string(), ", not an int32 vector");
    const size_t n = l.total_nr_elems();
    std::vector<int32_t> out(n);
    if (n == 0)
        return out;
    // The elements' span, one copy: a strided vector (a view) brings its gaps along.
    auto [lo, hi] = l.span_elems();
    std::vector<int32_t> span(static_cast<size_t>(hi - lo));
    cn.copy_to_host(span.data(), static_cast<const int32_t*>(value.raw_ptr()) + lo,
                    span.size() * sizeof(int32_t));
    const ptrdiff_t step = l.ndim == 1 ? l.stride[0] : 0;
    for (size_t i = 0; i < n; ++i)
        out[i] = span[static_cast<size_t>(static_cast<ptrdiff_t>(i) * step - lo)];
    return out;
}

}  // namespace neomeg::graph
