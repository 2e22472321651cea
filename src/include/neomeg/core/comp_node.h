// A CompNode is a device plus an execution queue ("cpu0", "gpu0", "gpu0:1"). Tensors live on a
// comp node, and its dnn handle runs their operators. Comp nodes are interned: load() with the
// same name returns the same node, so a CompNode is a cheap, comparable value.
//
// Names: "cpu<N>" a CPU queue; "cpux" the default CPU queue; "xpux" the default device (a GPU
// when one is usable, else the CPU); "gpu<N>" CUDA device N. An optional ":<stream>" suffix
// selects a queue on the same device. CPU queues execute synchronously. A GPU node is a CUDA
// stream: its operators and copies are queued there and run asynchronously; a host read
// (copy_to_host) waits for them, and a copy between nodes orders the two queues with events.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "neomeg/core/caching_allocator.h"

namespace neomeg {
namespace dnn {
class Handle;
}

class CompNode {
public:
    enum class DeviceType { CPU, CUDA };
    struct Impl;

    CompNode() = default;  // invalid until assigned from load()

    // Throws std::invalid_argument for a malformed name, std::runtime_error for a device that is
    // not present (e.g. "gpu0" on a machine without CUDA).
    static CompNode load(std::string_view name);
    static CompNode default_device() { return load("xpux"); }

    bool valid() const { return m_impl != nullptr; }
    DeviceType device_type() const;
    int device_index() const;
    int stream() const;
    std::string to_string() const;  // canonical name, e.g. "cpu0" or "gpu0:1"

    // Device memory from this node's caching allocator (64-byte aligned).
    void* alloc(size_t size) const;
    void free(void* ptr) const;
    MemoryStats memory_stats() const;
    void reset_peak_memory_stats() const;
    void empty_cache() const;
    // empty_cache() of every node loaded so far.
    static void empty_all_caches();
    // Waits until all work queued on this node has finished.
    void sync() const;
    // sync() of every node loaded so far.
    static void sync_all();
    // Total and free bytes of the device (a CPU: physical and available memory).
    std::pair<size_t, size_t> mem_status() const;
    // The node's cudaStream_t (nullptr on a CPU node).
    void* stream_handle() const;

    // Copies `bytes` from host memory into this node's memory at `dst`, queued after the work
    // already queued here; `src` may be reused as soon as it returns.
    void copy_from_host(void* dst, const void* src, size_t bytes) const;
    // Copies `bytes` of this node's memory at `src` to host memory; returns when they are there
    // (after the work queued here that writes them).
    void copy_to_host(void* dst, const void* src, size_t bytes) const;
    // Copies between the memories of any two nodes (the same one included). Later work on
    // `dst_cn` sees the bytes; later work on `src_cn` (reusing `src`'s block) waits for the read.
    static void copy(CompNode dst_cn, void* dst, CompNode src_cn, const void* src, size_t bytes);
    // Makes later work queued on this node wait for the work queued on `other` so far (an
    // event on a GPU stream; a host wait when only `other` is a GPU; nothing between CPUs).
    void wait_for(CompNode other) const;

    // The kernel library handle that runs operators on this node.
    dnn::Handle* dnn_handle() const;

    bool operator==(const CompNode& rhs) const { return m_impl == rhs.m_impl; }
    bool operator!=(const CompNode& rhs) const { return m_impl != rhs.m_impl; }
    size_t hash() const { return std::hash<const void*>()(m_impl); }

private:
    explicit CompNode(Impl* impl) : m_impl(impl) {}
    Impl& impl() const;
    Impl* m_impl = nullptr;
};

// Whether CUDA devices are usable in this process (false in a build without CUDA, without a
// driver or without a device; never an error). The details are in neomeg/core/cuda_env.h.
bool is_cuda_available();
int get_cuda_device_count();

}  // namespace neomeg
