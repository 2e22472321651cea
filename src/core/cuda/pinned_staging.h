// Page-locked host blocks through which host<->device copies go, so that a copy from host
// memory is queued asynchronously (a copy from pageable memory makes the driver wait for the
// stream first) and large copies run at the bus's speed. One pool per process: pinned memory
// serves every device. Thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "neomeg/core/caching_allocator.h"

namespace neomeg::cuda_detail {

class PinnedStaging {
public:
    // Copies go through blocks of at most this size; a larger copy is split.
    static constexpr size_t kChunk = size_t(16) << 20;
    // Above this many bytes waiting for their copies, a new block waits for the oldest copy.
    static constexpr size_t kMaxInFlight = size_t(256) << 20;
    // Likewise above this many blocks (small uploads queued far ahead of the GPU).
    static constexpr size_t kMaxPendingBlocks = 4096;

    static PinnedStaging& instance();

    // A pinned block of at least `bytes` (at most kChunk), or nullptr when the system has no
    // pinned memory left (the caller then copies from pageable memory).
    void* acquire(size_t bytes);
    // Returns the block once the work queued on `stream` (of device `device`) so far, the copy
    // using it, is done.
    void release_after(void* block, size_t bytes, int device, cudaStream_t stream);
    // Returns a block no queued work uses any more.
    void release(void* block);

    // Events (without timing) of device `device`, which must be current; an event is recorded
    // only on a stream of its own device.
    cudaEvent_t take_event(int device);
    void give_event(int device, cudaEvent_t ev);

    MemoryStats stats() const { return m_alloc.stats(); }

private:
    PinnedStaging();

    struct Pending {
        void* block;
        size_t bytes;
        int device;
        cudaEvent_t done;
    };
    CachingAllocator m_alloc;
    std::mutex m_mutex;
    std::deque<Pending> m_pending;
    size_t m_pending_bytes = 0;
    std::map<int, std::vector<cudaEvent_t>> m_spare_events;

    void reclaim_locked();
};

}  // namespace neomeg::cuda_detail
