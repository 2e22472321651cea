// Scatter on the CUDA handle (kernels/indexed.cu through indexed_args.h): SET and ADD over any
// strides and every dtype naive takes; repeated indices as naive (SET: the last write in row-major
// order of index wins; ADD: every one adds). The index range is checked first and waits for the
// stream (index_range.h).
#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"
#include "src/cuda/index_range.h"
#include "src/cuda/indexed_args.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

using kern::IndexedMode;

// inputs: data, index, src; output: dst.
class ScatterImpl final : public CudaKernel<Scatter> {
public:
    using CudaKernel::CudaKernel;

private:
    IndexedMode mode() const {
        return m_param.mode == Param::Mode::SET ? IndexedMode::Set : IndexedMode::Add;
    }
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout>) override {
        return walk_fits(in[0].total_nr_elems()) && walk_fits(in[1].total_nr_elems());
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        if (mode() != IndexedMode::Set)
            return 0;
        size_t axis = indexing::normalize_axis(m_param.axis, in[0].ndim, *this);
        return scatter_keys(in[0], in[1], axis) * sizeof(uint32_t);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorND &data = in[0], &index = in[1], &src = in[2], &dst = out[0];
        size_t axis = indexing::normalize_axis(m_param.axis, data.layout.ndim, *this);
        size_t size = data.layout[axis];
        m_check.run(in.subspan(1, 1), std::span(&axis, 1), std::span(&size, 1), false, param_str(),
                    stream());
        if (dst.raw_ptr() != data.raw_ptr() || !dst.layout.eq_layout(data.layout)) {
            auto c = collapse_jointly({data.layout, dst.layout});
            kern::DT dt = to_kern(data.layout.dtype);
            kern::convert(data.raw_ptr(), dt, c[0], dst.raw_ptr(), dt, c[1],
                          static_cast<int64_t>(data.layout.total_nr_elems()), stream());
        }
        auto a = scatter_args(mode(), dst, index, src, axis);
        a.winner = reinterpret_cast<uint32_t*>(ws.ptr);
        kern::indexed(a, stream());
        return "cuda";
    }

    IndexRangeCheck m_check;
};

}  // namespace
NM_REGISTER_CUDA(Scatter, ScatterImpl);
}  // namespace neomeg::dnn::cuda
