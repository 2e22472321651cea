// Backward rules of the view ops: each gradient is the inverse view of the output gradient.
#include <numeric>

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_params.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

std::vector<Tensor> to_input_shape(const OpDef&, std::span<const Tensor> x, std::span<const Tensor>,
                                   std::span<const Tensor> dy, std::span<const bool>) {
    return {reshape(dy[0], x[0].shape())};
}

std::vector<Tensor> broadcast_grad(const OpDef&, std::span<const Tensor> x, std::span<const Tensor>,
                                   std::span<const Tensor> dy, std::span<const bool>) {
    return {reduce_to(dy[0], x[0].shape())};
}

std::vector<Tensor> dimshuffle_grad(const OpDef& def, std::span<const Tensor>,
                                    std::span<const Tensor>, std::span<const Tensor> dy,
                                    std::span<const bool>) {
    const auto& pattern = static_cast<const ops::Dimshuffle&>(def).param().pattern;
    param::Dimshuffle inv;
    inv.pattern.resize(pattern.size());
    for (size_t i = 0; i < pattern.size(); ++i)
        inv.pattern[static_cast<size_t>(pattern[i])] = static_cast<int32_t>(i);
    return {imperative::apply(ops::Dimshuffle(inv), dy.first(1))[0]};
}

}  // namespace

NM_REGISTER_GRAD(Reshape, to_input_shape);
NM_REGISTER_GRAD(AddAxis, to_input_shape);
NM_REGISTER_GRAD(RemoveAxis, to_input_shape);
NM_REGISTER_GRAD(Broadcast, broadcast_grad);
NM_REGISTER_GRAD(Dimshuffle, dimshuffle_grad);

}  // namespace neomeg::imperative
