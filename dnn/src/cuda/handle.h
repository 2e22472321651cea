// The CUDA backend: operators on one GPU and one stream the caller owns. Kernels registered with
// NM_REGISTER_CUDA run there; every other operator (and every case a CUDA kernel declines) runs its
// naive kernel through host memory (staged.h), so each operator works on the GPU from the start
// and the known gap shrinks kernel by kernel (dnn/test/cuda/handle.cpp lists it).
#pragma once

#include <memory>
#include <mutex>

#include "neomeg/dnn/handle.h"
#include "src/common/registry.h"
#include "src/cuda/conv_algo_cache.h"
#include "src/cuda/conv_graph.h"
#include "src/cuda/error.h"
#include "src/cuda/exec_report.h"

namespace neomeg::dnn::cuda {

// Makes `device` current for a scope and restores the previous device after it, so that a kernel
// launched from a thread that last worked on another GPU lands on the handle's.
class DeviceGuard {
public:
    explicit DeviceGuard(int device);
    ~DeviceGuard();
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
    int m_previous = -1;
    int m_device;
};

class HandleImpl final : public Handle {
public:
    HandleImpl(int device, cudaStream_t stream);
    ~HandleImpl() override;
    std::unique_ptr<OperatorBase> create_operator(OpType type) override;

    // The staged naive operator of `type` (staged.h), for CUDA kernels to delegate to.
    std::unique_ptr<OperatorBase> create_staged_operator(OpType type);
    template <class Op>
    std::unique_ptr<Op> create_staged_operator() {
        return std::unique_ptr<Op>(static_cast<Op*>(create_staged_operator(Op::kType).release()));
    }

    int device() const { return m_device; }
    cudaStream_t stream() const { return m_stream; }
    const cudaDeviceProp& props() const { return m_props; }
    // Library handles bound to this handle's device and stream, made on first use (cuDNN's costs
    // hundreds of milliseconds and most models never call it).
    cublasHandle_t cublas();
    cudnnHandle_t cudnn();
    cusolverDnHandle_t cusolver();
    // The host-side reference handle the staged operators run on.
    Handle& naive() { return *m_naive; }
    // The convolution algorithms measured on this handle (conv_plan.h).
    ConvAlgoCache& conv_algo_cache() { return m_conv_algos; }
    // The graph API's convolution plans built on this handle (conv_graph.h).
    ConvGraphCache& conv_graph_cache() { return m_conv_graphs; }

protected:
    bool can_create(OpType type) const override;

private:
    int m_device;
    cudaStream_t m_stream;
    cudaDeviceProp m_props{};
    std::unique_ptr<Handle> m_naive;
    std::once_flag m_cublas_once, m_cudnn_once, m_cusolver_once;
    cublasHandle_t m_cublas = nullptr;
    cudnnHandle_t m_cudnn = nullptr;
    cusolverDnHandle_t m_cusolver = nullptr;
    ConvAlgoCache m_conv_algos;
    ConvGraphCache m_conv_graphs;
    ExecReporter m_reporter;  // attached to every op under NEOMEG_DEBUG
};

// The table of staged fallbacks, one per operator (staged.cpp).
OperatorRegistry& staged_registry();

}  // namespace neomeg::dnn::cuda

// In a CUDA kernel file: NM_REGISTER_CUDA(MatrixMul, MatmulImpl<MatrixMul>);
#define NM_REGISTER_CUDA(Op, Impl) NM_REGISTER_OPERATOR(Cuda, Op, Impl)
