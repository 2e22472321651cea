#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"
#include "src/naive/handle.h"
#include "src/naive/indexing.h"

namespace neomeg::dnn::naive {
namespace {

using indexing::check_index_values;
using indexing::copy_elem;
using indexing::copy_tensor;

// The index value for position `idx` of a tensor whose `ax` has size 1; the index tensor is
// addressed by idx without that axis.
template <class Idx>
size_t index_value_at(const TensorND& index, const Idx& idx, size_t ndim, size_t ax) {
    std::array<size_t, TensorShape::MAX_NDIM> iidx{};
    for (size_t d = 0, i = 0; d < ndim; ++d)
        if (d != ax)
            iidx[i++] = idx[d];
    return static_cast<size_t>(elem<int32_t>(index, offset_of(index.layout, iidx.data())));
}

class IndexingOneHotImpl final : public IndexingOneHot {
public:
    using IndexingOneHot::IndexingOneHot;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &index = inputs[1], &dst = outputs[0];
        size_t ndim = src.layout.ndim;
        size_t ax = dnn::indexing::normalize_axis(m_param.axis, ndim, *this);
        check_index_values(index, ax, src.layout.shape[ax], false, *this);
        for_each_index(dst.layout, [&](const auto& idx) {
            auto sidx = idx;
            sidx[ax] = index_value_at(index, idx, ndim, ax);
            copy_elem(dst, offset_of(dst.layout, idx.data()), src,
                      offset_of(src.layout, sidx.data()));
        });
    }
};

class IndexingSetOneHotImpl final : public IndexingSetOneHot {
public:
    using IndexingSetOneHot::IndexingSetOneHot;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &data = inputs[0], &index = inputs[1], &sub = inputs[2], &dst = outputs[0];
        size_t ndim = data.layout.ndim;
        size_t ax = dnn::indexing::normalize_axis(m_param.axis, ndim, *this);
        check_index_values(index, ax, data.layout.shape[ax], false, *this);
        copy_tensor(dst, data);
        for_each_index(sub.layout, [&](const auto& idx) {
            auto didx = idx;
            didx[ax] = index_value_at(index, idx, ndim, ax);
            copy_elem(dst, offset_of(dst.layout, didx.data()), sub,
                      offset_of(sub.layout, idx.data()));
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(IndexingOneHot, IndexingOneHotImpl);
NM_REGISTER_NAIVE(IndexingSetOneHot, IndexingSetOneHotImpl);
}  // namespace neomeg::dnn::naive
