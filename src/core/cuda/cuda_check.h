// Error checks and the current-device guard for the CUDA parts of the comp nodes.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace neomeg::cuda_detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call) {
    cudaGetLastError();  // a non-sticky error must not fail the next, unrelated check
    throw std::runtime_error(std::string("CUDA error: ") + call + ": " + cudaGetErrorString(err) +
                             " (" + cudaGetErrorName(err) + ")");
}

// The calling thread's current device is device `d` while a guard lives (CUDA keeps one per
// thread; every stream, allocation and copy belongs to the device current when it is made).
class DeviceGuard {
public:
    explicit DeviceGuard(int d) {
        cudaGetDevice(&m_prev);
        if (m_prev != d) {
            if (cudaError_t err = cudaSetDevice(d); err != cudaSuccess)
                throw_cuda_error(err, "cudaSetDevice");
            m_changed = true;
        }
    }
    ~DeviceGuard() {
        if (m_changed)
            cudaSetDevice(m_prev);
    }
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
    int m_prev = 0;
    bool m_changed = false;
};

}  // namespace neomeg::cuda_detail

#define NM_CUDA_CHECK(call)                                          \
    do {                                                             \
        if (cudaError_t nm_err_ = (call); nm_err_ != cudaSuccess)    \
            ::neomeg::cuda_detail::throw_cuda_error(nm_err_, #call); \
    } while (0)
