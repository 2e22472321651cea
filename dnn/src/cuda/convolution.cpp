// ConvolutionForward, ConvolutionBackwardData, ConvolutionBackwardFilter and ConvBias through
// cuDNN (the v9 library's convolution API), 1-D, 2-D and 3-D, groups, dilation, both modes,
// float32/float16/bfloat16 accumulating in float32; the algorithm is cuDNN's heuristic first
// choice that supports the case. float32 runs without TF32 (CUDNN_FMA_MATH) unless
// Handle::cuda_allow_tf32(). Strided tensors are described as they are; a filter (or a filter
// gradient) that is not contiguous, broadcast or reversed axes, and integer dtypes go to the staged
// naive kernel. ConvBias adds bias and z and applies its nonlinearity with the Elemwise kernel.
#include <array>
#include <memory>
#include <utility>

#include "src/common/convolution_geometry.h"
#include "src/cuda/cudnn_util.h"
#include "src/cuda/kernel.h"
#include "src/cuda/kernels/args.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

enum class ConvKind { Forward, BackwardData, BackwardFilter };

// Descriptors and the chosen algorithm for one (layouts, params) key. x is the convolution's
// input (src or its gradient), w the filter (or its gradient), y the output (dst or diff).
struct ConvPlan {
    TensorDesc x, y;
    FilterDesc w;
    cudnnConvolutionDescriptor_t conv = nullptr;
    int algo = 0;
    size_t workspace = 0;
    const char* name = "cudnn";

    ConvPlan() { NM_CUDNN_CHECK(libcudnn().cudnnCreateConvolutionDescriptor(&conv)); }
    ~ConvPlan() { libcudnn().cudnnDestroyConvolutionDescriptor(conv); }
    ConvPlan(const ConvPlan&) = delete;
    ConvPlan& operator=(const ConvPlan&) = delete;
};

cudnnMathType_t math_type(DType dt) {
    if (dt == dtype::Float32)
        return Handle::cuda_allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    return CUDNN_TENSOR_OP_MATH;
}

// Picks the first heuristic result that reports success and whose workspace query succeeds.
template <class Perf, class Query>
bool choose_algo(const Perf* perf, int n, ConvPlan& plan, Query&& workspace_of) {
    for (int i = 0; i < n; ++i) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS)
            continue;
        size_t ws = 0;
        if (workspace_of(perf[i].algo, &ws) != CUDNN_STATUS_SUCCESS)
            continue;
        plan.algo = static_cast<int>(perf[i].algo);
        plan.workspace = ws;
        return true;
    }
    return false;
}

// Builds the plan, or nullptr for a case cuDNN does not take. `x`, `w`, `y` are the layouts in the
// roles of ConvPlan.
std::unique_ptr<ConvPlan> make_conv_plan(cudnnHandle_t handle, ConvKind kind, const ConvArgs& args,
                                         const TensorLayout& x, const TensorLayout& w,
                                         const TensorLayout& y) {
    auto type = cudnn_type(x.dtype);
    if (!type || x.is_empty() || w.is_empty() || y.is_empty())
        return nullptr;
    auto plan = std::make_unique<ConvPlan>();
    if (!plan->x.set(x) || !plan->y.set(y) || !plan->w.set(w))
        return nullptr;
    std::vector<int> pad, stride, dil;
    if (args.stride.size() == 1) {
        // The 1-D convolution as 2-D over (1, W).
        pad = {0, args.padding[0]};
        stride = {1, args.stride[0]};
        dil = {1, args.dilation[0]};
    } else {
        pad.assign(args.padding.begin(), args.padding.end());
        stride.assign(args.stride.begin(), args.stride.end());
        dil.assign(args.dilation.begin(), args.dilation.end());
    }
    // Half-precision data accumulates in float (cuDNN's PSEUDO_HALF configuration).
    if (libcudnn().cudnnSetConvolutionNdDescriptor(
                plan->conv, static_cast<int>(pad.size()), pad.data(), stride.data(), dil.data(),
                args.flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION,
                CUDNN_DATA_FLOAT) != CUDNN_STATUS_SUCCESS)
        return nullptr;
    NM_CUDNN_CHECK(
            libcudnn().cudnnSetConvolutionGroupCount(plan->conv, static_cast<int>(args.group)));
    NM_CUDNN_CHECK(libcudnn().cudnnSetConvolutionMathType(plan->conv, math_type(x.dtype)));
    int n = 0;
    bool ok = false;
    switch (kind) {
        case ConvKind::Forward: {
            std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
            if (libcudnn().cudnnGetConvolutionForwardAlgorithm_v7(
                        handle, plan->x.get(), plan->w.get(), plan->conv, plan->y.get(),
                        static_cast<int>(perf.size()), &n, perf.data()) != CUDNN_STATUS_SUCCESS)
                return nullptr;
            ok = choose_algo(perf.data(), n, *plan, [&](auto algo, size_t* ws) {
                return libcudnn().cudnnGetConvolutionForwardWorkspaceSize(
                        handle, plan->x.get(), plan->w.get(), plan->conv, plan->y.get(), algo, ws);
            });
            break;
        }
        case ConvKind::BackwardData: {
            std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>
                    perf{};
            if (libcudnn().cudnnGetConvolutionBackwardDataAlgorithm_v7(
                        handle, plan->w.get(), plan->y.get(), plan->conv, plan->x.get(),
                        static_cast<int>(perf.size()), &n, perf.data()) != CUDNN_STATUS_SUCCESS)
                return nullptr;
            ok = choose_algo(perf.data(), n, *plan, [&](auto algo, size_t* ws) {
                return libcudnn().cudnnGetConvolutionBackwardDataWorkspaceSize(
                        handle, plan->w.get(), plan->y.get(), plan->conv, plan->x.get(), algo, ws);
            });
            break;
        }
        case ConvKind::BackwardFilter: {
            std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>
                    perf{};
            if (libcudnn().cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                        handle, plan->x.get(), plan->y.get(), plan->conv, plan->w.get(),
                        static_cast<int>(perf.size()), &n, perf.data()) != CUDNN_STATUS_SUCCESS)
                return nullptr;
            ok = choose_algo(perf.data(), n, *plan, [&](auto algo, size_t* ws) {
                return libcudnn().cudnnGetConvolutionBackwardFilterWorkspaceSize(
                        handle, plan->x.get(), plan->y.get(), plan->conv, plan->w.get(), algo, ws);
            });
            break;
        }
    }
    return ok ? std::move(plan) : nullptr;
}

// The frame of the four operators: plans cached per (layouts, params), the last few kept, as an
// eager operator object sees one shape or two.
template <class Op>
class ConvKernel : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

protected:
    static constexpr size_t kMaxPlans = 8;

    // The plan for these layouts under the current params (nullptr: cuDNN declines).
    ConvPlan* plan_for(std::span<const TensorLayout> in, std::span<const TensorLayout> out) {
        for (auto& [key, plan] : m_plans)
            if (matches(key, in, out))
                return plan.get();
        Key key{{in.begin(), in.end()}, {out.begin(), out.end()}, this->m_param};
        auto plan = build(in, out);
        if (m_plans.size() == kMaxPlans)
            m_plans.erase(m_plans.begin());
        m_plans.emplace_back(std::move(key), std::move(plan));
        return m_plans.back().second.get();
    }

    virtual std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                            std::span<const TensorLayout> out) = 0;

    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        return plan_for(in, out) != nullptr;
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout> out) override {
        return plan_for(in, out)->workspace;
    }

private:
    struct Key {
        std::vector<TensorLayout> in, out;
        typename Op::Param param;
    };
    bool matches(const Key& k, std::span<const TensorLayout> in,
                 std::span<const TensorLayout> out) const {
        if (k.in.size() != in.size() || k.out.size() != out.size() || !(k.param == this->m_param))
            return false;
        for (size_t i = 0; i < in.size(); ++i)
            if (!k.in[i].eq_layout(in[i]))
                return false;
        for (size_t i = 0; i < out.size(); ++i)
            if (!k.out[i].eq_layout(out[i]))
                return false;
        return true;
    }
    std::vector<std::pair<Key, std::unique_ptr<ConvPlan>>> m_plans;
};

class ConvForwardImpl final : public ConvKernel<ConvolutionForward> {
public:
    using ConvKernel::ConvKernel;

private:
    std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        return make_conv_plan(cuda_handle().cudnn(), ConvKind::Forward, ConvArgs::of(m_param),
                              in[0], in[1], out[0]);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        std::array<TensorLayout, 2> il{in[0].layout, in[1].layout};
        std::array<TensorLayout, 1> ol{out[0].layout};
        ConvPlan& p = *plan_for(il, ol);
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnConvolutionForward(
                cuda_handle().cudnn(), &alpha, p.x.get(), in[0].raw_ptr(), p.w.get(),
                in[1].raw_ptr(), p.conv, static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws.ptr,
                ws.size, &beta, p.y.get(), out[0].raw_ptr()));
        return "cudnn";
    }
};

class ConvBackwardDataImpl final : public ConvKernel<ConvolutionBackwardData> {
public:
    using ConvKernel::ConvKernel;

private:
    // inputs: filter, diff; output: grad (the src gradient).
    std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        return make_conv_plan(cuda_handle().cudnn(), ConvKind::BackwardData, ConvArgs::of(m_param),
                              out[0], in[0], in[1]);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        std::array<TensorLayout, 2> il{in[0].layout, in[1].layout};
        std::array<TensorLayout, 1> ol{out[0].layout};
        ConvPlan& p = *plan_for(il, ol);
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnConvolutionBackwardData(
                cuda_handle().cudnn(), &alpha, p.w.get(), in[0].raw_ptr(), p.y.get(),
                in[1].raw_ptr(), p.conv, static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algo), ws.ptr,
                ws.size, &beta, p.x.get(), out[0].raw_ptr()));
        return "cudnn";
    }
};

class ConvBackwardFilterImpl final : public ConvKernel<ConvolutionBackwardFilter> {
public:
    using ConvKernel::ConvKernel;

private:
    // inputs: src, diff; output: grad (the filter gradient).
    std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        return make_conv_plan(cuda_handle().cudnn(), ConvKind::BackwardFilter,
                              ConvArgs::of(m_param), in[0], out[0], in[1]);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        std::array<TensorLayout, 2> il{in[0].layout, in[1].layout};
        std::array<TensorLayout, 1> ol{out[0].layout};
        ConvPlan& p = *plan_for(il, ol);
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnConvolutionBackwardFilter(
                cuda_handle().cudnn(), &alpha, p.x.get(), in[0].raw_ptr(), p.y.get(),
                in[1].raw_ptr(), p.conv, static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algo),
                ws.ptr, ws.size, &beta, p.w.get(), out[0].raw_ptr()));
        return "cudnn";
    }
};

// dst = op(a, b) (or op(a)) elementwise in place on the device, through the Elemwise kernel.
void elemwise_inplace(kern::EwMode mode, const TensorND& dst, const TensorND* other,
                      cudaStream_t stream) {
    std::vector<TensorLayout> layouts{dst.layout, dst.layout};
    if (other)
        layouts.push_back(other->layout.broadcast(dst.layout));
    auto c = collapse_jointly(layouts);
    kern::ElemwiseArgs args{};
    args.mode = mode;
    args.arity = other ? 2 : 1;
    args.in_float = true;
    args.data_bits = static_cast<int>(dst.layout.dtype.size() * 8);
    args.src[0] = dst.raw_ptr();
    args.src_dt[0] = to_kern(dst.layout.dtype);
    args.src_layout[0] = c[1];
    if (other) {
        args.src[1] = other->raw_ptr();
        args.src_dt[1] = to_kern(other->layout.dtype);
        args.src_layout[1] = c[2];
    }
    args.dst = dst.raw_ptr();
    args.dst_dt = to_kern(dst.layout.dtype);
    args.dst_layout = c[0];
    args.nr_elems = static_cast<int64_t>(dst.layout.total_nr_elems());
    kern::elemwise(args, stream);
}

class ConvBiasImpl final : public ConvKernel<ConvBias> {
public:
    using ConvKernel::ConvKernel;

private:
    // inputs: src, filter, bias, z; output: dst. Only dst's layout may overlap nothing else:
    // bias and z are read after the convolution wrote dst.
    std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        return make_conv_plan(cuda_handle().cudnn(), ConvKind::Forward, ConvArgs::of(m_param),
                              in[0], in[1], out[0]);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        std::array<TensorLayout, 4> il{in[0].layout, in[1].layout, in[2].layout, in[3].layout};
        std::array<TensorLayout, 1> ol{out[0].layout};
        ConvPlan& p = *plan_for(il, ol);
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnConvolutionForward(
                cuda_handle().cudnn(), &alpha, p.x.get(), in[0].raw_ptr(), p.w.get(),
                in[1].raw_ptr(), p.conv, static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws.ptr,
                ws.size, &beta, p.y.get(), out[0].raw_ptr()));
        if (in[2].layout.ndim != 0)
            elemwise_inplace(kern::EwMode::ADD, out[0], &in[2], stream());
        if (in[3].layout.ndim != 0)
            elemwise_inplace(kern::EwMode::ADD, out[0], &in[3], stream());
        switch (m_param.nonlineMode) {
            case param::ConvBias::NonlineMode::IDENTITY:
                break;
            case param::ConvBias::NonlineMode::RELU:
                elemwise_inplace(kern::EwMode::RELU, out[0], nullptr, stream());
                break;
            case param::ConvBias::NonlineMode::SIGMOID:
                elemwise_inplace(kern::EwMode::SIGMOID, out[0], nullptr, stream());
                break;
            case param::ConvBias::NonlineMode::H_SWISH:
                elemwise_inplace(kern::EwMode::H_SWISH, out[0], nullptr, stream());
                break;
        }
        return "cudnn";
    }
};

}  // namespace
NM_REGISTER_CUDA(ConvolutionForward, ConvForwardImpl);
NM_REGISTER_CUDA(ConvolutionBackwardData, ConvBackwardDataImpl);
NM_REGISTER_CUDA(ConvolutionBackwardFilter, ConvBackwardFilterImpl);
NM_REGISTER_CUDA(ConvBias, ConvBiasImpl);
}  // namespace neomeg::dnn::cuda
