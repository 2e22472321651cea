#include "neomeg/dnn/layout.h"

#include <algorithm>
#include <sstream>

#include "neomeg/dnn/errors.h"

namespace neomeg::dnn {

TensorShape::TensorShape(std::initializer_list<size_t> dims)
    : TensorShape(std::vector<size_t>(dims)) {}

TensorShape::TensorShape(const std::vector<size_t>& dims) {
    NM_THROW_IF(dims.size() > MAX_NDIM, ShapeError, "shape of ", dims.size(),
                " dims exceeds the maximum of ", MAX_NDIM);
    ndim = dims.size();
    std::copy(dims.begin(), dims.end(), shape.begin());
}

size_t TensorShape::total_nr_elems() const {
    // No tensor of 2^56 elements fits any memory, and below that bound the byte count of every
    // dtype (at most 8 bytes an element) fits size_t: a product that wrapped around would make a
    // tensor whose buffer is smaller than its shape.
    constexpr size_t kMaxElems = size_t(1) << 56;
    size_t n = 1;
    for (size_t i = 0; i < ndim; ++i) {
        if (shape[i] == 0)
            return 0;
        NM_THROW_IF(__builtin_mul_overflow(n, shape[i], &n) || n > kMaxElems, ShapeError, "shape ",
                    to_string(), " has more than 2^56 elements");
    }
    return n;
}

bool TensorShape::is_empty() const {
    return std::find(shape.begin(), shape.begin() + ndim, size_t(0)) != shape.begin() + ndim;
}

bool TensorShape::eq_shape(const TensorShape& rhs) const {
    return ndim == rhs.ndim && std::equal(shape.begin(), shape.begin() + ndim, rhs.shape.begin());
}

std::string TensorShape::to_string() const {
    std::ostringstream os;
    os << '{';
    for (size_t i = 0; i < ndim; ++i)
        os << (i ? "," : "") << shape[i];
    os << '}';
    return os.str();
}

TensorLayout::TensorLayout(const TensorShape& s, DType dt) : TensorShape(s), dtype(dt) {
    init_contiguous_stride();
}

TensorLayout::TensorLayout(const TensorShape& s, const std::vector<ptrdiff_t>& strides, DType dt)
    : TensorShape(s), dtype(dt) {
    NM_THROW_IF(strides.size() != ndim, ShapeError, "shape ", s.to_string(), " given ",
                strides.size(), " strides");
    std::copy(strides.begin(), strides.end(), stride.begin());
}

size_t TensorLayout::init_contiguous_stride() {
    ptrdiff_t acc = 1;
    for (size_t i = ndim; i-- > 0;) {
        stride[i] = acc;
        acc *= static_cast<ptrdiff_t>(std::max<size_t>(shape[i], 1));
    }
    return total_nr_elems();
}

bool TensorLayout::is_contiguous() const {
    ptrdiff_t expect = 1;
    for (size_t i = ndim; i-- > 0;) {
        if (shape[i] != 1 && stride[i] != expect)
            return false;
        expect *= static_cast<ptrdiff_t>(shape[i]);
    }
    return true;
}

bool TensorLayout::is_physical_contiguous() const {
    ptrdiff_t expect = 1;
    for (size_t i = ndim; i-- > 0;) {
        if (shape[i] == 1 || stride[i] == 0)
            continue;
        if (stride[i] != expect)
            return false;
        expect *= static_cast<ptrdiff_t>(shape[i]);
    }
    return true;
}

bool TensorLayout::eq_layout(const TensorLayout& rhs) const {
    if (dtype != rhs.dtype || !eq_shape(rhs))
        return false;
    for (size_t i = 0; i < ndim; ++i)
        if (shape[i] != 1 && stride[i] != rhs.stride[i])
            return false;
    return true;
}

std::pair<ptrdiff_t, ptrdiff_t> TensorLayout::span_elems() const {
    if (is_empty())
        return {0, 0};
    ptrdiff_t lo = 0, hi = 0;
    for (size_t i = 0; i < ndim; ++i) {
        ptrdiff_t ext = stride[i] * static_cast<ptrdiff_t>(shape[i] - 1);
        (ext < 0 ? lo : hi) += ext;
    }
    return {lo, hi + 1};
}

size_t TensorLayout::span_bytes() const {
    auto [lo, hi] = span_elems();
    return dtype.size(static_cast<size_t>(hi - lo));
}

TensorLayout TensorLayout::collapse_contiguous() const {
    TensorLayout r;
    r.dtype = dtype;
    if (is_empty()) {
        r.ndim = 1;
        r.shape[0] = 0;
        r.stride[0] = 1;
        return r;
    }
    // Walk from the innermost axis outwards, merging axis i into the current run when
    // stride[i] == stride[run] * shape[run].
    for (size_t i = ndim; i-- > 0;) {
        if (shape[i] == 1)
            continue;
        if (r.ndim && stride[i] == r.stride[0] * static_cast<ptrdiff_t>(r.shape[0])) {
            r.shape[0] *= shape[i];
            continue;
        }
        std::copy_backward(r.shape.begin(), r.shape.begin() + r.ndim, r.shape.begin() + r.ndim + 1);
        std::copy_backward(r.stride.begin(), r.stride.begin() + r.ndim,
                           r.stride.begin() + r.ndim + 1);
        r.shape[0] = shape[i];
        r.stride[0] = stride[i];
        ++r.ndim;
    }
    if (!r.ndim) {
        r.ndim = 1;
        r.shape[0] = 1;
        r.stride[0] = 1;
    }
    return r;
}

TensorShape broadcast_shapes(const std::vector<TensorShape>& shapes) {
    TensorShape out;
    for (auto& s : shapes)
        out.ndim = std::max(out.ndim, s.ndim);
    for (size_t i = 0; i < out.ndim; ++i)
        out.shape[i] = 1;
    for (auto& s : shapes) {
        size_t off = out.ndim - s.ndim;
        for (size_t i = 0; i < s.ndim; ++i) {
            size_t& o = out.shape[off + i];
            if (s.shape[i] == o || s.shape[i] == 1)
                continue;
            if (o == 1) {
                o = s.shape[i];
                continue;
            }
            std::string all;
            for (auto& t : shapes)
                all += (all.empty() ? "" : ", ") + t.to_string();
            throw ShapeError(str_cat("shapes ", all, " cannot be broadcast together"));
        }
    }
    return out;
}

TensorLayout TensorLayout::broadcast(const TensorShape& target) const {
    NM_THROW_IF(target.ndim < ndim, ShapeError, "cannot broadcast ", to_string(), " to ",
                target.to_string(), ": target has fewer dims");
    TensorLayout r;
    r.dtype = dtype;
    r.ndim = target.ndim;
    size_t off = target.ndim - ndim;
    for (size_t i = 0; i < target.ndim; ++i) {
        r.shape[i] = target.shape[i];
        if (i < off) {
            r.stride[i] = 0;
            continue;
        }
        size_t s = shape[i - off];
        if (s == target.shape[i]) {
            r.stride[i] = s == 1 ? 0 : stride[i - off];
        } else {
            NM_THROW_IF(s != 1, ShapeError, "cannot broadcast ", to_string(), " to ",
                        target.to_string());
            r.stride[i] = 0;
        }
    }
    return r;
}

TensorLayout TensorLayout::dimshuffle(const std::vector<size_t>& perm) const {
    NM_THROW_IF(perm.size() != ndim, ShapeError, "dimshuffle of ", to_string(), " needs ", ndim,
                " axes, got ", perm.size());
    std::vector<bool> used(ndim, false);
    TensorLayout r = *this;
    for (size_t i = 0; i < ndim; ++i) {
        NM_THROW_IF(perm[i] >= ndim || used[perm[i]], ShapeError, "dimshuffle of ", to_string(),
                    ": axis ", perm[i], " at position ", i, " is out of range or repeated");
        used[perm[i]] = true;
        r.shape[i] = shape[perm[i]];
        r.stride[i] = stride[perm[i]];
    }
    return r;
}

bool TensorLayout::try_reshape(TensorLayout& result, const TensorShape& target) const {
    if (target.total_nr_elems() != total_nr_elems())
        return false;
    result = TensorLayout(target, dtype);
    if (is_empty() || target.ndim == 0)
        return true;
    // Split both shapes into groups with equal element counts; each source group must be one
    // contiguous run so the target group can be given strides within it.
    TensorLayout src = *this;
    size_t si = 0, ti = 0;
    while (si < src.ndim || ti < target.ndim) {
        // skip size-1 axes on either side
        if (si < src.ndim && src.shape[si] == 1) {
            ++si;
            continue;
        }
        if (ti < target.ndim && target.shape[ti] == 1) {
            ++ti;  // keeps the contiguous stride; any value is valid for size 1
            continue;
        }
        if (si >= src.ndim || ti >= target.ndim)
            return false;
        size_t s_begin = si, t_begin = ti;
        size_t s_prod = src.shape[si++], t_prod = target.shape[ti++];
        while (s_prod != t_prod) {
            if (s_prod < t_prod) {
                if (si >= src.ndim)
                    return false;
                s_prod *= src.shape[si++];
            } else {
                if (ti >= target.ndim)
                    return false;
                t_prod *= target.shape[ti++];
            }
        }
        // Source axes [s_begin, si) must form one run (ignoring size-1 axes); the run's innermost
        // stride then becomes the target group's innermost stride.
        size_t last = si;  // the previous (inner) non-1 axis; si means none yet
        for (size_t k = si; k-- > s_begin;) {
            if (src.shape[k] == 1)
                continue;
            if (last != si &&
                src.stride[k] != src.stride[last] * static_cast<ptrdiff_t>(src.shape[last]))
                return false;
            last = k;
        }
        ptrdiff_t inner = 0;
        for (size_t k = si; k-- > s_begin;)
            if (src.shape[k] != 1) {
                inner = src.stride[k];
                break;
            }
        // assign target strides from the innermost source stride
        ptrdiff_t acc = inner;
        for (size_t k = ti; k-- > t_begin;) {
            result.stride[k] = acc;
            acc *= static_cast<ptrdiff_t>(target.shape[k]);
        }
    }
    return true;
}

TensorLayout TensorLayout::reshape(const TensorShape& target) const {
    TensorLayout r;
    NM_THROW_IF(target.total_nr_elems() != total_nr_elems(), ShapeError, "cannot reshape ",
                to_string(), " to ", target.to_string(), ": element counts differ");
    NM_THROW_IF(!try_reshape(r, target), ShapeError, "cannot reshape ", to_string(), " to ",
                target.to_string(), " without copying: strides do not allow it");
    return r;
}

TensorLayout TensorLayout::add_axis(size_t axis) const {
    NM_THROW_IF(axis > ndim || ndim >= MAX_NDIM, ShapeError, "cannot add axis ", axis, " to ",
                to_string());
    TensorLayout r = *this;
    for (size_t i = ndim; i > axis; --i) {
        r.shape[i] = shape[i - 1];
        r.stride[i] = stride[i - 1];
    }
    r.shape[axis] = 1;
    r.stride[axis] = axis < ndim ? stride[axis] * static_cast<ptrdiff_t>(shape[axis]) : 1;
    ++r.ndim;
    return r;
}

TensorLayout TensorLayout::remove_axis(size_t axis) const {
    NM_THROW_IF(axis >= ndim, ShapeError, "cannot remove axis ", axis, " of ", to_string());
    NM_THROW_IF(shape[axis] != 1, ShapeError, "cannot remove axis ", axis, " of ", to_string(),
                ": it has size ", shape[axis]);
    TensorLayout r = *this;
    for (size_t i = axis; i + 1 < ndim; ++i) {
        r.shape[i] = shape[i + 1];
        r.stride[i] = stride[i + 1];
    }
    --r.ndim;
    return r;
}

std::string TensorLayout::to_string() const {
    std::ostringstream os;
    os << '{';
    for (size_t i = 0; i < ndim; ++i)
        os << (i ? "," : "") << shape[i] << '(' << stride[i] << ')';
    os << "} " << dtype.full_name();
    return os.str();
}

}  // namespace neomeg::dnn
