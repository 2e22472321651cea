#include "neomeg/dnn/operators/indexing.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/indexing.h"
#include "src/naive/handle.h"
#include "src/naive/indexing.h"

namespace neomeg::dnn::naive {
namespace {

using dnn::indexing::MultiAxisPlan;
using indexing::copy_elem;
using indexing::copy_tensor;

// Derives the plan and checks every index value up front (NumPy checks them all, even when the
// result is empty), so that nothing is written when an index is bad.
MultiAxisPlan prepare(const TensorLayout& data, std::span<const TensorND> indices,
                      const std::vector<int32_t>& axes, const std::string& who) {
    std::vector<TensorLayout> layouts;
    for (auto& t : indices)
        layouts.push_back(t.layout);
    auto plan = dnn::indexing::plan_multi_axis(data, layouts, axes, who);
    for (size_t k = 0; k < indices.size(); ++k)
        indexing::check_index_values(indices[k], plan.axes[k], data.shape[plan.axes[k]], true, who);
    return plan;
}

// Calls f(result_idx, data_offset) for every element of data[indices], in row-major order of
// the result.
template <class F>
void for_each_indexed(const MultiAxisPlan& plan, const TensorLayout& data,
                      std::span<const TensorND> indices, F&& f) {
    std::vector<TensorLayout> bcast;
    for (auto& t : indices)
        bcast.push_back(t.layout.broadcast(plan.index_shape));
    for_each_index(plan.result, [&](const auto& idx) {
        ptrdiff_t off = 0;
        for (size_t d = 0; d < plan.result.ndim; ++d) {
            if (plan.data_axis[d] >= 0)
                off += static_cast<ptrdiff_t>(idx[d]) * data.stride[plan.data_axis[d]];
        }
        const size_t* bidx = idx.data() + plan.index_begin;
        for (size_t k = 0; k < indices.size(); ++k) {
            size_t ax = plan.axes[k];
            ptrdiff_t v = elem<int32_t>(indices[k], offset_of(bcast[k], bidx));
            if (v < 0)
                v += static_cast<ptrdiff_t>(data.shape[ax]);
            off += v * data.stride[ax];
        }
        f(idx, off);
    });
}

// The assigning forms: dst = data, then write(dst_offset, value_offset) for each element of
// dst[indices], value broadcast to that shape. dst's own strides address the update, since dst
// may be a strided view.
template <class F>
void update_indexed(std::span<const TensorND> inputs, const TensorND& dst,
                    const std::vector<int32_t>& axes, const std::string& who, F&& write) {
    auto indices = inputs.subspan(2);
    auto plan = prepare(dst.layout, indices, axes, who);
    TensorLayout value = inputs[1].layout.broadcast(plan.result);
    copy_tensor(dst, inputs[0]);
    for_each_indexed(plan, dst.layout, indices, [&](const auto& idx, ptrdiff_t doff) {
        write(doff, offset_of(value, idx.data()));
    });
}

class IndexingMultiAxisVecImpl final : public IndexingMultiAxisVec {
public:
    using IndexingMultiAxisVec::IndexingMultiAxisVec;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        auto indices = inputs.subspan(1);
        auto plan = prepare(src.layout, indices, m_param.axes, param_str());
        for_each_indexed(plan, src.layout, indices, [&](const auto& idx, ptrdiff_t soff) {
            copy_elem(dst, offset_of(dst.layout, idx.data()), src, soff);
        });
    }
};

class IndexingSetMultiAxisVecImpl final : public IndexingSetMultiAxisVec {
public:
    using IndexingSetMultiAxisVec::IndexingSetMultiAxisVec;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &value = inputs[1], &dst = outputs[0];
        update_indexed(inputs, dst, m_param.axes, param_str(),
                       [&](ptrdiff_t doff, ptrdiff_t voff) { copy_elem(dst, doff, value, voff); });
    }
};

class IndexingIncrMultiAxisVecImpl final : public IndexingIncrMultiAxisVec {
public:
    using IndexingIncrMultiAxisVec::IndexingIncrMultiAxisVec;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &value = inputs[1], &dst = outputs[0];
        if (dst.layout.dtype.is_complex()) {  // slicing's gradient on complex views
            update_indexed(inputs, dst, m_param.axes, param_str(),
                           [&](ptrdiff_t doff, ptrdiff_t voff) {
                               elem<dt_complex64>(dst, doff) += elem<dt_complex64>(value, voff);
                           });
            return;
        }
        dispatch_numeric(dst.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            using C = compute_type_t<T>;
            update_indexed(inputs, dst, m_param.axes, param_str(),
                           [&](ptrdiff_t doff, ptrdiff_t voff) {
                               T& d = elem<T>(dst, doff);
                               d = static_cast<T>(static_cast<C>(d) +
                                                  static_cast<C>(elem<T>(value, voff)));
                           });
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(IndexingMultiAxisVec, IndexingMultiAxisVecImpl);
NM_REGISTER_NAIVE(IndexingSetMultiAxisVec, IndexingSetMultiAxisVecImpl);
NM_REGISTER_NAIVE(IndexingIncrMultiAxisVec, IndexingIncrMultiAxisVecImpl);
}  // namespace neomeg::dnn::naive
