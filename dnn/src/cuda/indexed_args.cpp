#include "src/cuda/indexed_args.h"

#include "src/common/indexing.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

kern::IndexedArgs common(kern::IndexedMode mode, const TensorLayout& walk, const TensorND& indexed,
                         const TensorND& plain) {
    kern::IndexedArgs a{};
    a.mode = mode;
    a.ndim = static_cast<int>(walk.ndim);
    for (size_t d = 0; d < walk.ndim; ++d) {
        a.shape[d] = static_cast<int64_t>(walk[d]);
        a.elect_shape[d] = a.shape[d];
    }
    a.n = static_cast<int64_t>(walk.total_nr_elems());
    a.indexed = indexed.raw_ptr();
    a.plain = plain.raw_ptr();
    a.dt = to_kern(indexed.layout.dtype);
    a.elem_size = static_cast<int>(indexed.layout.dtype.size());
    return a;
}

// Row-major strides of a dense tensor of `shape`.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape) {
    std::vector<int64_t> s(shape.size());
    int64_t acc = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        s[d] = acc;
        acc *= shape[d];
    }
    return s;
}

size_t product(const std::vector<int64_t>& shape) {
    size_t p = 1;
    for (int64_t v : shape)
        p *= static_cast<size_t>(v);
    return p;
}

std::vector<int64_t> scatter_key_shape(const TensorLayout& data, const TensorLayout& index,
                                       size_t axis) {
    std::vector<int64_t> shape;
    for (size_t d = 0; d < index.ndim; ++d)
        shape.push_back(static_cast<int64_t>(d == axis ? data[d] : index[d]));
    return shape;
}

}  // namespace

kern::IndexedArgs multi_axis_args(kern::IndexedMode mode, const TensorND& indexed,
                                  std::span<const TensorND> indices, const TensorND& plain,
                                  const std::vector<int32_t>& axes, const std::string& who) {
    std::vector<TensorLayout> index_layouts;
    for (auto& t : indices)
        index_layouts.push_back(t.layout);
    auto plan = indexing::plan_multi_axis(indexed.layout, index_layouts, axes, who);
    const TensorLayout& data = indexed.layout;
    // The value of the assigning forms broadcasts to data[indices]; Gather's dst has that shape.
    TensorLayout plain_layout = plain.layout.broadcast(plan.result);
    kern::IndexedArgs a = common(mode, TensorLayout(plan.result, data.dtype), indexed, plain);
    size_t block_end = plan.index_begin + plan.index_shape.ndim;
    auto in_block = [&](size_t d) { return d >= plan.index_begin && d < block_end; };
    std::vector<int64_t> block_shape;
    for (size_t b = 0; b < plan.index_shape.ndim; ++b)
        block_shape.push_back(static_cast<int64_t>(plan.index_shape[b]));
    auto block_dense = dense_strides(block_shape);
    for (size_t d = 0; d < plan.result.ndim; ++d) {
        int axis = plan.data_axis[d];
        a.walk_stride[d] = axis >= 0 ? data.stride[static_cast<size_t>(axis)] : 0;
        a.plain_stride[d] = plain_layout.stride[d];
        // Writes collide only at equal coordinates outside the index block, and those are
        // ordered by their position in the block; the election needs the block alone.
        a.rank_stride[d] = in_block(d) ? block_dense[d - plan.index_begin] : 0;
        if (!in_block(d))
            a.elect_shape[d] = 1;
    }
    a.nr_index = static_cast<int>(indices.size());
    std::vector<int64_t> axis_sizes;
    for (size_t k = 0; k < indices.size(); ++k) {
        size_t ax = plan.axes[k];
        TensorLayout b = indices[k].layout.broadcast(plan.index_shape);
        a.index[k] = static_cast<const int32_t*>(indices[k].raw_ptr());
        for (size_t d = 0; d < plan.result.ndim; ++d)
            a.index_stride[k][d] = in_block(d) ? b.stride[d - plan.index_begin] : 0;
        a.axis_size[k] = static_cast<int64_t>(data[ax]);
        a.axis_stride[k] = data.stride[ax];
        axis_sizes.push_back(a.axis_size[k]);
    }
    auto keys = dense_strides(axis_sizes);
    for (size_t k = 0; k < keys.size(); ++k)
        a.axis_key[k] = keys[k];
    a.nr_keys = static_cast<int64_t>(product(axis_sizes));
    a.elect_n = static_cast<int64_t>(
            product(std::vector<int64_t>(a.elect_shape, a.elect_shape + a.ndim)));
    return a;
}

kern::IndexedArgs scatter_args(kern::IndexedMode mode, const TensorND& dst, const TensorND& index,
                               const TensorND& src, size_t axis) {
    kern::IndexedArgs a = common(mode, index.layout, dst, src);
    auto key_shape = scatter_key_shape(dst.layout, index.layout, axis);
    auto key_dense = dense_strides(key_shape);
    for (size_t d = 0; d < index.layout.ndim; ++d) {
        a.walk_stride[d] = d == axis ? 0 : dst.layout.stride[d];
        a.plain_stride[d] = src.layout.stride[d];
        a.index_stride[0][d] = index.layout.stride[d];
        // Writes collide only at equal coordinates off the axis; the later one along it wins.
        a.key_stride[d] = d == axis ? 0 : key_dense[d];
        a.rank_stride[d] = d == axis ? 1 : 0;
    }
    a.nr_index = 1;
    a.index[0] = static_cast<const int32_t*>(index.raw_ptr());
    a.axis_size[0] = static_cast<int64_t>(dst.layout[axis]);
    a.axis_stride[0] = dst.layout.stride[axis];
    a.axis_key[0] = key_dense[axis];
    a.nr_keys = static_cast<int64_t>(product(key_shape));
    a.elect_n = a.n;
    return a;
}

size_t multi_axis_keys(const TensorLayout& data, const std::vector<int32_t>& axes,
                       const std::string& who) {
    size_t keys = 1;
    for (int32_t ax : axes)
        keys *= data[indexing::normalize_axis(ax, data.ndim, who)];
    return keys;
}

size_t scatter_keys(const TensorLayout& data, const TensorLayout& index, size_t axis) {
    return product(scatter_key_shape(data, index, axis));
}

bool walk_fits(size_t n) {
    return n < (size_t{1} << 31);
}

}  // namespace neomeg::dnn::cuda
