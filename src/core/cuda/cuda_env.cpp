#include "neomeg/core/cuda_env.h"

#include <cuda_runtime_api.h>

#include <stdexcept>

#include "neomeg/dnn/cuda_libraries.h"

namespace neomeg::cuda {

namespace {

struct Probe {
    int count = 0;
    std::string reason;
};

// cudaGetDeviceCount is the first runtime call: it loads libcuda.so lazily, so a machine without
// a driver gets an error code here (no GPU), never a failure to load NeoMeg.
const Probe& probe() {
    static Probe p = [] {
        Probe r;
        int n = 0;
        cudaError_t err = cudaGetDeviceCount(&n);
        cudaGetLastError();  // the error must not stay behind for the kernels' checks
        if (err == cudaSuccess && n > 0) {
            r.count = n;
            return r;
        }
        int drv = driver_version(), rt = runtime_version();
        if (err == cudaSuccess || err == cudaErrorNoDevice)
            r.reason = "no CUDA device is available";
        else if (drv == 0)
            r.reason = "no CUDA driver (libcuda.so) was found";
        else if (err == cudaErrorInsufficientDriver || drv < rt)
            r.reason = "CUDA driver/runtime version mismatch: the driver supports CUDA " +
                       cuda_version_string(drv) + " but NeoMeg's CUDA runtime is " +
                       cuda_version_string(rt) + "; install a newer driver";
        else
            r.reason = std::string("CUDA could not start: ") + cudaGetErrorString(err);
        return r;
    }();
    return p;
}

}  // namespace

bool built_with_cuda() {
    return true;
}

int device_count() {
    return probe().count;
}

std::string unavailable_reason() {
    return probe().reason;
}

int build_version() {
    return CUDART_VERSION;
}

int runtime_version() {
    int v = -1;
    return cudaRuntimeGetVersion(&v) == cudaSuccess ? v : -1;
}

int driver_version() {
    int v = 0;  // cudaDriverGetVersion gives 0 when no driver is installed
    if (cudaDriverGetVersion(&v) != cudaSuccess)
        v = 0;
    cudaGetLastError();
    return v;
}

int cudnn_build_version() {
    return dnn::cuda_libraries::build_version(dnn::cuda_libraries::Library::Cudnn);
}

int cudnn_runtime_version() {
    return dnn::cuda_libraries::runtime_version(dnn::cuda_libraries::Library::Cudnn);
}

void check_library_versions() {
    using dnn::cuda_libraries::Library;
    for (auto lib : {Library::Cudnn, Library::Cublas})
        if (dnn::cuda_libraries::version_mismatch(lib))
            throw std::runtime_error(dnn::cuda_libraries::load_error(lib));
}

DeviceProperties device_properties(int device) {
    int n = device_count();
    if (device < 0 || device >= n)
        throw std::runtime_error("request gpu " + std::to_string(device) +
                                 " out of valid range [0, " + std::to_string(n) + ")" +
                                 (n ? "" : ": " + unavailable_reason()));
    cudaDeviceProp prop{};
    if (cudaError_t err = cudaGetDeviceProperties(&prop, device); err != cudaSuccess)
        throw std::runtime_error(std::string("cudaGetDeviceProperties: ") +
                                 cudaGetErrorString(err));
    DeviceProperties p;
    p.name = prop.name;
    p.major = prop.major;
    p.minor = prop.minor;
    p.total_memory = prop.totalGlobalMem;
    p.multi_processor_count = prop.multiProcessorCount;
    return p;
}

}  // namespace neomeg::cuda
