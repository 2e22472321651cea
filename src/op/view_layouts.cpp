#include "neomeg/op/view_layouts.h"

#include "neomeg/op/defs/views.h"

#include <algorithm>

namespace neomeg::param {

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

}  // namespace neomeg::param
