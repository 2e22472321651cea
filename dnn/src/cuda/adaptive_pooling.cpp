// AdaptivePoolingForward and AdaptivePoolingBackward on the CUDA handle (kernels/pool.cu), MAX
// and AVERAGE, 1-D to 3-D, float dtypes, any strides.
#include "neomeg/dnn/operators/pooling.h"
#include "src/common/convolution_geometry.h"
#include "src/common/pooling.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

kern::PoolArgs pool_args(const PoolGeometry& g, kern::PoolReduce r, const TensorND& src) {
    kern::PoolArgs a{};
    a.reduce = r;
    a.adaptive = g.adaptive;
    a.n = static_cast<int64_t>(g.n);
    a.c = static_cast<int64_t>(g.c);
    for (size_t d = 0; d < kMaxPoolSpatial; ++d) {
        a.in[d] = static_cast<int64_t>(g.in[d]);
        a.out[d] = static_cast<int64_t>(g.out[d]);
        a.window[d] = g.window[d];
        a.stride[d] = g.stride[d];
        a.pad[d] = g.pad[d];
    }
    a.dt = to_kern(src.layout.dtype);
    a.src = src.raw_ptr();
    auto s = conv_strides5(src.layout);
    for (size_t i = 0; i < 5; ++i)
        a.src_strides[i] = s[i];
    return a;
}

std::array<int64_t, 5> strides5(const TensorLayout& l) {
    auto s = conv_strides5(l);
    std::array<int64_t, 5> r{};
    for (size_t i = 0; i < 5; ++i)
        r[i] = s[i];
    return r;
}

kern::PoolReduce reduce_of(param::AdaptivePooling::Mode m) {
    return m == param::AdaptivePooling::Mode::MAX ? kern::PoolReduce::Max
                                                  : kern::PoolReduce::AverageExcludePadding;
}

class AdaptivePoolingForwardImpl final : public CudaKernel<AdaptivePoolingForward> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        PoolGeometry g = adaptive_pooling_geometry(*this, m_param, in[0].layout);
        auto ds = strides5(out[0].layout);
        kern::pool_forward(pool_args(g, reduce_of(m_param.mode), in[0]), out[0].raw_ptr(),
                           ds.data(), stream());
        return "cuda";
    }
};

class AdaptivePoolingBackwardImpl final : public CudaKernel<AdaptivePoolingBackward> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        return in[0].total_nr_elems() * sizeof(double);
    }
    // inputs: src, dst (shape-checked only), diff; output: grad.
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        PoolGeometry g = adaptive_pooling_geometry(*this, m_param, in[0].layout);
        auto ys = strides5(in[2].layout), gs = strides5(out[0].layout);
        kern::pool_backward(pool_args(g, reduce_of(m_param.mode), in[0]), in[2].raw_ptr(),
                            ys.data(), reinterpret_cast<double*>(ws.ptr), out[0].raw_ptr(),
                            gs.data(), stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(AdaptivePoolingForward, AdaptivePoolingForwardImpl);
NM_REGISTER_CUDA(AdaptivePoolingBackward, AdaptivePoolingBackwardImpl);
}  // namespace neomeg::dnn::cuda
