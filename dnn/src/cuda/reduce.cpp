// Reduce on the CUDA handle: every mode, any axis, any strides (kernels/reduce.cu).
#include "neomeg/dnn/operators/reduce.h"
#include "src/common/reduce_axis.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

using Mode = param::Reduce::Mode;
static_assert(static_cast<uint32_t>(kern::ReduceMode::SUM) == static_cast<uint32_t>(Mode::SUM));
static_assert(static_cast<uint32_t>(kern::ReduceMode::SUM_SQR) ==
              static_cast<uint32_t>(Mode::SUM_SQR));
static_assert(static_cast<uint32_t>(kern::ReduceMode::PRODUCT) ==
              static_cast<uint32_t>(Mode::PRODUCT));
static_assert(static_cast<uint32_t>(kern::ReduceMode::MIN) == static_cast<uint32_t>(Mode::MIN));
static_assert(static_cast<uint32_t>(kern::ReduceMode::MAX) == static_cast<uint32_t>(Mode::MAX));
static_assert(static_cast<uint32_t>(kern::ReduceMode::MEAN) == static_cast<uint32_t>(Mode::MEAN));

class ReduceImpl final : public CudaKernel<Reduce> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &src = in[0], &dst = out[0];
        size_t axis = 0;
        normalize_axis(m_param.axis, src.layout.ndim, axis);
        // Both layouts without the reduced axis (dst has it with size 1; src's is set to 1 so
        // that remove_axis takes it).
        TensorLayout src_outer = src.layout;
        src_outer[axis] = 1;
        auto c = collapse_jointly({src_outer.remove_axis(axis), dst.layout.remove_axis(axis)});
        kern::ReduceArgs a{};
        a.mode = static_cast<kern::ReduceMode>(m_param.mode);
        a.src = src.raw_ptr();
        a.src_dt = to_kern(src.layout.dtype);
        a.src_outer = c[0];
        a.axis_size = static_cast<int64_t>(src.layout[axis]);
        a.axis_stride = src.layout.stride[axis];
        a.dst = dst.raw_ptr();
        a.dst_dt = to_kern(dst.layout.dtype);
        a.dst_layout = c[1];
        a.nr_out = static_cast<int64_t>(dst.layout.total_nr_elems());
        kern::reduce(a, stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(Reduce, ReduceImpl);
}  // namespace neomeg::dnn::cuda
