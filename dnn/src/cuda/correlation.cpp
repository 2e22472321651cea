// Correlation and its gradients on the CUDA handle (kernels/correlation.cu): dense float32
// tensors; other dtypes and strided layouts run the staged naive kernel.
#include "neomeg/dnn/operators/vision.h"
#include "src/common/correlation_geometry.h"
#include "src/cuda/kernel.h"
#include "src/cuda/kernels/correlation_args.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

kern::CorrelationArgs args_of(const param::Correlation& p, const TensorLayout& data) {
    const correlation::Geometry g = correlation::geometry(p, data);
    kern::CorrelationArgs a{};
    a.n = g.n;
    a.c = g.c;
    a.h = g.h;
    a.w = g.w;
    a.out_h = g.out_h;
    a.out_w = g.out_w;
    a.radius = g.radius;
    a.grid_radius = g.grid_radius;
    a.grid_side = g.grid_side;
    a.stride1 = g.stride1;
    a.stride2 = g.stride2;
    a.origin = g.origin;
    a.norm = g.norm;
    a.multiply = p.is_multiply;
    return a;
}

class CorrelationImpl final : public CudaKernel<Correlation> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        return dense_float32(in, out);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        kern::correlation_forward(args_of(m_param, in[0].layout),
                                  static_cast<const float*>(in[0].raw_ptr()),
                                  static_cast<const float*>(in[1].raw_ptr()),
                                  static_cast<float*>(out[0].raw_ptr()), stream());
        return "cuda";
    }
};

template <class Op, int Which>
class CorrelationBackwardImpl final : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        return dense_float32(in, out);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        kern::correlation_backward(args_of(this->m_param, in[1].layout), Which,
                                   static_cast<const float*>(in[0].raw_ptr()),
                                   static_cast<const float*>(in[1].raw_ptr()),
                                   static_cast<const float*>(in[2].raw_ptr()),
                                   static_cast<float*>(out[0].raw_ptr()), this->stream());
        return "cuda";
    }
};

using CorrelationBackwardData1Impl = CorrelationBackwardImpl<CorrelationBackwardData1, 1>;
using CorrelationBackwardData2Impl = CorrelationBackwardImpl<CorrelationBackwardData2, 2>;

}  // namespace
NM_REGISTER_CUDA(Correlation, CorrelationImpl);
NM_REGISTER_CUDA(CorrelationBackwardData1, CorrelationBackwardData1Impl);
NM_REGISTER_CUDA(CorrelationBackwardData2, CorrelationBackwardData2Impl);
}  // namespace neomeg::dnn::cuda
