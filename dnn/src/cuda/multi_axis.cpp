// IndexingMultiAxisVec, IndexingSetMultiAxisVec and IndexingIncrMultiAxisVec on the CUDA handle
// (kernels/indexed.cu through indexed_args.h): NumPy advanced indexing over any strides, every
// dtype naive takes, repeated indices as naive (the last write wins for Set, every one adds for
// Incr). The index range is checked first and waits for the stream (index_range.h).
#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"
#include "src/cuda/index_range.h"
#include "src/cuda/indexed_args.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

using kern::IndexedMode;

// inputs: Gather src, indices...; Set/Add data, value, indices...
template <class Op, IndexedMode kMode>
class MultiAxisImpl final : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

private:
    static constexpr size_t kFirstIndex = kMode == IndexedMode::Gather ? 1 : 2;

    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        bool ok = walk_fits(in[0].total_nr_elems()) && walk_fits(out[0].total_nr_elems());
        std::vector<TensorLayout> indices(in.begin() + kFirstIndex, in.end());
        for (auto& l : indices)
            ok = ok && walk_fits(l.total_nr_elems());
        if (!ok)
            return false;
        auto plan = indexing::plan_multi_axis(in[0], indices, this->m_param.axes, *this);
        return walk_fits(plan.result.total_nr_elems());
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        if (kMode != IndexedMode::Set)
            return 0;
        return multi_axis_keys(in[0], this->m_param.axes, this->param_str()) * sizeof(uint32_t);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorND &data = in[0], &dst = out[0];
        auto indices = in.subspan(kFirstIndex);
        std::vector<size_t> axes, sizes;
        for (int32_t a : this->m_param.axes) {
            axes.push_back(indexing::normalize_axis(a, data.layout.ndim, *this));
            sizes.push_back(data.layout[axes.back()]);
        }
        m_check.run(indices, axes, sizes, true, this->param_str(), this->stream());
        if (kMode == IndexedMode::Gather) {
            auto a = multi_axis_args(kMode, data, indices, dst, this->m_param.axes,
                                     this->param_str());
            kern::indexed(a, this->stream());
            return "cuda";
        }
        if (dst.raw_ptr() != data.raw_ptr() || !dst.layout.eq_layout(data.layout)) {
            auto c = collapse_jointly({data.layout, dst.layout});
            kern::DT dt = to_kern(data.layout.dtype);
            kern::convert(data.raw_ptr(), dt, c[0], dst.raw_ptr(), dt, c[1],
                          static_cast<int64_t>(data.layout.total_nr_elems()), this->stream());
        }
        auto a = multi_axis_args(kMode, dst, indices, in[1], this->m_param.axes, this->param_str());
        a.winner = reinterpret_cast<uint32_t*>(ws.ptr);
        kern::indexed(a, this->stream());
        return "cuda";
    }

    IndexRangeCheck m_check;
};

using IndexingMultiAxisVecImpl = MultiAxisImpl<IndexingMultiAxisVec, IndexedMode::Gather>;
using IndexingSetMultiAxisVecImpl = MultiAxisImpl<IndexingSetMultiAxisVec, IndexedMode::Set>;
using IndexingIncrMultiAxisVecImpl = MultiAxisImpl<IndexingIncrMultiAxisVec, IndexedMode::Add>;

}  // namespace
NM_REGISTER_CUDA(IndexingMultiAxisVec, IndexingMultiAxisVecImpl);
NM_REGISTER_CUDA(IndexingSetMultiAxisVec, IndexingSetMultiAxisVecImpl);
NM_REGISTER_CUDA(IndexingIncrMultiAxisVec, IndexingIncrMultiAxisVecImpl);
}  // namespace neomeg::dnn::cuda
