// The device side of a comp node whose memory is not host memory: a CUDA stream, its memory and
// its copies. CPU nodes have none (their copies are memcpy, their work is done when queued), so
// the CPU paths never reach this interface.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

namespace neomeg {
namespace dnn {
class Handle;
}

class DeviceQueue {
public:
    virtual ~DeviceQueue() = default;

    virtual int device() const = 0;
    virtual void* stream() const = 0;
    virtual void sync() = 0;

    // Device memory for the node's caching allocator: nullptr when the device is out of memory.
    virtual void* raw_alloc(size_t bytes) = 0;
    virtual void raw_free(void* ptr) = 0;
    virtual std::pair<size_t, size_t> mem_status() = 0;  // total, free

    // Queued on this stream. h2d returns when `src` may be reused; d2h when `dst` holds the bytes.
    virtual void copy_h2d(void* dst, const void* src, size_t bytes) = 0;
    virtual void copy_d2h(void* dst, const void* src, size_t bytes) = 0;
    // From memory of device `src_device` to this device's memory.
    virtual void copy_d2d(void* dst, const void* src, int src_device, size_t bytes) = 0;
    // Later work queued here waits for the work queued on `other` so far.
    virtual void wait_for(DeviceQueue& other) = 0;

    virtual std::unique_ptr<dnn::Handle> make_handle() = 0;
};

// A new stream on CUDA device `device`; throws std::runtime_error when CUDA cannot provide it
// (never called in a build without CUDA: there are no devices).
std::unique_ptr<DeviceQueue> make_cuda_queue(int device, int stream);

}  // namespace neomeg
