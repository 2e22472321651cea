// The layout rules of BatchNormForward and BatchNormBackward (batch_norm.cpp), shared with their
// blocked forms (channel_blocked_training.cpp), which apply them to the plain shapes of their
// blocked tensors; errors name `op`.
#pragma once

#include "neomeg/dnn/operator.h"
#include "neomeg/dnn/params/norm.h"

namespace neomeg::dnn {

void batch_norm_forward_layouts(const OperatorBase& op, const param::BatchNorm& param,
                                std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs);
void batch_norm_backward_layouts(const OperatorBase& op, std::span<const TensorLayout> inputs,
                                 std::span<TensorLayout> outputs);

}  // namespace neomeg::dnn
