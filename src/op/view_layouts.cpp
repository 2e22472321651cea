#include "neomeg/op/view_layouts.h"

#include "neomeg/op/defs/views.h"

#include <algorithm>

namespace neomeg::param {

using dnn::IndexError;
using dnn::ParamError;
using dnn::ShapeError;
using dnn::TensorLayout;
using dnn::TensorShape;

namespace {

// Normalises a possibly negative axis against `ndim`; ParamError naming def when out of range.
size_t normalize_axis(const OpDef& def, int32_t axis, size_t ndim) {
    int64_t a = axis < 0 ? axis + static_cast<int64_t>(ndim) : axis;
    NM_THROW_IF(a < 0 || a >= static_cast<int64_t>(ndim), ParamError, def.to_string(), ": axis ",
                axis, " is out of range for ", ndim, " dims");
    return static_cast<size_t>(a);
}

}  // namespace

std::optional<ViewLayout> view_layout_of(const OpDef& def, const Reshape& p,
                                         const TensorLayout& src) {
    NM_THROW_IF(p.shape.size() > TensorShape::MAX_NDIM, ParamError, def.to_string(), ": more than ",
                TensorShape::MAX_NDIM, " dims");
    TensorShape target;
    target.ndim = p.shape.size();
    int infer = -1;
    size_t known = 1;
    for (size_t i = 0; i < p.shape.size(); ++i) {
        int32_t d = p.shape[i];
        if (d == -1) {
            NM_THROW_IF(infer >= 0, ParamError, def.to_string(), ": only one dim may be -1");
            infer = static_cast<int>(i);
            continue;
        }
        NM_THROW_IF(d < 0, ParamError, def.to_string(), ": negative dim ", d);
        target[i] = static_cast<size_t>(d);
        known *= target[i];
    }
    size_t total = src.total_nr_elems();
    if (infer >= 0) {
        NM_THROW_IF(known == 0 || total % known, ShapeError, def.to_string(), ": cannot reshape ",
                    src.TensorShape::to_string(), " (", total, " elements) with a -1 dim");
        target[infer] = total / known;
    }
    NM_THROW_IF(target.total_nr_elems() != total, ShapeError, def.to_string(), ": cannot reshape ",
                src.TensorShape::to_string(), " (", total, " elements) to ", target.to_string());
    TensorLayout out;
    if (!src.try_reshape(out, target))
        return std::nullopt;
    return ViewLayout{out, 0};
}

std::optional<ViewLayout> view_layout_of(const OpDef& def, const Broadcast& p,
                                         const TensorLayout& src) {
    NM_THROW_IF(
            p.shape.size() > TensorShape::MAX_NDIM ||
                    std::any_of(p.shape.begin(), p.shape.end(), [](int32_t d) { return d < 0; }),
            ParamError, def.to_string(), ": invalid target shape");
    TensorShape target(std::vector<size_t>(p.shape.begin(), p.shape.end()));
    try {
        return ViewLayout{src.broadcast(target), 0};
    } catch (const ShapeError& e) {
        throw ShapeError(dnn::str_cat(def.to_string(), ": ", e.what()));
    }
}

std::optional<ViewLayout> view_layout_of(const OpDef& def, const Dimshuffle& p,
                                         const TensorLayout& src) {
    std::vector<size_t> perm;
    for (int32_t a : p.pattern)
        perm.push_back(a < 0 ? src.ndim : static_cast<size_t>(a));  // negative: rejected below
    try {
        return ViewLayout{src.dimshuffle(perm), 0};
    } catch (const ShapeError& e) {
        throw ShapeError(dnn::str_cat(def.to_string(), ": ", e.what()));
    }
}

std::optional<ViewLayout> view_layout_of(const OpDef& def, const AddAxis& p,
                                         const TensorLayout& src) {
    size_t out_ndim = src.ndim + p.axis.size();
    NM_THROW_IF(out_ndim > TensorShape::MAX_NDIM, ParamError, def.to_string(), ": result of ",
                out_ndim, " dims exceeds ", TensorShape::MAX_NDIM);
    std::vector<size_t> axes;
    for (int32_t a : p.axis)
        axes.push_back(normalize_axis(def, a, out_ndim));
    std::sort(axes.begin(), axes.end());
    NM_THROW_IF(std::adjacent_find(axes.begin(), axes.end()) != axes.end(), ParamError,
                def.to_string(), ": repeated axis");
    TensorLayout out = src;
    for (size_t a : axes)
        out = out.add_axis(a);
    return ViewLayout{out, 0};
}

std::optional<ViewLayout> view_layout_of(const OpDef& def, const RemoveAxis& p,
                                         const TensorLayout& src) {
    std::vector<size_t> axes;
    for (int32_t a : p.axis)
        axes.push_back(normalize_axis(def, a, src.ndim));
    std::sort(axes.begin(), axes.end());
    NM_THROW_IF(std::adjacent_find(axes.begin(), axes.end()) != axes.end(), ParamError,
                def.to_string(), ": repeated axis");
    TensorLayout out = src;
    for (size_t i = axes.size(); i-- > 0;) {
        NM_THROW_IF(src.shape[axes[i]] != 1, ShapeError, def.to_string(), ": axis ", axes[i],
                    " of ", src.TensorShape::to_string(), " has size ", src.shape[axes[i]],
                    ", not 1");
        out = out.remove_axis(axes[i]);
    }
    return ViewLayout{out, 0};
}

namespace {

// Python's PySlice_AdjustIndices for one bound: negative counts from the end, then clamped to
// [0, n] (a positive step) or [-1, n - 1] (a negative one); None is the end the step starts from
// (`start`) or runs to.
ptrdiff_t slice_bound(int32_t v, ptrdiff_t n, ptrdiff_t step, bool start) {
    if (v == kSubtensorNone) {
        if (start)
            return step > 0 ? 0 : n - 1;
        return step > 0 ? n : -1;
    }
    ptrdiff_t b = v;
    if (b < 0)
        return std::max<ptrdiff_t>(b + n, step > 0 ? 0 : -1);
    return std::min<ptrdiff_t>(b, step > 0 ? n : n - 1);
}

}  // namespace

SubtensorAxes resolve_subtensor(const OpDef& def, const Subtensor& p, const TensorShape& shape) {
    size_t items = p.axis.size();
    NM_THROW_IF(p.begin.size() != items || p.end.size() != items || p.step.size() != items ||
                        p.is_index.size() != items,
                ParamError, def.to_string(),
                ": axis, begin, end, step and is_index differ in length");
    SubtensorAxes out{};
    for (size_t a = 0; a < shape.ndim; ++a)
        out[a].length = shape[a];
    unsigned seen = 0;  // a bit per axis
    for (size_t i = 0; i < items; ++i) {
        size_t a = normalize_axis(def, p.axis[i], shape.ndim);
        NM_THROW_IF(seen >> a & 1u, ParamError, def.to_string(), ": axis ", a, " is indexed twice");
        seen |= 1u << a;
        auto n = static_cast<ptrdiff_t>(shape[a]);
        SubtensorAxis& r = out[a];
        if (p.is_index[i] != 0) {
            NM_THROW_IF(p.is_index[i] != 1, ParamError, def.to_string(), ": is_index ",
                        p.is_index[i], " is neither 0 nor 1");
            NM_THROW_IF(p.end[i] != kSubtensorNone || p.step[i] != kSubtensorNone ||
                                p.begin[i] == kSubtensorNone,
                        ParamError, def.to_string(),
                        ": an index item takes a begin and no end or step");
            ptrdiff_t k = p.begin[i] < 0 ? p.begin[i] + n : p.begin[i];
            NM_THROW_IF(k < 0 || k >= n, IndexError, def.to_string(), ": index ", p.begin[i],
                        " is out of bounds for axis ", a, " with size ", n);
            r = {k, 1, 1, true};
            continue;
        }
        ptrdiff_t step = p.step[i] == kSubtensorNone ? 1 : p.step[i];
        NM_THROW_IF(step == 0, ParamError, def.to_string(), ": slice step cannot be zero");
        ptrdiff_t b = slice_bound(p.begin[i], n, step, true);
        ptrdiff_t e = slice_bound(p.end[i], n, step, false);
        ptrdiff_t len = step > 0 ? (e > b ? (e - b - 1) / step + 1 : 0)
                                 : (b > e ? (b - e - 1) / -step + 1 : 0);
        // An empty slice starts at 0: its offset then stays inside src.
        r = {len ? b : 0, step, static_cast<size_t>(len), false};
    }
    return out;
}

std::optional<ViewLayout> view_layout_of(const OpDef& def, const Subtensor& p,
                                         const TensorLayout& src) {
    auto axes = resolve_subtensor(def, p, src);
    TensorLayout out = src;
    out.ndim = 0;
    ptrdiff_t offset = 0;
    for (size_t a = 0; a < src.ndim; ++a) {
        const SubtensorAxis& r = axes[a];
        offset += r.begin * src.stride[a];
        if (r.drop)
            continue;
        out.shape[out.ndim] = r.length;
        out.stride[out.ndim] = r.length == 1 ? src.stride[a] : src.stride[a] * r.step;
        ++out.ndim;
    }
    return ViewLayout{out, offset};
}

}  // namespace neomeg::param
