// Argmax, Argmin and Cumsum on the CUDA handle (kernels/scan.cu), any axis and strides.
#include "neomeg/dnn/operators/reduce.h"
#include "src/common/reduce_axis.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

// The line description of src and dst along `axis` (see kern::ReduceArgs).
kern::ReduceArgs line_args(const TensorND& src, const TensorND& dst, size_t axis) {
    TensorLayout so = src.layout, dl = dst.layout;
    so[axis] = 1;
    dl[axis] = 1;
    auto c = collapse_jointly({so.remove_axis(axis), dl.remove_axis(axis)});
    kern::ReduceArgs a{};
    a.src = src.raw_ptr();
    a.src_dt = to_kern(src.layout.dtype);
    a.src_outer = c[0];
    a.axis_size = static_cast<int64_t>(src.layout[axis]);
    a.axis_stride = src.layout.stride[axis];
    a.dst = dst.raw_ptr();
    a.dst_dt = to_kern(dst.layout.dtype);
    a.dst_layout = c[1];
    a.nr_out = static_cast<int64_t>(so.total_nr_elems());
    return a;
}

template <class Op, bool kMax>
class ArgImpl final : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        size_t axis = 0;
        normalize_axis(this->m_param.axis, in[0].layout.ndim, axis);
        kern::arg_reduce(line_args(in[0], out[0], axis), kMax, this->stream());
        return "cuda";
    }
};
using ArgmaxImpl = ArgImpl<Argmax, true>;
using ArgminImpl = ArgImpl<Argmin, false>;

class CumsumImpl final : public CudaKernel<Cumsum> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        size_t axis = 0;
        normalize_axis(m_param.axis, in[0].layout.ndim, axis);
        kern::cumsum(line_args(in[0], out[0], axis), out[0].layout.stride[axis], m_param.exclusive,
                     m_param.reverse, stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(Argmax, ArgmaxImpl);
NM_REGISTER_CUDA(Argmin, ArgminImpl);
NM_REGISTER_CUDA(Cumsum, CumsumImpl);
}  // namespace neomeg::dnn::cuda
