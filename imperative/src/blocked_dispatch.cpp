// Eager mode's channel-blocked activations: the eager side of the graph's layout pass
// (src/graph/passes/propagate_channel_blocked.cpp), with the same member rules
// (neomeg/dnn/channel_blocked_rules.h) applied one op at a time, as eager mode cannot see who reads
// an output. On a comp node whose handle prefers a channel block b (x86: 8 on AVX2, 16 on
// AVX-512), for float32 tensors (N, C, spatial...) of 1 to 3 spatial dims:
// - ConvolutionForward and ConvBias (groups oneDNN blocks, a per-channel bias or none, z of dst's
//   shape or none) of at least b output channels write a blocked dst, reading a plain src as it
//   is (ConvBiasBlocked);
// - PoolingForward and BatchNormForward run blocked when their src is blocked; PoolingBackward
//   and BatchNormBackward when diff or src is; ConvolutionBackwardData when diff is;
//   ConvolutionBackwardFilter when src or diff is (its filter gradient stays plain);
// - Reduce along any axis but the channels' when its src is blocked (a per-channel result
//   comes back plain);
// - Elemwise on operands of dst's shape, per-channel ones and scalars runs blocked when one
//   operand is, where the padding channels keep their zeros (elemwise_keeps_padding: any mode
//   where C fills its blocks, else a zero-preserving one with a scalar only as a finite factor).
// The plain operand of a blocked op gets a ChannelBlock, except where it has fewer channels than
// a block (LeNet's 6): then the op runs plain, as the graph keeps such tensors plain. Anything
// else reads the plain form, which the tensor makes once and keeps (tensor.h).
#include "blocked_dispatch.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "neomeg/dnn/channel_blocked_rules.h"
#include "neomeg/imperative/eager_blocked.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/norm.h"
#include "neomeg/op/defs/pooling.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/tensor_shape.h"

#include "exec.h"
#include "shared_op.h"

namespace neomeg::imperative {
namespace {

namespace rules = dnn::channel_blocked;
using Mode = dnn::param::Elemwise::Mode;

bool& enabled_flag() {
    static bool on = [] {
        const char* v = std::getenv("NEOMEG_EAGER_BLOCKED");
        return !(v && std::strcmp(v, "0") == 0);
    }();
    return on;
}

// An input the dispatch reads: its blocked value, if it has one.
struct Operand {
    const Tensor* tensor;
    Tensor blocked;  // invalid: the value is plain
};

bool spatial_f32(const dnn::TensorLayout& l) {
    return rules::plain_spatial_f32(l, l.dtype);
}

// A plain tensor the kernels take as it is or convert: contiguous row-major (not channels-last).
bool plain_ok(const Tensor& t) {
    return t.layout().is_contiguous();
}

// A tensor of static shape that is spatial float32 and either blocked or plain and contiguous.
bool usable(const Operand& o) {
    return spatial_f32(o.tensor->layout()) && (o.blocked.valid() || plain_ok(*o.tensor));
}

// `o`'s value in the blocked layout of block b: its own, or a ChannelBlock of the plain one (of
// a contiguous copy where the plain one is strided).
dnn::TensorND blocked_nd(const Operand& o, size_t b, std::vector<Tensor>& keep) {
    if (o.blocked.valid())
        return o.blocked.dnn_tensor();
    dnn::param::ChannelBlock p;
    p.block = static_cast<uint32_t>(b);
    auto op = shared_op<ops::ChannelBlock>(p);
    CompNode cn = o.tensor->comp_node();
    // A strided one (a broadcast gradient) is gathered first: ChannelBlock's reorder reads
    // dense or strided memory, not zero strides.
    if (!plain_ok(*o.tensor))
        keep.push_back(o.tensor->contiguous());
    dnn::TensorND in = plain_ok(*o.tensor) ? o.tensor->dnn_tensor() : keep.back().dnn_tensor();
    keep.push_back(
            std::move(run_dnn_nd(*op, op->dnn_operator(cn.dnn_handle()), {&in, 1}, {}, cn)[0]));
    return keep.back().dnn_tensor();
}

// An absent optional input (ConvBiasBlocked's bias or z): ndim 0.
dnn::TensorND absent_nd() {
    static const uint64_t zero = 0;
    return {const_cast<uint64_t*>(&zero),
            dnn::TensorLayout(dnn::TensorShape{}, dnn::dtype::Float32), nullptr};
}

// Runs the blocked twin `op` on `in` and wraps each output whose index is in `blocked_out` as a
// blocked value of the plain op's layout.
template <class Op>
std::vector<Tensor> run_twin(const Op& op, std::span<const dnn::TensorND> in,
                             std::span<const dnn::TensorLayout> out_layouts,
                             std::span<const dnn::TensorShape> shapes, size_t blocked_out,
                             CompNode cn) {
    std::vector<Tensor> outs = run_dnn_nd(op, op.dnn_operator(cn.dnn_handle()), in, shapes, cn);
    for (size_t i = 0; i < outs.size(); ++i)
        if (i == blocked_out)
            outs[i] = Tensor::from_blocked(outs[i], out_layouts[i]);
    return outs;
}

constexpr size_t kNone = static_cast<size_t>(-1);

template <class ConvParam>
std::optional<std::vector<Tensor>> convolution(const ConvParam& p, std::span<const Operand> x,
                                               std::span<const dnn::TensorLayout> out, size_t b,
                                               CompNode cn) {
    const dnn::TensorLayout& dst = out[0];
    if (!usable(x[0]) || !spatial_f32(dst) || dst[1] < b || x[1].blocked.valid() ||
        x[1].tensor->dtype() != dnn::dtype::Float32 ||
        !rules::blockable_groups(p.group, x[0].tensor->shape()[1], dst[1], b))
        return std::nullopt;
    std::vector<Tensor> keep;
    dnn::TensorND in[4] = {
            x[0].blocked.valid() ? x[0].blocked.dnn_tensor() : x[0].tensor->dnn_tensor(),
            {},
            absent_nd(),
            absent_nd()};
    if constexpr (std::is_same_v<ConvParam, dnn::param::ConvBias>) {
        const Tensor &bias = *x[2].tensor, &z = *x[3].tensor;
        if (bias.shape().ndim != 0 && (x[2].blocked.valid() || bias.dtype() != dst.dtype ||
                                       !rules::per_channel_bias(bias.shape(), dst)))
            return std::nullopt;
        if (z.shape().ndim != 0 && (!z.layout().eq_shape(dst) || !usable(x[3])))
            return std::nullopt;
        if (bias.shape().ndim != 0)
            in[2] = bias.dnn_tensor();
        if (z.shape().ndim != 0)
            in[3] = blocked_nd(x[3], b, keep);
    }
    in[1] = x[1].tensor->dnn_tensor();
    auto op = shared_op<ops::ConvBiasBlocked>(rules::conv_bias_blocked_param(p, b, false));
    return run_twin(*op, in, out, {}, 0, cn);
}

// A one-element float32 operand's value is finite. Read only on a CPU comp node, where the
// read is a load (elsewhere it would wait for the device): others count as not finite.
bool finite_scalar(const Tensor& t) {
    if (t.comp_node().device_type() != CompNode::DeviceType::CPU)
        return false;
    float v;
    t.to_host(&v);
    return std::isfinite(v);
}

std::optional<std::vector<Tensor>> elemwise(Mode mode, std::span<const Operand> x,
                                            std::span<const dnn::TensorLayout> out, size_t b,
                                            CompNode cn) {
    const dnn::TensorLayout& dst = out[0];
    if (!spatial_f32(dst) || dst[1] < b)
        return std::nullopt;
    bool full = false;
    std::vector<const Tensor*> scalars;
    for (const Operand& o : x) {
        switch (rules::operand_kind(o.tensor->layout(), dst)) {
            case rules::Operand::Full:
                full = true;
                break;  // a strided plain one too (the mean's broadcast gradient): gathered
            case rules::Operand::PerChannel:
                if (!o.blocked.valid() && !plain_ok(*o.tensor))
                    return std::nullopt;
                break;
            case rules::Operand::Scalar:
                scalars.push_back(o.tensor);
                break;
            default:
                return std::nullopt;
        }
    }
    // The scalars' values are read only where the rule needs them (padding channels, MUL).
    if (!full || !rules::elemwise_keeps_padding(mode, dst[1], b, !scalars.empty(), [&] {
            return std::all_of(scalars.begin(), scalars.end(),
                               [](const Tensor* t) { return finite_scalar(*t); });
        }))
        return std::nullopt;
    std::vector<Tensor> keep;
    std::vector<dnn::TensorND> in;
    for (const Operand& o : x)
        in.push_back(rules::operand_kind(o.tensor->layout(), dst) == rules::Operand::Scalar
                             ? o.tensor->dnn_tensor()
                             : blocked_nd(o, b, keep));
    dnn::param::Elemwise p;
    p.mode = mode;
    return run_twin(*shared_op<ops::Elemwise>(p), in, out, {}, 0, cn);
}

// PoolingBackward (src, dst, diff) on blocked memory, when src or diff is blocked (a plain one of
// at least a block of channels is blocked for it): the plain operator itself, every operand a
// blocked tensor seen as planes (blocks_as_planes; x86 runs them as channels-last memory: MAX
// with tiling or 3x3/2 pad 1 windows in our loop, other windows and modes oneDNN's pooling
// backward), writing grad's blocked form. dst is read by MAX only (x86's oneDNN path checks it
// for NaNs); the averages get diff in its place, which spares converting a plain dst.
// Non-overlapping windows of at most 4 elements (LeNet's 2x2/2) stay plain: our own loop for
// them beat oneDNN's backward on planes by more than the conversions cost (2.8 vs 8.2 ms at
// batch 64; LeNet's eager step was 5% slower with them blocked; not measured again since the
// planes got a loop of their own).
bool small_tiling_window(const dnn::param::Pooling& p) {
    int64_t area = 1;
    for (size_t i = 0; i < p.window.size(); ++i) {
        if (p.window[i] != p.stride[i] || (i < p.padding.size() && p.padding[i] != 0))
            return false;
        area *= p.window[i];
    }
    return area <= 4;
}

std::optional<std::vector<Tensor>> pooling_backward(const ops::PoolingBackward& def,
                                                    std::span<const Operand> x,
                                                    std::span<const dnn::TensorLayout> out,
                                                    size_t b, CompNode cn) {
    const dnn::param::Pooling& p = def.param();
    const bool max = p.mode == dnn::param::Pooling::Mode::MAX;
    const Operand &src = x[0], &dst = x[1], &diff = x[2];
    if (small_tiling_window(p))
        return std::nullopt;
    if (!(src.blocked.valid() || diff.blocked.valid()) || !usable(src) || !usable(diff) ||
        (max && !usable(dst)) || !spatial_f32(out[0]) || src.tensor->shape()[1] < b)
        return std::nullopt;
    std::vector<Tensor> keep;
    dnn::TensorND in[3] = {blocked_nd(src, b, keep), {}, blocked_nd(diff, b, keep)};
    in[1] = max ? blocked_nd(dst, b, keep) : in[2];
    for (dnn::TensorND& t : in)
        t.layout = rules::blocks_as_planes(t.layout);
    Tensor grad = Tensor::empty(rules::blocked_shape(out[0], b), dnn::dtype::Float32, cn);
    dnn::TensorND grad_nd = grad.dnn_tensor();
    grad_nd.layout = rules::blocks_as_planes(grad_nd.layout);
    run_dnn_into(def, def.dnn_operator(cn.dnn_handle()), in, {&grad_nd, 1}, cn);
    std::vector<Tensor> outs;
    outs.push_back(Tensor::from_blocked(grad, out[0]));
    return outs;
}

// Reduce along an axis other than the channels' on a blocked src: the same axis of the blocked
// tensor (the block's lanes and the spatial axes keep their places), whose padding channels
// reduce to zero in every mode. A per-channel result ((1, C, 1...): a bias gradient's last
// step) comes back plain, a reorder of C elements, since what reads it (the optimiser, with the
// plain parameter) would run blocked and leave the parameter blocked; others stay blocked.
std::optional<std::vector<Tensor>> reduce(const dnn::param::Reduce& p, const Operand& src,
                                          std::span<const dnn::TensorLayout> out, CompNode cn) {
    const dnn::TensorLayout& plain = src.tensor->layout();
    const auto ndim = static_cast<int32_t>(plain.ndim);
    const int32_t axis = p.axis < 0 ? p.axis + ndim : p.axis;
    if (!src.blocked.valid() || axis == 1 || axis < 0 || axis >= ndim || !spatial_f32(out[0]))
        return std::nullopt;
    dnn::param::Reduce q = p;
    q.axis = axis;
    dnn::TensorND in = src.blocked.dnn_tensor();
    auto op = shared_op<ops::Reduce>(q);
    std::vector<Tensor> outs = run_twin(*op, {&in, 1}, out, {}, 0, cn);
    if (out[0].total_nr_elems() == out[0][1])
        outs[0] = unblock(outs[0].blocked(), out[0]);
    return outs;
}

}  // namespace

bool eager_blocked_enabled() {
    return enabled_flag();
}

void set_eager_blocked(bool on) {
    enabled_flag() = on;
}

bool blocked_candidate(const OpDef& def) {
    switch (def.id()) {
        case ops::ConvolutionForward::kId:
        case ops::ConvBias::kId:
        case ops::PoolingForward::kId:
        case ops::PoolingBackward::kId:
        case ops::BatchNormForward::kId:
        case ops::BatchNormBackward::kId:
        case ops::ConvolutionBackwardData::kId:
        case ops::ConvolutionBackwardFilter::kId:
        case ops::Elemwise::kId:
        case ops::Reduce::kId:
            return enabled_flag();
        default:
            return false;
    }
}

std::optional<std::vector<Tensor>> run_blocked(const OpDef& def, std::span<const Tensor> inputs,
                                               std::span<const dnn::TensorLayout> out_layouts) {
    const OpId id = def.id();
    const bool convolution_op = id == ops::ConvolutionForward::kId || id == ops::ConvBias::kId;
    // The other members join only a blocked input: most elementwise calls stop here.
    if (!convolution_op &&
        std::none_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.is_blocked(); }))
        return std::nullopt;
    const CompNode cn = inputs[0].comp_node();
    const size_t b = cn.dnn_handle()->preferred_channel_block();
    if (b == 0)
        return std::nullopt;
    std::vector<Operand> x;
    x.reserve(inputs.size());
    bool any_blocked = false;
    for (const Tensor& t : inputs) {
        x.push_back({&t, t.blocked()});
        any_blocked |= x.back().blocked.valid();
    }
    if (id == ops::ConvolutionForward::kId)
        return convolution(static_cast<const ops::ConvolutionForward&>(def).param(), x, out_layouts,
                           b, cn);
    if (id == ops::ConvBias::kId)
        return convolution(static_cast<const ops::ConvBias&>(def).param(), x, out_layouts, b, cn);
    if (!any_blocked)  // another copy materialised it meanwhile
        return std::nullopt;
    if (id == ops::Elemwise::kId)
        return elemwise(static_cast<const ops::Elemwise&>(def).param().mode, x, out_layouts, b, cn);
    for (const Tensor& t : inputs)
        if (t.dtype() != dnn::dtype::Float32)
            return std::nullopt;
    std::vector<Tensor> keep;
    if (id == ops::PoolingForward::kId) {
        if (!spatial_f32(out_layouts[0]))
            return std::nullopt;
        dnn::TensorND in = x[0].blocked.dnn_tensor();
        auto op = shared_op<ops::PoolingBlocked>(
                static_cast<const ops::PoolingForward&>(def).param());
        return run_twin(*op, {&in, 1}, out_layouts, {}, 0, cn);
    }
    if (id == ops::Reduce::kId)
        return reduce(static_cast<const ops::Reduce&>(def).param(), x[0], out_layouts, cn);
    if (id == ops::PoolingBackward::kId)
        return pooling_backward(static_cast<const ops::PoolingBackward&>(def), x, out_layouts, b,
                                cn);
    if (id == ops::BatchNormForward::kId) {
        if (!x[0].blocked.valid() || !spatial_f32(out_layouts[0]))
            return std::nullopt;
        std::vector<dnn::TensorND> in{x[0].blocked.dnn_tensor()};
        for (size_t i = 1; i < inputs.size(); ++i)
            in.push_back(inputs[i].dnn_tensor());
        auto op = shared_op<ops::BatchNormForwardBlocked>(
                static_cast<const ops::BatchNormForward&>(def).param());
        return run_twin(*op, in, out_layouts, {}, 0, cn);
    }
    if (id == ops::BatchNormBackward::kId) {  // (diff, src, scale, saved_mean, saved_inv_std)
        if (!usable(x[0]) || !usable(x[1]) || !spatial_f32(out_layouts[0]) ||
            inputs[1].shape()[1] < b)
            return std::nullopt;
        std::vector<dnn::TensorND> in{blocked_nd(x[0], b, keep), blocked_nd(x[1], b, keep)};
        for (size_t i = 2; i < inputs.size(); ++i)
            in.push_back(inputs[i].dnn_tensor());
        auto op = shared_op<ops::BatchNormBackwardBlocked>(
                static_cast<const ops::BatchNormBackward&>(def).param());
        return run_twin(*op, in, out_layouts, {}, 0, cn);
    }
    if (id == ops::ConvolutionBackwardData::kId) {  // (filter, diff) -> src-shaped grad
        const auto& p = static_cast<const ops::ConvolutionBackwardData&>(def).param();
        const dnn::TensorLayout& grad = out_layouts[0];
        if (!x[1].blocked.valid() || x[0].blocked.valid() || !spatial_f32(grad) || grad[1] < b ||
            !rules::blockable_groups(p.group, grad[1], inputs[1].shape()[1], b))
            return std::nullopt;
        dnn::TensorND in[2] = {inputs[0].dnn_tensor(), x[1].blocked.dnn_tensor()};
        const dnn::TensorShape grad_shape = rules::blocked_shape(grad, b);
        auto op = shared_op<ops::ConvolutionBackwardDataBlocked>(p);
        return run_twin(*op, in, out_layouts, {&grad_shape, 1}, 0, cn);
    }
    if (id == ops::ConvolutionBackwardFilter::kId) {  // (src, diff) -> the filter's gradient
        const auto& p = static_cast<const ops::ConvolutionBackwardFilter&>(def).param();
        // A plain src may be narrow (the image: converting it costs less than the plain
        // kernel's reorders of the wide gradient); a plain diff must be wide.
        if (!usable(x[0]) || !usable(x[1]) || (!x[1].blocked.valid() && inputs[1].shape()[1] < b) ||
            !rules::blockable_groups(p.group, inputs[0].shape()[1], inputs[1].shape()[1], b))
            return std::nullopt;
        dnn::TensorND in[2] = {blocked_nd(x[0], b, keep), blocked_nd(x[1], b, keep)};
        const dnn::TensorShape filter_shape = out_layouts[0];
        auto op = shared_op<ops::ConvolutionBackwardFilterBlocked>(p);
        return run_twin(*op, in, out_layouts, {&filter_shape, 1}, kNone, cn);
    }
    return std::nullopt;
}

Tensor unblock(const Tensor& blocked, const dnn::TensorLayout& plain) {
    dnn::param::ChannelUnblock p;
    p.channels = static_cast<uint32_t>(plain[1]);
    auto op = shared_op<ops::ChannelUnblock>(p);
    CompNode cn = blocked.comp_node();
    dnn::TensorND in = blocked.dnn_tensor();
    return run_dnn_nd(*op, op->dnn_operator(cn.dnn_handle()), {&in, 1}, {}, cn)[0];
}

}  // namespace neomeg::imperative
