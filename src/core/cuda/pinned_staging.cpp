#include "pinned_staging.h"

#include "cuda_check.h"

namespace neomeg::cuda_detail {

namespace {
void* pinned_alloc(size_t bytes) {
    void* p = nullptr;
    // Portable: a block may stage a copy to any device.
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    return p;
}
void pinned_free(void* p, size_t) {
    cudaFreeHost(p);
}
}  // namespace

PinnedStaging::PinnedStaging() : m_alloc(pinned_alloc, pinned_free, "pinned host memory") {}

PinnedStaging& PinnedStaging::instance() {
    static auto* pool = new PinnedStaging();  // never destroyed: copies may run at exit
    return *pool;
}

void PinnedStaging::reclaim_locked() {
    // Copies complete about in the order they were queued: looking at the oldest ones keeps
    // this O(1) per block even when thousands of small uploads (scalars) wait behind kernels.
    auto retire = [this] {
        Pending oldest = m_pending.front();
        m_pending.pop_front();
        m_alloc.free(oldest.block);
        m_pending_bytes -= oldest.bytes;
        m_spare_events[oldest.device].push_back(oldest.done);
    };
    while (!m_pending.empty() && cudaEventQuery(m_pending.front().done) == cudaSuccess)
        retire();
    cudaGetLastError();  // cudaErrorNotReady is reported as a last error too
    while (!m_pending.empty() &&
           (m_pending_bytes > kMaxInFlight || m_pending.size() > kMaxPendingBlocks)) {
        cudaEventSynchronize(m_pending.front().done);
        retire();
    }
}

void* PinnedStaging::acquire(size_t bytes) {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        reclaim_locked();
    }
    try {
        return m_alloc.alloc(bytes);
    } catch (const OutOfMemoryError&) {
        return nullptr;
    }
}

void PinnedStaging::release_after(void* block, size_t bytes, int device, cudaStream_t stream) {
    cudaEvent_t ev = take_event(device);
    NM_CUDA_CHECK(cudaEventRecord(ev, stream));
    std::lock_guard<std::mutex> lock(m_mutex);
    m_pending.push_back({block, bytes, device, ev});
    m_pending_bytes += bytes;
}

void PinnedStaging::release(void* block) {
    m_alloc.free(block);
}

cudaEvent_t PinnedStaging::take_event(int device) {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto& spare = m_spare_events[device];
        if (!spare.empty()) {
            cudaEvent_t ev = spare.back();
            spare.pop_back();
            return ev;
        }
    }
    cudaEvent_t ev;
    NM_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    return ev;
}

void PinnedStaging::give_event(int device, cudaEvent_t ev) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_spare_events[device].push_back(ev);
}

}  // namespace neomeg::cuda_detail
