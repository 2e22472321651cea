// Backward rules of the indexing ops. Reads (IndexingOneHot, IndexingMultiAxisVec, Gather) send
// the gradient back with the matching accumulating write into zeros; writes send dy through to
// data except where it was overwritten, and gather dy for the written values. Index tensors and
// masks get no gradient.
//
// Where a SET op's indices repeat, only the last write reaches the output, so only that value
// element may get a gradient. Which one won is whatever the kernel did: the rule replays the write
// with each value element's own number (an int32 arange) and reads back who won each slot.
#include "neomeg/op/defs/indexing.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

Tensor filled(const dnn::TensorShape& shape, dnn::DType dtype, float value, CompNode cn) {
    dnn::param::Fill p;
    p.value = value;
    p.dtype = dtype.enumv();
    return run_generator(ops::Fill(p), {&shape, 1}, cn)[0];
}

Tensor zeros_like(const Tensor& t) {
    return filled(t.shape(), t.dtype(), 0, t.comp_node());
}

// Zeros of t's shape and dtype as a broadcast (stride-0) view of one element, for an input that a
// writing op copies into its output and then updates: the copy fills dst as it goes, where a
// zeros tensor would be filled and then copied (one pass over memory and a tensor of t's size
// saved). Every backend's Scatter, IndexingSetOneHot and IndexingIncrMultiAxisVec reads its
// inputs through their strides.
Tensor broadcast_zeros(const Tensor& t) {
    return broadcast_to(scalar_like(t, 0), t.shape());
}

// int32 0, 1, ..., n-1 in `shape` (exact while n < 2^24: Arange's start/step are float32).
Tensor iota(const dnn::TensorShape& shape, CompNode cn) {
    dnn::param::Arange p;
    p.dtype = dnn::DTypeEnum::Int32;
    dnn::TensorShape flat{shape.total_nr_elems()};
    Tensor t = run_generator(ops::Arange(p), {&flat, 1}, cn)[0];
    return reshape(t, shape);
}

// dy where mask holds, else 0.
Tensor where(const Tensor& mask, const Tensor& dy) {
    return elemwise(Mode::COND, {mask, dy, scalar_like(dy, 0)});
}

template <class Op>
Tensor run1(const typename Op::Param& p, std::vector<Tensor> in) {
    return imperative::apply(*shared_op<Op>(p), in)[0];
}

std::vector<Tensor> one_hot_grad(const OpDef& def, std::span<const Tensor> x,
                                 std::span<const Tensor>, std::span<const Tensor> dy,
                                 std::span<const bool> needs) {
    const auto& p = static_cast<const ops::IndexingOneHot&>(def).param();
    std::vector<Tensor> g(2);
    if (needs[0])  // one index per position: a set into zeros is the accumulation
        g[0] = run1<ops::IndexingSetOneHot>(p, {broadcast_zeros(x[0]), x[1], dy[0]});
    return g;
}

std::vector<Tensor> set_one_hot_grad(const OpDef& def, std::span<const Tensor> x,
                                     std::span<const Tensor>, std::span<const Tensor> dy,
                                     std::span<const bool> needs) {
    const auto& p = static_cast<const ops::IndexingSetOneHot&>(def).param();
    std::vector<Tensor> g(3);
    if (needs[0])
        g[0] = run1<ops::IndexingSetOneHot>(p, {dy[0], x[1], broadcast_zeros(x[2])});
    if (needs[2])
        g[2] = run1<ops::IndexingOneHot>(p, {dy[0], x[1]});
    return g;
}

// (t, indices...) for the multi-axis ops.
std::vector<Tensor> with_indices(std::initializer_list<Tensor> head,
                                 std::span<const Tensor> indices) {
    std::vector<Tensor> in(head);
    in.insert(in.end(), indices.begin(), indices.end());
    return in;
}

std::vector<Tensor> multi_axis_vec_grad(const OpDef& def, std::span<const Tensor> x,
                                        std::span<const Tensor>, std::span<const Tensor> dy,
                                        std::span<const bool> needs) {
    const auto& p = static_cast<const ops::IndexingMultiAxisVec&>(def).param();
    std::vector<Tensor> g(x.size());
    // A 30522x256 embedding table's gradient: two passes over 31 MB saved.
    if (needs[0])
        g[0] = run1<ops::IndexingIncrMultiAxisVec>(
                p, with_indices({broadcast_zeros(x[0]), dy[0]}, x.subspan(1)));
    return g;
}

std::vector<Tensor> incr_multi_axis_vec_grad(const OpDef& def, std::span<const Tensor> x,
                                             std::span<const Tensor>, std::span<const Tensor> dy,
                                             std::span<const bool> needs) {
    const auto& p = static_cast<const ops::IndexingIncrMultiAxisVec&>(def).param();
    std::vector<Tensor> g(x.size());
    if (needs[0])
        g[0] = dy[0];
    if (needs[1]) {
        Tensor picked = run1<ops::IndexingMultiAxisVec>(p, with_indices({dy[0]}, x.subspan(2)));
        g[1] = reduce_to(picked, x[1].shape());
    }
    return g;
}

std::vector<Tensor> set_multi_axis_vec_grad(const OpDef& def, std::span<const Tensor> x,
                                            std::span<const Tensor>, std::span<const Tensor> dy,
                                            std::span<const bool> needs) {
    const auto& p = static_cast<const ops::IndexingSetMultiAxisVec&>(def).param();
    auto indices = x.subspan(2);
    std::vector<Tensor> g(x.size());
    if (needs[0])  // overwritten elements do not reach the output
        g[0] = run1<ops::IndexingSetMultiAxisVec>(
                p, with_indices({dy[0], scalar_like(dy[0], 0)}, indices));
    if (needs[1]) {
        Tensor picked = run1<ops::IndexingMultiAxisVec>(p, with_indices({dy[0]}, indices));
        CompNode cn = dy[0].comp_node();
        Tensor ids = iota(picked.shape(), cn);
        Tensor owner = filled(x[0].shape(), dnn::dtype::Int32, -1, cn);
        owner = run1<ops::IndexingSetMultiAxisVec>(p, with_indices({owner, ids}, indices));
        Tensor won =
                elemwise(Mode::EQ,
                         {run1<ops::IndexingMultiAxisVec>(p, with_indices({owner}, indices)), ids});
        g[1] = reduce_to(where(won, picked), x[1].shape());
    }
    return g;
}

std::vector<Tensor> gather_grad(const OpDef& def, std::span<const Tensor> x,
                                std::span<const Tensor>, std::span<const Tensor> dy,
                                std::span<const bool> needs) {
    dnn::param::Scatter p;
    p.axis = static_cast<const ops::Gather&>(def).param().axis;
    p.mode = dnn::param::Scatter::Mode::ADD;
    std::vector<Tensor> g(2);
    if (needs[0])
        g[0] = run1<ops::Scatter>(p, {broadcast_zeros(x[0]), x[1], dy[0]});
    return g;
}

std::vector<Tensor> scatter_grad(const OpDef& def, std::span<const Tensor> x,
                                 std::span<const Tensor>, std::span<const Tensor> dy,
                                 std::span<const bool> needs) {
    const auto& p = static_cast<const ops::Scatter&>(def).param();
    const Tensor &data = x[0], &index = x[1], &src = x[2];
    bool add = p.mode == dnn::param::Scatter::Mode::ADD;
    dnn::param::IndexingAxis gp;
    gp.axis = p.axis;
    std::vector<Tensor> g(3);
    if (needs[0])
        g[0] = add ? dy[0] : run1<ops::Scatter>(p, {dy[0], index, broadcast_zeros(src)});
    if (needs[2]) {
        Tensor picked = run1<ops::Gather>(gp, {dy[0], index});
        if (!add) {
            CompNode cn = dy[0].comp_node();
            Tensor ids = iota(src.shape(), cn);
            Tensor owner = run1<ops::Scatter>(
                    p, {filled(data.shape(), dnn::dtype::Int32, -1, cn), index, ids});
            Tensor won = elemwise(Mode::EQ, {run1<ops::Gather>(gp, {owner, index}), ids});
            picked = where(won, picked);
        }
        g[2] = picked;
    }
    return g;
}

// values[j] = data.flat[i] for the j-th true mask element i, so data.flat[i] gets dvalues[j]
// with j = the number of true elements before i (an exclusive cumsum of the mask); this needs
// no count from the device.
std::vector<Tensor> cond_take_grad(const OpDef&, std::span<const Tensor> x, std::span<const Tensor>,
                                   std::span<const Tensor> dy, std::span<const bool> needs) {
    std::vector<Tensor> g(2);
    if (!needs[0])
        return g;
    const Tensor &data = x[0], &mask = x[1];
    size_t n = data.shape().total_nr_elems();
    if (n == 0)
        return {zeros_like(data), Tensor()};
    Tensor m = reshape(mask, {n});
    dnn::param::Cumsum cp;
    cp.exclusive = true;
    Tensor pos = run1<ops::Cumsum>(cp, {type_cvt(m, dnn::dtype::Int32)});
    dnn::param::IndexingMultiAxis ip;
    ip.axes = {0};
    Tensor picked = run1<ops::IndexingMultiAxisVec>(ip, {dy[0], pos});
    g[0] = reshape(where(m, picked), data.shape());
    return g;
}

}  // namespace

NM_REGISTER_GRAD(IndexingOneHot, one_hot_grad);
NM_REGISTER_GRAD(IndexingSetOneHot, set_one_hot_grad);
NM_REGISTER_GRAD(IndexingMultiAxisVec, multi_axis_vec_grad);
NM_REGISTER_GRAD(IndexingSetMultiAxisVec, set_multi_axis_vec_grad);
NM_REGISTER_GRAD(IndexingIncrMultiAxisVec, incr_multi_axis_vec_grad);
NM_REGISTER_GRAD(Gather, gather_grad);
NM_REGISTER_GRAD(Scatter, scatter_grad);
NM_REGISTER_GRAD(CondTake, cond_take_grad);

}  // namespace neomeg::imperative
