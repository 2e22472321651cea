// Backward rules of the view ops: each gradient is the inverse view of the output gradient.
#include <numeric>

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/indexing.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/view_layouts.h"
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

// dy written into zeros of x's shape where the view took its elements: IndexingIncrMultiAxisVec
// on every axis of x with numpy.ix_-style positions (each axis's arange along its own dim, so they
// broadcast to the view's shape: an outer product, as the slices are), into a stride-0 zero that
// the kernel copies as it goes. Positions come from the layout rule's own resolution.
std::vector<Tensor> subtensor_grad(const OpDef& def, std::span<const Tensor> x,
                                   std::span<const Tensor>, std::span<const Tensor> dy,
                                   std::span<const bool>) {
    const auto& p = static_cast<const ops::Subtensor&>(def).param();
    dnn::TensorShape shape = x[0].shape();
    auto axes = param::resolve_subtensor(def, p, shape);
    dnn::TensorShape taken = shape;  // the view's shape with dropped axes kept as 1
    bool whole = true;
    for (size_t a = 0; a < shape.ndim; ++a) {
        taken[a] = axes[a].length;
        whole = whole && axes[a].begin == 0 && axes[a].step == 1 && axes[a].length == shape[a];
    }
    if (whole)
        return {reshape(dy[0], shape)};
    Tensor zeros = broadcast_to(scalar_like(dy[0], 0), shape);
    if (taken.is_empty())
        return {zeros};
    std::vector<Tensor> in{zeros, reshape(dy[0], taken)};
    dnn::param::IndexingMultiAxis ip;
    ip.axes.clear();
    for (size_t a = 0; a < shape.ndim; ++a) {
        std::vector<int32_t> pos(axes[a].length);
        for (size_t i = 0; i < pos.size(); ++i)
            pos[i] = static_cast<int32_t>(axes[a].begin + static_cast<ptrdiff_t>(i) * axes[a].step);
        dnn::TensorShape ix;
        ix.ndim = shape.ndim;
        for (size_t d = 0; d < ix.ndim; ++d)
            ix[d] = d == a ? pos.size() : 1;
        in.push_back(Tensor::from_host(pos.data(), ix, dnn::dtype::Int32, x[0].comp_node()));
        ip.axes.push_back(static_cast<int32_t>(a));
    }
    return {imperative::apply(*shared_op<ops::IndexingIncrMultiAxisVec>(ip), in)[0]};
}

}  // namespace

NM_REGISTER_GRAD(Subtensor, subtensor_grad);
NM_REGISTER_GRAD(Reshape, to_input_shape);
NM_REGISTER_GRAD(AddAxis, to_input_shape);
NM_REGISTER_GRAD(RemoveAxis, to_input_shape);
NM_REGISTER_GRAD(Broadcast, broadcast_grad);
NM_REGISTER_GRAD(Dimshuffle, dimshuffle_grad);

}  // namespace neomeg::imperative
