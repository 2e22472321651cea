// A GPU comp node's queue: its own non-blocking stream (never the legacy default stream, which
// would serialise every node), cudaMalloc for its allocator, and copies through pinned staging.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "../device_queue.h"
#include "cuda_check.h"
#include "neomeg/core/cuda_env.h"
#include "neomeg/dnn/handle.h"
#include "pinned_staging.h"

namespace neomeg {

namespace {

using cuda_detail::DeviceGuard;
using cuda_detail::PinnedStaging;

// Below this a device-to-host copy goes straight to the caller's memory: the copy waits anyway,
// and one staging memcpy would cost more than the driver's own staging saves.
constexpr size_t kDirectReadBytes = size_t(1) << 20;

class CudaQueue final : public DeviceQueue {
public:
    explicit CudaQueue(int device) : m_device(device) {
        DeviceGuard g(device);
        NM_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
        NM_CUDA_CHECK(cudaEventCreateWithFlags(&m_event, cudaEventDisableTiming));
    }
    ~CudaQueue() override {
        // Errors ignored: at exit the runtime may already be unloading.
        cudaEventDestroy(m_event);
        cudaStreamDestroy(m_stream);
    }

    int device() const override { return m_device; }
    void* stream() const override { return m_stream; }

    void sync() override {
        DeviceGuard g(m_device);
        NM_CUDA_CHECK(cudaStreamSynchronize(m_stream));
    }

    void* raw_alloc(size_t bytes) override {
        DeviceGuard g(m_device);
        void* p = nullptr;
        cudaError_t err = cudaMalloc(&p, bytes);
        if (err == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            return nullptr;  // the caching allocator empties its cache and retries once
        }
        if (err != cudaSuccess)
            cuda_detail::throw_cuda_error(err, "cudaMalloc");
        return p;
    }

    void raw_free(void* ptr) override {
        DeviceGuard g(m_device);
        cudaFree(ptr);  // synchronises the device, so no queued kernel still uses the block
        cudaGetLastError();
    }

    std::pair<size_t, size_t> mem_status() override {
        DeviceGuard g(m_device);
        size_t free = 0, total = 0;
        NM_CUDA_CHECK(cudaMemGetInfo(&free, &total));
        return {total, free};
    }

    void copy_h2d(void* dst, const void* src, size_t bytes) override {
        DeviceGuard g(m_device);
        auto& staging = PinnedStaging::instance();
        auto* d = static_cast<std::byte*>(dst);
        auto* s = static_cast<const std::byte*>(src);
        for (size_t off = 0; off < bytes;) {
            size_t n = std::min(PinnedStaging::kChunk, bytes - off);
            void* block = staging.acquire(n);
            if (!block) {
                // No pinned memory: the driver stages pageable memory itself and returns once
                // `src` is read.
                NM_CUDA_CHECK(cudaMemcpyAsync(d + off, s + off, bytes - off, cudaMemcpyHostToDevice,
                                              m_stream));
                return;
            }
            std::memcpy(block, s + off, n);
            NM_CUDA_CHECK(cudaMemcpyAsync(d + off, block, n, cudaMemcpyHostToDevice, m_stream));
            staging.release_after(block, n, m_device, m_stream);
            off += n;
        }
    }

    void copy_d2h(void* dst, const void* src, size_t bytes) override {
        DeviceGuard g(m_device);
        if (bytes < kDirectReadBytes || !read_staged(dst, src, bytes)) {
            NM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, m_stream));
            NM_CUDA_CHECK(cudaStreamSynchronize(m_stream));
        }
    }

    void copy_d2d(void* dst, const void* src, int src_device, size_t bytes) override {
        DeviceGuard g(m_device);
        if (src_device == m_device)
            NM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, m_stream));
        else
            NM_CUDA_CHECK(cudaMemcpyPeerAsync(dst, m_device, src, src_device, bytes, m_stream));
    }

    void wait_for(DeviceQueue& other_base) override {
        auto& other = static_cast<CudaQueue&>(other_base);
        if (&other == this)
            return;
        // The event is recorded on the other stream (its device's event); the wait takes the
        // record as it is now, so the event may be recorded again right after.
        std::lock_guard<std::mutex> lock(other.m_event_mutex);
        {
            DeviceGuard g(other.m_device);
            NM_CUDA_CHECK(cudaEventRecord(other.m_event, other.m_stream));
        }
        DeviceGuard g(m_device);
        NM_CUDA_CHECK(cudaStreamWaitEvent(m_stream, other.m_event, 0));
    }

    std::unique_ptr<dnn::Handle> make_handle() override {
        return dnn::Handle::make_cuda(m_device, m_stream);
    }

private:
    int m_device;
    cudaStream_t m_stream = nullptr;
    cudaEvent_t m_event = nullptr;
    std::mutex m_event_mutex;

    // A large read through two pinned blocks: the device fills one while the host empties the
    // other. False (nothing copied) when pinned memory is short.
    bool read_staged(void* dst, const void* src, size_t bytes) {
        auto& staging = PinnedStaging::instance();
        void* buf[2] = {staging.acquire(PinnedStaging::kChunk), nullptr};
        if (buf[0])
            buf[1] = staging.acquire(PinnedStaging::kChunk);
        if (!buf[1]) {
            if (buf[0])
                staging.release(buf[0]);
            return false;
        }
        cudaEvent_t ev[2] = {staging.take_event(m_device), staging.take_event(m_device)};
        size_t pending_off[2] = {0, 0}, pending_n[2] = {0, 0};
        auto* d = static_cast<std::byte*>(dst);
        auto* s = static_cast<const std::byte*>(src);
        auto drain = [&](int k) {
            if (!pending_n[k])
                return;
            NM_CUDA_CHECK(cudaEventSynchronize(ev[k]));
            std::memcpy(d + pending_off[k], buf[k], pending_n[k]);
            pending_n[k] = 0;
        };
        int k = 0;
        for (size_t off = 0; off < bytes; off += pending_n[k], k ^= 1) {
            drain(k);
            size_t n = std::min(PinnedStaging::kChunk, bytes - off);
            NM_CUDA_CHECK(cudaMemcpyAsync(buf[k], s + off, n, cudaMemcpyDeviceToHost, m_stream));
            NM_CUDA_CHECK(cudaEventRecord(ev[k], m_stream));
            pending_off[k] = off;
            pending_n[k] = n;
        }
        drain(k);  // the older of the two chunks in flight first
        drain(k ^ 1);
        for (int i = 0; i < 2; ++i) {
            staging.release(buf[i]);
            staging.give_event(m_device, ev[i]);
        }
        return true;
    }
};

}  // namespace

std::unique_ptr<DeviceQueue> make_cuda_queue(int device, int) {
    cuda::check_library_versions();
    return std::make_unique<CudaQueue>(device);
}

}  // namespace neomeg
