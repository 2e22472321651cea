// Layout rules of the generators: dst's shape comes from the caller, its dtype from the param.
#include <cmath>
#include <cstdint>

#include "neomeg/dnn/operators/random.h"
#include "src/common/norm_layout.h"

namespace neomeg::dnn {
namespace {

using namespace norm_layout;

void deduce_float_generator(const OperatorBase& op, DTypeEnum dt,
                            std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_count(op, inputs, 0);
    NM_OP_REQUIRE(op, DTypeError, DType(dt).is_float(), "dtype ", DType(dt).name(),
                  " is not a float dtype (float32, float16, bfloat16)");
    outputs[0].dtype = DType(dt);
    outputs[0].init_contiguous_stride();
}

}  // namespace

void UniformRNG::deduce_layout(std::span<const TensorLayout> inputs,
                               std::span<TensorLayout> outputs) {
    deduce_float_generator(*this, m_param.dtype, inputs, outputs);
}

void GaussianRNG::deduce_layout(std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs) {
    NM_REQUIRE(ParamError, std::isfinite(m_param.mean), "mean ", m_param.mean, " is not finite");
    NM_REQUIRE(ParamError, std::isfinite(m_param.std) && m_param.std >= 0, "std ", m_param.std,
               " is not a finite non-negative number");
    deduce_float_generator(*this, m_param.dtype, inputs, outputs);
}

void PermutationRNG::deduce_layout(std::span<const TensorLayout> inputs,
                                   std::span<TensorLayout> outputs) {
    check_count(*this, inputs, 0);
    DType dt(m_param.dtype);
    NM_REQUIRE(DTypeError, dt == dtype::Int32 || dt == dtype::Float32, "dtype ", dt.name(),
               " is not int32 or float32");
    TensorLayout& dst = outputs[0];
    NM_REQUIRE(ShapeError, dst.ndim == 1, "dst shape ", dst.TensorShape::to_string(),
               " is not 1-D");
    // Float32 holds every integer exactly only up to 2^24.
    size_t limit = dt == dtype::Int32 ? size_t(INT32_MAX) + 1 : size_t(1) << 24;
    NM_REQUIRE(ParamError, dst[0] <= limit, "dst shape ", dst.TensorShape::to_string(),
               " has more than ", limit, " elements, which ", dt.name(), " cannot index exactly");
    dst.dtype = dt;
    dst.init_contiguous_stride();
}

}  // namespace neomeg::dnn
