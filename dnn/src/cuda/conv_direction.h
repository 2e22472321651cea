// One cuDNN convolution direction's types and calls, so that planning (conv_plan.cpp: heuristics,
// workspace sizes, measuring) and running (convolution.cpp) are written once over the three.
// Each call takes the plan's tensors by role, x (the convolution's input or its gradient), w (the
// filter or its gradient), y (the output or diff), and passes them in the order the direction's
// cuDNN functions want.
#pragma once

#include <array>
#include <string>

#include "neomeg/dnn/tensor.h"
#include "src/cuda/conv_plan.h"

namespace neomeg::dnn::cuda {

// Device addresses of a case's x, w and y (what the direction writes among them is its output).
struct ConvBuffers {
    void *x, *w, *y;
};

template <ConvKind K>
struct ConvDirection;

template <>
struct ConvDirection<ConvKind::Forward> {
    using Algo = cudnnConvolutionFwdAlgo_t;
    using Perf = cudnnConvolutionFwdAlgoPerf_t;
    static constexpr int kAlgoCount = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    // By cudnnConvolutionFwdAlgo_t, for the kernel name (NEOMEG_DEBUG, tests).
    static constexpr std::array<const char*, kAlgoCount> kAlgoNames{
            "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
            "winograd",      "winograd_nonfused"};

    static cudnnStatus_t heuristics(cudnnHandle_t h, const ConvPlan& p, int* n, Perf* perf) {
        return libcudnn().cudnnGetConvolutionForwardAlgorithm_v7(h, p.x.get(), p.w.get(), p.conv,
                                                                 p.y.get(), kAlgoCount, n, perf);
    }
    static cudnnStatus_t workspace(cudnnHandle_t h, const ConvPlan& p, Algo algo, size_t* bytes) {
        return libcudnn().cudnnGetConvolutionForwardWorkspaceSize(h, p.x.get(), p.w.get(), p.conv,
                                                                  p.y.get(), algo, bytes);
    }
    static cudnnStatus_t find(cudnnHandle_t h, const ConvPlan& p, ConvBuffers b, int* n, Perf* perf,
                              void* ws, size_t ws_bytes) {
        return libcudnn().cudnnFindConvolutionForwardAlgorithmEx(h, p.x.get(), b.x, p.w.get(), b.w,
                                                                 p.conv, p.y.get(), b.y, kAlgoCount,
                                                                 n, perf, ws, ws_bytes);
    }
    static cudnnStatus_t run(cudnnHandle_t h, const ConvPlan& p, ConvBuffers b, Workspace ws,
                             const float* alpha, const float* beta) {
        return libcudnn().cudnnConvolutionForward(h, alpha, p.x.get(), b.x, p.w.get(), b.w, p.conv,
                                                  static_cast<Algo>(p.algo), ws.ptr, ws.size, beta,
                                                  p.y.get(), b.y);
    }
};

template <>
struct ConvDirection<ConvKind::BackwardData> {
    using Algo = cudnnConvolutionBwdDataAlgo_t;
    using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
    static constexpr int kAlgoCount = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    static constexpr std::array<const char*, kAlgoCount> kAlgoNames{
            "algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused"};

    static cudnnStatus_t heuristics(cudnnHandle_t h, const ConvPlan& p, int* n, Perf* perf) {
        return libcudnn().cudnnGetConvolutionBackwardDataAlgorithm_v7(
                h, p.w.get(), p.y.get(), p.conv, p.x.get(), kAlgoCount, n, perf);
    }
    static cudnnStatus_t workspace(cudnnHandle_t h, const ConvPlan& p, Algo algo, size_t* bytes) {
        return libcudnn().cudnnGetConvolutionBackwardDataWorkspaceSize(
                h, p.w.get(), p.y.get(), p.conv, p.x.get(), algo, bytes);
    }
    static cudnnStatus_t find(cudnnHandle_t h, const ConvPlan& p, ConvBuffers b, int* n, Perf* perf,
                              void* ws, size_t ws_bytes) {
        return libcudnn().cudnnFindConvolutionBackwardDataAlgorithmEx(
                h, p.w.get(), b.w, p.y.get(), b.y, p.conv, p.x.get(), b.x, kAlgoCount, n, perf, ws,
                ws_bytes);
    }
    static cudnnStatus_t run(cudnnHandle_t h, const ConvPlan& p, ConvBuffers b, Workspace ws,
                             const float* alpha, const float* beta) {
        return libcudnn().cudnnConvolutionBackwardData(h, alpha, p.w.get(), b.w, p.y.get(), b.y,
                                                       p.conv, static_cast<Algo>(p.algo), ws.ptr,
                                                       ws.size, beta, p.x.get(), b.x);
    }
};

template <>
struct ConvDirection<ConvKind::BackwardFilter> {
    using Algo = cudnnConvolutionBwdFilterAlgo_t;
    using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
    static constexpr int kAlgoCount = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    static constexpr std::array<const char*, kAlgoCount> kAlgoNames{
            "algo_0", "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused", "fft_tiling"};

    static cudnnStatus_t heuristics(cudnnHandle_t h, const ConvPlan& p, int* n, Perf* perf) {
        return libcudnn().cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                h, p.x.get(), p.y.get(), p.conv, p.w.get(), kAlgoCount, n, perf);
    }
    static cudnnStatus_t workspace(cudnnHandle_t h, const ConvPlan& p, Algo algo, size_t* bytes) {
        return libcudnn().cudnnGetConvolutionBackwardFilterWorkspaceSize(
                h, p.x.get(), p.y.get(), p.conv, p.w.get(), algo, bytes);
    }
    static cudnnStatus_t find(cudnnHandle_t h, const ConvPlan& p, ConvBuffers b, int* n, Perf* perf,
                              void* ws, size_t ws_bytes) {
        return libcudnn().cudnnFindConvolutionBackwardFilterAlgorithmEx(
                h, p.x.get(), b.x, p.y.get(), b.y, p.conv, p.w.get(), b.w, kAlgoCount, n, perf, ws,
                ws_bytes);
    }
    static cudnnStatus_t run(cudnnHandle_t h, const ConvPlan& p, ConvBuffers b, Workspace ws,
                             const float* alpha, const float* beta) {
        return libcudnn().cudnnConvolutionBackwardFilter(h, alpha, p.x.get(), b.x, p.y.get(), b.y,
                                                         p.conv, static_cast<Algo>(p.algo), ws.ptr,
                                                         ws.size, beta, p.w.get(), b.w);
    }
};

// Calls fn(ConvDirection<kind>{}): the one place a run-time kind becomes a direction type.
template <class Fn>
decltype(auto) with_direction(ConvKind kind, Fn&& fn) {
    switch (kind) {
        case ConvKind::Forward:
            return fn(ConvDirection<ConvKind::Forward>{});
        case ConvKind::BackwardData:
            return fn(ConvDirection<ConvKind::BackwardData>{});
        default:
            return fn(ConvDirection<ConvKind::BackwardFilter>{});
    }
}

// What a convolution of direction `kind` that ran cuDNN algorithm `algo` reports as its kernel:
// "cudnn:<algorithm>", or "cudnn(measured):<algorithm>" where fastrun chose it by timing; without
// the algorithm's name for an id this cuDNN does not list.
template <ConvKind kind>
const char* conv_kernel_name(int algo, bool measured) {
    using D = ConvDirection<kind>;
    static const auto names = [] {
        std::array<std::array<std::string, 2>, D::kAlgoCount> n;
        for (int a = 0; a < D::kAlgoCount; ++a) {
            n[a][0] = std::string("cudnn:") + D::kAlgoNames[a];
            n[a][1] = std::string("cudnn(measured):") + D::kAlgoNames[a];
        }
        return n;
    }();
    if (algo < 0 || algo >= D::kAlgoCount)
        return measured ? "cudnn(measured)" : "cudnn";
    return names[algo][measured ? 1 : 0].c_str();
}

}  // namespace neomeg::dnn::cuda
