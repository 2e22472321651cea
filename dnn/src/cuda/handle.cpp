#include "src/cuda/handle.h"

#include "src/common/exec_report.h"

namespace neomeg::dnn {

std::unique_ptr<Handle> Handle::make_cuda(int device, void* stream) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        cudaGetLastError();
        throw NotSupportedError(str_cat("no CUDA device: ", cudaGetErrorString(err)));
    }
    if (device < 0 || device >= count)
        throw NotSupportedError(
                str_cat("no CUDA device ", device, ": ", count, " device(s) present"));
    return std::make_unique<cuda::HandleImpl>(device, static_cast<cudaStream_t>(stream));
}

bool Handle::cuda_available() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        // No driver or no device: a sticky-free error, cleared so that it reaches no later call.
        cudaGetLastError();
        return false;
    }
    return count > 0;
}

namespace cuda {

DeviceGuard::DeviceGuard(int device) : m_device(device) {
    NM_CUDA_CHECK(cudaGetDevice(&m_previous));
    if (m_previous != m_device)
        NM_CUDA_CHECK(cudaSetDevice(m_device));
}

DeviceGuard::~DeviceGuard() {
    if (m_previous != m_device)
        cudaSetDevice(m_previous);
}

HandleImpl::HandleImpl(int device, cudaStream_t stream)
    : Handle(Backend::Cuda), m_device(device), m_stream(stream), m_naive(Handle::make_naive()) {
    NM_CUDA_CHECK(cudaGetDeviceProperties(&m_props, device));
}

HandleImpl::~HandleImpl() {
    // No throwing here (DeviceGuard throws): a failing runtime at exit must not terminate.
    int previous = -1;
    bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != m_device &&
                    cudaSetDevice(m_device) == cudaSuccess;
    if (m_cudnn)
        libcudnn().cudnnDestroy(m_cudnn);
    if (m_cublas)
        libcublas().cublasDestroy(m_cublas);
    if (m_cusolver)
        libcusolver().cusolverDnDestroy(m_cusolver);
    if (switched)
        cudaSetDevice(previous);
}

cublasHandle_t HandleImpl::cublas() {
    std::call_once(m_cublas_once, [this] {
        DeviceGuard guard(m_device);
        NM_CUBLAS_CHECK(libcublas().cublasCreate(&m_cublas));
        NM_CUBLAS_CHECK(libcublas().cublasSetStream(m_cublas, m_stream));
        // Pointers to alpha/beta are host scalars in every call here.
        NM_CUBLAS_CHECK(libcublas().cublasSetPointerMode(m_cublas, CUBLAS_POINTER_MODE_HOST));
    });
    return m_cublas;
}

cudnnHandle_t HandleImpl::cudnn() {
    std::call_once(m_cudnn_once, [this] {
        DeviceGuard guard(m_device);
        NM_CUDNN_CHECK(libcudnn().cudnnCreate(&m_cudnn));
        NM_CUDNN_CHECK(libcudnn().cudnnSetStream(m_cudnn, m_stream));
    });
    return m_cudnn;
}

cusolverDnHandle_t HandleImpl::cusolver() {
    std::call_once(m_cusolver_once, [this] {
        DeviceGuard guard(m_device);
        NM_CUSOLVER_CHECK(libcusolver().cusolverDnCreate(&m_cusolver));
        NM_CUSOLVER_CHECK(libcusolver().cusolverDnSetStream(m_cusolver, m_stream));
    });
    return m_cusolver;
}

std::unique_ptr<OperatorBase> HandleImpl::create_operator(OpType type) {
    auto factory = OperatorRegistry::of(Backend::Cuda).find(type);
    std::unique_ptr<OperatorBase> op = factory ? factory(this) : create_staged_operator(type);
    if (debug_enabled())
        op->set_exec_observer(&m_reporter);
    return op;
}

std::unique_ptr<OperatorBase> HandleImpl::create_staged_operator(OpType type) {
    auto factory = staged_registry().find(type);
    if (!factory)
        throw NotSupportedError(
                str_cat("operator ", op_type_name(type), " is not implemented on the CUDA handle"));
    return factory(this);
}

bool HandleImpl::can_create(OpType type) const {
    return OperatorRegistry::of(Backend::Cuda).find(type) || staged_registry().find(type);
}

}  // namespace cuda
}  // namespace neomeg::dnn
