// Layout rules of DropoutForward/Backward: dst has src's shape and dtype, the mask is uint8 of
// the same shape (1 where kept).
#include "neomeg/dnn/operators/norm.h"
#include "src/common/norm_layout.h"

namespace neomeg::dnn {
namespace {

using namespace norm_layout;

void check_prob(const OperatorBase& op, float p) {
    // Written as a positive test so that NaN fails it.
    NM_OP_REQUIRE(op, ParamError, p >= 0.f && p <= 1.f, "drop_prob ", p, " is outside [0, 1]");
}

}  // namespace

void DropoutForward::deduce_layout(std::span<const TensorLayout> inputs,
                                   std::span<TensorLayout> outputs) {
    check_count(*this, inputs, 1);
    check_float(*this, inputs[0], "src");
    check_prob(*this, m_param.drop_prob);
    outputs[0] = TensorLayout(inputs[0], inputs[0].dtype);
    outputs[1] = TensorLayout(inputs[0], dtype::Uint8);
}

void DropoutBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                    std::span<TensorLayout> outputs) {
    check_count(*this, inputs, 2);
    check_float(*this, inputs[0], "diff");
    NM_OP_REQUIRE(*this, DTypeError, inputs[1].dtype == dtype::Uint8, "mask ",
                  inputs[1].to_string(), " is not uint8");
    check_same_shape(*this, inputs[0], "diff", inputs[1], "mask");
    check_prob(*this, m_param.drop_prob);
    outputs[0] = TensorLayout(inputs[0], inputs[0].dtype);
}

}  // namespace neomeg::dnn
