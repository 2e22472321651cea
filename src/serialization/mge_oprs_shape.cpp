// Conversions of MegEngine's shape and indexing operators: shapes read and computed
// (GetVarShape, Reshape, Broadcast), axes moved, added and removed (Dimshuffle,
// AxisAddRemove), joining and splitting (Concat, Split) and indexing (Subtensor,
// IndexingMultiAxisVec). MegEngine computes shapes in the graph (trace.dump keeps F.flatten's
// GetVarShape -> Subtensor -> Concat
// -> Reshape chain); NeoMeg's graph computes such values when the ops are inserted
// (graph/value_infer.h), so the converted chain gives static shapes again.
#include <algorithm>
#include <limits>
#include <set>

#include "mge_convert.h"
#include "neomeg/op/op_defs.h"
#include "neomeg/op/view_layouts.h"

namespace neomeg::serialization::mge {
namespace {

using dnn::str_cat;
using graph::VarNode;
using Inputs = std::span<VarNode* const>;
using Outs = std::vector<VarNode*>;
using Mode = dnn::param::Elemwise::Mode;

// OptionalAxisV1's "no axis" (MegEngine's MAX_NDIM).
constexpr int32_t kNoAxis = 7;

void require_inputs(Inputs in, size_t n) {
    require(in.size() == n, str_cat("takes ", n, " inputs, the file gives ", in.size()));
}

int32_t optional_axis(const fbs::Operator& op) {
    return param_of<fbs::OptionalAxisV1>(op, fbs::OperatorParam::OptionalAxisV1).axis();
}

// The shape of `v` as an int32 vector of `ndim` entries: leading 1s for the axes it lacks.
VarNode* shape_padded(Converter& c, VarNode* v, size_t ndim) {
    VarNode* s = c.insert1(ops::GetVarShape(), {v});
    size_t lack = ndim - v->shape().ndim;
    if (lack == 0)
        return s;
    return c.insert1(ops::Concat(dnn::param::Concat{0}),
                     {c.int_vector(std::vector<int32_t>(lack, 1)), s});
}

// GetVarShape of several vars is the shape they broadcast to (MegEngine's inference optimizer
// writes one to broadcast a convolution's output with its bias). It is computed from the inputs'
// shapes, entry by entry r = r == 1 ? s : r, so the graph still follows new input shapes.
VarNode* broadcast_shape(Converter& c, Inputs in) {
    size_t ndim = 0;
    for (VarNode* v : in) {
        require(!v->shape_dynamic(),
                "GetVarShape of several inputs, one of a data-dependent shape");
        ndim = std::max(ndim, v->shape().ndim);
    }
    for (size_t i = 0; i < ndim; ++i) {
        size_t want = 1;
        for (VarNode* v : in) {
            const auto& s = v->shape();
            if (s.ndim + i < ndim)
                continue;
            size_t d = s[s.ndim + i - ndim];
            require(d == 1 || want == 1 || d == want,
                    str_cat("GetVarShape of shapes that do not broadcast: ",
                            in[0]->shape().to_string(), " and ", v->shape().to_string()));
            if (d != 1)
                want = d;
        }
    }
    VarNode* r = shape_padded(c, in[0], ndim);
    VarNode* ones = c.int_vector(std::vector<int32_t>(ndim, 1));
    for (size_t i = 1; i < in.size(); ++i) {
        VarNode* s = shape_padded(c, in[i], ndim);
        VarNode* is_one =
                c.convert(c.insert1(ops::Elemwise(dnn::param::Elemwise{Mode::EQ}), {r, ones}),
                          dnn::dtype::Int32);
        VarNode* step = c.insert1(ops::Elemwise(dnn::param::Elemwise{Mode::SUB}), {s, r});
        step = c.insert1(ops::Elemwise(dnn::param::Elemwise{Mode::MUL}), {step, is_one});
        r = c.insert1(ops::Elemwise(dnn::param::Elemwise{Mode::ADD}), {r, step});
    }
    return r;
}

Outs get_var_shape(Converter& c, const fbs::Operator& op, Inputs in) {
    require(!in.empty(), "GetVarShape of no inputs");
    int32_t axis = optional_axis(op);
    if (in.size() > 1) {
        require(axis == kNoAxis, "GetVarShape of several inputs with an axis");
        return {broadcast_shape(c, in)};
    }
    dnn::param::GetVarShape p;
    if (axis != kNoAxis)
        p.axes = {axis_in(axis, in[0]->shape().ndim, "GetVarShape axis")};
    return {c.insert1(ops::GetVarShape(p), in)};
}

// Reshape to the value of the second input; with an axis, that entry of the value is ignored and
// inferred (MegEngine's unspecified axis), which is NeoMeg's -1.
Outs reshape(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 2);
    VarNode* shape = in[1];
    int32_t axis = optional_axis(op);
    if (axis != kNoAxis) {
        require(shape->shape().ndim == 1 && shape->dtype() == dnn::dtype::Int32,
                str_cat("Reshape's target ", shape->layout().to_string(), " is not int32 {ndim}"));
        size_t k = shape->shape()[0];
        int32_t a = axis_in(axis, k, "Reshape's unspecified axis");
        // A constant target is folded; one the graph computes from the input's shape
        // (F.flatten's GetVarShape -> Subtensor -> Concat) stays computed, so that the graph
        // still follows a new input shape when it is edited and built again
        // (megengine.utils.network's reset_batch_size); its value is a host value either way.
        auto value = c.int_value(shape);
        if (value && shape->kind() == graph::VarNode::Kind::Const) {
            std::vector<int32_t> v(value->begin(), value->end());
            v[a] = -1;
            shape = c.int_vector(v);
        } else {
            // shape * keep + inferred: the entry at `a` becomes -1 when the value is computed.
            std::vector<int32_t> keep(k, 1), inferred(k, 0);
            keep[a] = 0;
            inferred[a] = -1;
            shape = c.insert1(ops::Elemwise(dnn::param::Elemwise{Mode::FUSE_MUL_ADD3}),
                              {shape, c.int_vector(keep), c.int_vector(inferred)});
        }
    }
    return {c.insert1(ops::ReshapeTo(), {in[0], shape})};
}

Outs broadcast(Converter& c, const fbs::Operator&, Inputs in) {
    require_inputs(in, 2);
    return {c.insert1(ops::BroadcastTo(), {in[0], in[1]})};
}

// Dimshuffle's pattern permutes the input's axes, a -1 adding an axis of size 1 there.
Outs dimshuffle(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 1);
    const auto& p = param_of<fbs::Dimshuffle>(op, fbs::OperatorParam::Dimshuffle);
    require(p.pattern() != nullptr, "Dimshuffle without a pattern");
    require(p.ndim() == in[0]->shape().ndim,
            str_cat("Dimshuffle of ", p.ndim(), " dims applied to ", in[0]->shape().to_string()));
    std::vector<int32_t> perm, added;
    for (flatbuffers::uoffset_t i = 0; i < p.pattern()->size(); ++i) {
        int32_t a = p.pattern()->Get(i);
        require(a >= -1, str_cat("Dimshuffle pattern entry ", a));
        (a == -1 ? added : perm).push_back(a == -1 ? static_cast<int32_t>(i) : a);
    }
    VarNode* x = in[0];
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
        identity = identity && perm[i] == static_cast<int32_t>(i);
    if (!identity || perm.size() != x->shape().ndim)
        x = c.insert1(ops::Dimshuffle(param::Dimshuffle{perm}), {x});
    if (!added.empty())
        x = c.insert1(ops::AddAxis(param::AddAxis{added}), {x});
    return {x};
}

// AxisAddRemove: its steps in order, each on the shape the previous one left.
Outs axis_add_remove(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 1);
    const auto& p = param_of<fbs::AxisAddRemove>(op, fbs::OperatorParam::AxisAddRemove);
    require(p.desc() && p.desc()->size() > 0, "AxisAddRemove without steps");
    VarNode* x = in[0];
    for (const auto* d : *p.desc()) {
        std::vector<int32_t> axis = {d->axis()};
        if (d->method() == 0)
            x = c.insert1(ops::AddAxis(param::AddAxis{axis}), {x});
        else if (d->method() == 1)
            x = c.insert1(ops::RemoveAxis(param::RemoveAxis{axis}), {x});
        else
            fail(str_cat("AxisAddRemove method ", static_cast<int>(d->method())));
    }
    return {x};
}

Outs concat(Converter& c, const fbs::Operator& op, Inputs in) {
    require(!in.empty(), "Concat of no inputs");
    int32_t axis = param_of<fbs::Axis>(op, fbs::OperatorParam::Axis).axis();
    return {c.insert1(ops::Concat(dnn::param::Concat{axis}), in)};
}

// Split(src, size_1, ..., size_n) along the param's axis: each size a value the import knows (a
// constant, or computed from shapes), one output per size.
Outs split(Converter& c, const fbs::Operator& op, Inputs in) {
    require(in.size() >= 2, str_cat("Split of ", in.size(), " inputs: src and its part sizes"));
    const size_t ndim = in[0]->shape().ndim;
    int32_t axis =
            axis_in(param_of<fbs::Axis>(op, fbs::OperatorParam::Axis).axis(), ndim, "Split axis");
    dnn::param::Split p;
    p.axis = axis;
    for (size_t i = 1; i < in.size(); ++i) {
        auto v = c.int_value(in[i]);
        require(v && v->size() == 1,
                str_cat("Split's size ", i - 1, " is not one value known when the model loads"));
        require((*v)[0] >= 0 && (*v)[0] <= int64_t(in[0]->shape()[axis]),
                str_cat("Split size ", (*v)[0], " of an axis of ", in[0]->shape()[axis]));
        p.sizes.push_back(static_cast<int32_t>((*v)[0]));
    }
    return c.insert(ops::Split(p), {in.data(), 1});
}

Outs identity(Converter&, const fbs::Operator&, Inputs in) {
    require_inputs(in, 1);
    return {in[0]};
}

// ---- indexing ----

// One axis of a Subtensor: a slice (begin, end, step: each optional) or an index.
struct AxisIndex {
    int32_t axis = 0;
    VarNode* begin = nullptr;
    VarNode* end = nullptr;
    VarNode* step = nullptr;
    VarNode* idx = nullptr;
};

// The Subtensor's items with their input vars, axes normalised (each at most once).
std::vector<AxisIndex> axis_indices(const fbs::Operator& op, Inputs in) {
    const auto& p = param_of<fbs::IndexDescMaskDump>(op, fbs::OperatorParam::IndexDescMaskDump);
    require(in.size() >= 1, "indexing without a source");
    size_t ndim = in[0]->shape().ndim, next = 1;
    auto take = [&](bool present) -> VarNode* {
        if (!present)
            return nullptr;
        require(next < in.size(), "indexing items need more inputs than the file gives");
        return in[next++];
    };
    std::vector<AxisIndex> items;
    std::set<int32_t> seen;
    if (p.items())
        for (const auto* it : *p.items()) {
            AxisIndex a;
            a.axis = axis_in(it->axis(), ndim, "indexing axis");
            require(seen.insert(a.axis).second, str_cat("axis ", a.axis, " indexed twice"));
            a.begin = take(it->begin());
            a.end = take(it->end());
            a.step = take(it->step());
            a.idx = take(it->idx());
            require(!a.idx || !(a.begin || a.end || a.step), "an axis both sliced and indexed");
            items.push_back(a);
        }
    require(next == in.size(), str_cat("indexing items use ", next - 1,
                                       " index inputs, the file gives ", in.size() - 1));
    return items;
}

// The single integer a slice bound or an index holds, if the import knows it.
std::optional<int64_t> single_int(const Converter& c, const VarNode* v) {
    auto value = c.int_value(v);
    if (!value || value->size() != 1)
        return std::nullopt;
    return (*value)[0];
}

// x[:end] on axis 0 with `end` computed when the model runs (x[:n], n a count of the data; how
// F.vision.nms cuts NMSKeep's fixed-size output to the boxes kept): Python's bound (end + n where
// negative, then clipped to [0, n], n read from x's shape) as TakePrefix's count, so that the
// result's shape is known only when it runs.
VarNode* computed_prefix(Converter& c, VarNode* x, VarNode* end) {
    require(end->dtype() == dnn::dtype::Int32 && end->shape().total_nr_elems() == 1,
            "a slice end that is not one int32 value");
    auto ew = [&](Mode m, VarNode* a, VarNode* b) {
        return c.insert1(ops::Elemwise(dnn::param::Elemwise{m}), {a, b});
    };
    VarNode* e = c.insert1(ops::Reshape(param::Reshape{{1}}), {end});
    VarNode* n = c.insert1(ops::GetVarShape(dnn::param::GetVarShape{{0}}), {x});
    VarNode* zero = c.int_vector({0});
    VarNode* negative = c.convert(ew(Mode::LT, e, zero), dnn::dtype::Int32);
    e = ew(Mode::ADD, e, ew(Mode::MUL, negative, n));
    e = ew(Mode::MIN, ew(Mode::MAX, e, zero), n);
    return c.insert1(ops::TakePrefix(), {x, e});
}

// Subtensor (x[1:5:2, 3], ...): the items whose values the import knows become one Subtensor
// view op, whose layout rule resolves them as Python's slices; an index or a slice end computed
// when the model runs keeps its own op after it, the highest axis first so that an index
// removing its axis leaves the lower ones' numbers.
Outs subtensor(Converter& c, const fbs::Operator& op, Inputs in) {
    auto items = axis_indices(op, in);
    VarNode* x = in[0];
    require(!x->shape_dynamic(), "indexing a tensor of a shape known only when it runs");
    // A bound past int32 clamps as Python's would (no axis has 2^31 elements); an index must fit.
    auto bound = [&](VarNode* v, const char* what) -> int32_t {
        if (!v)
            return param::kSubtensorNone;
        auto value = single_int(c, v);
        require(value.has_value(), str_cat("a slice ", what, " computed when the model runs"));
        constexpr int64_t lo = param::kSubtensorNone + int64_t(1),
                          hi = std::numeric_limits<int32_t>::max();
        return static_cast<int32_t>(std::clamp(*value, lo, hi));
    };
    param::Subtensor known;
    std::vector<AxisIndex> computed;
    auto add = [&](int32_t axis, int32_t begin, int32_t end, int32_t step, bool index) {
        known.axis.push_back(axis);
        known.begin.push_back(begin);
        known.end.push_back(end);
        known.step.push_back(step);
        known.is_index.push_back(index ? 1 : 0);
    };
    for (const auto& it : items) {
        if (it.idx) {
            auto i = single_int(c, it.idx);
            if (!i) {
                computed.push_back(it);
                continue;
            }
            require(*i > param::kSubtensorNone && *i <= std::numeric_limits<int32_t>::max(),
                    str_cat("index ", *i, " is out of range for axis ", it.axis));
            add(it.axis, static_cast<int32_t>(*i), param::kSubtensorNone, param::kSubtensorNone,
                true);
        } else if (it.end && !single_int(c, it.end) && it.axis == 0) {
            computed.push_back(it);
        } else {
            add(it.axis, bound(it.begin, "begin"), bound(it.end, "end"), bound(it.step, "step"),
                false);
        }
    }
    if (!known.axis.empty())
        x = c.insert1(ops::Subtensor(known), {x});
    // The computed items' axes, less the axes the known indices removed before them.
    for (auto& it : computed) {
        int32_t removed = 0;
        for (size_t k = 0; k < known.axis.size(); ++k)
            removed += known.is_index[k] && known.axis[k] < it.axis;
        it.axis -= removed;
    }
    std::sort(computed.begin(), computed.end(),
              [](const AxisIndex& a, const AxisIndex& b) { return a.axis > b.axis; });
    for (const auto& it : computed) {
        if (!it.idx) {  // x[:end] of axis 0
            auto b = it.begin ? single_int(c, it.begin) : std::optional<int64_t>(0);
            auto st = it.step ? single_int(c, it.step) : std::optional<int64_t>(1);
            require(b == 0 && st == 1,
                    "a slice end computed when the model runs, with a begin or step (NeoMeg "
                    "imports x[:end] of axis 0)");
            x = computed_prefix(c, x, it.end);
            continue;
        }
        // An index computed when the model runs: a {1} tensor keeps the axis, then dropped.
        require(it.idx->dtype() == dnn::dtype::Int32 && it.idx->shape().total_nr_elems() == 1,
                "an index that is not one int32 value");
        dnn::param::IndexingMultiAxis p;
        p.axes = {it.axis};
        x = c.insert1(ops::IndexingMultiAxisVec(p), {x, it.idx});
        if (it.idx->shape().ndim == 1)
            x = c.insert1(ops::RemoveAxis(param::RemoveAxis{{it.axis}}), {x});
    }
    // MegEngine's graph has no 0-d results: indexing every axis away leaves shape {1}.
    if (x->shape().ndim == 0)
        x = c.insert1(ops::Reshape(param::Reshape{{1}}), {x});
    return {x};
}

// IndexingMultiAxisVec: integer index tensors on some axes, NumPy's advanced indexing.
Outs indexing_multi_axis_vec(Converter& c, const fbs::Operator& op, Inputs in) {
    auto items = axis_indices(op, in);
    require(!items.empty(), "IndexingMultiAxisVec without an index");
    dnn::param::IndexingMultiAxis p;
    p.axes.clear();  // the definition's default is {0}
    std::vector<VarNode*> inputs = {in[0]};
    for (const auto& it : items) {
        require(it.idx != nullptr, "IndexingMultiAxisVec with a slice");
        p.axes.push_back(it.axis);
        inputs.push_back(it.idx);
    }
    return {c.insert1(ops::IndexingMultiAxisVec(p), inputs)};
}

}  // namespace

void add_shape_conversions(ConversionTable& t) {
    for (const char* n : {"GetVarShape", "GetVarShapeV1"})
        t[n] = get_var_shape;
    for (const char* n : {"Reshape", "ReshapeV1"})
        t[n] = reshape;
    for (const char* n : {"Broadcast", "BroadcastV1"})
        t[n] = broadcast;
    t["Dimshuffle"] = dimshuffle;
    t["AxisAddRemove"] = axis_add_remove;
    t["Concat"] = concat;
    t["Split"] = split;
    t["Identity"] = identity;
    t["Subtensor"] = subtensor;
    t["IndexingMultiAxisVec"] = indexing_multi_axis_vec;
}

}  // namespace neomeg::serialization::mge
