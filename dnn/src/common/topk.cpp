// Layout rule of TopK: the last axis becomes |k| long, or disappears for KTH_ONLY.
#include <cstdlib>

#include "neomeg/dnn/operators/reduce.h"

namespace neomeg::dnn {

size_t TopK::num_outputs() const {
    return m_param.mode == Param::Mode::KTH_ONLY ? 1 : 2;
}

void TopK::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& src = inputs[0];
    NM_REQUIRE(ShapeError, src.ndim >= 1, "src must have at least one axis to select along, got ",
               src.to_string());
    NM_REQUIRE(DTypeError, !src.dtype.is_bool(), "dtype bool is not supported, src ",
               src.to_string());
    int64_t k = m_param.k;
    size_t n = src.shape[src.ndim - 1];
    size_t abs_k = static_cast<size_t>(std::llabs(k));
    NM_REQUIRE(ParamError, k != 0 && abs_k <= n, "k=", k, " needs 1 <= |k| <= ", n,
               " (the last axis of src ", src.to_string(), ")");
    TensorShape s = src;
    if (m_param.mode == Param::Mode::KTH_ONLY) {
        s.ndim -= 1;
        outputs[0] = TensorLayout(s, src.dtype);
        return;
    }
    s[s.ndim - 1] = abs_k;
    outputs[0] = TensorLayout(s, src.dtype);
    outputs[1] = TensorLayout(s, dtype::Int32);
}

}  // namespace neomeg::dnn
