// Shapes and strided layouts. Strides are in elements (not bytes); a stride of 0 repeats one
// element along that axis, which is how broadcasting is expressed without copying.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "neomeg/dnn/dtype.h"

namespace neomeg::dnn {

class TensorShape {
public:
    static constexpr size_t MAX_NDIM = 7;

    TensorShape() = default;
    TensorShape(std::initializer_list<size_t> dims);
    explicit TensorShape(const std::vector<size_t>& dims);

    size_t ndim = 0;
    std::array<size_t, MAX_NDIM> shape{};

    size_t operator[](size_t i) const { return shape[i]; }
    size_t& operator[](size_t i) { return shape[i]; }
    // Product of all dims; 1 for a scalar (ndim == 0).
    size_t total_nr_elems() const;
    bool is_empty() const;  // some dim is 0
    bool is_scalar() const { return ndim == 0; }
    bool eq_shape(const TensorShape& rhs) const;
    std::vector<size_t> to_vector() const { return {shape.begin(), shape.begin() + ndim}; }
    std::string to_string() const;  // "{2,3,4}"
};

class TensorLayout : public TensorShape {
public:
    std::array<ptrdiff_t, MAX_NDIM> stride{};
    DType dtype;

    TensorLayout() = default;
    // Contiguous layout of the given shape.
    TensorLayout(const TensorShape& shape, DType dtype);
    TensorLayout(const TensorShape& shape, const std::vector<ptrdiff_t>& strides, DType dtype);

    // Resets strides to row-major contiguous; returns total number of elements.
    size_t init_contiguous_stride();
    bool is_contiguous() const;
    // Contiguous up to broadcast axes of stride 0 (the memory of a broadcast tensor is dense).
    bool is_physical_contiguous() const;
    bool eq_layout(const TensorLayout& rhs) const;  // shape, strides and dtype

    // Smallest and one-past-largest element offsets reachable from the base pointer; an empty
    // layout spans nothing.
    std::pair<ptrdiff_t, ptrdiff_t> span_elems() const;
    size_t span_bytes() const;
    size_t access_bytes() const { return dtype.size(total_nr_elems()); }

    // Merges adjacent axes that are contiguous with each other and drops size-1 axes; the result
    // addresses the same elements in the same order.
    TensorLayout collapse_contiguous() const;
    // Broadcasts to `target` following NumPy's rules (trailing axes aligned); throws ShapeError
    // when a dim is neither equal nor 1.
    TensorLayout broadcast(const TensorShape& target) const;
    // Permutes axes: result axis i is this axis perm[i].
    TensorLayout dimshuffle(const std::vector<size_t>& perm) const;
    // Reshape without copying; throws ShapeError when the element count differs or the strides
    // cannot express the new shape. Use try_reshape to test.
    TensorLayout reshape(const TensorShape& shape) const;
    bool try_reshape(TensorLayout& result, const TensorShape& shape) const;
    TensorLayout add_axis(size_t axis) const;     // new axis of size 1 at `axis`
    TensorLayout remove_axis(size_t axis) const;  // drops `axis`, which must be size 1 or broadcast

    std::string to_string() const;  // "{2,3(3,1)} float32"
};

// NumPy broadcast of several shapes; throws ShapeError naming all of them when incompatible.
TensorShape broadcast_shapes(const std::vector<TensorShape>& shapes);

}  // namespace neomeg::dnn
