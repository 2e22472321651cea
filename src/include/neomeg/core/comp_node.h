// A CompNode is a device plus an execution queue ("cpu0", "gpu0", "gpu0:1"). Tensors live on a
// comp node, and its dnn handle runs their operators. Comp nodes are interned: load() with the
// same name returns the same node, so a CompNode is a cheap, comparable value.
//
// Names: "cpu<N>" a CPU queue; "cpux" the default CPU queue; "xpux" the default device (a GPU
// when one is usable, else the CPU); "gpu<N>" CUDA device N. An optional ":<stream>" suffix
// selects a queue on the same device. CPU queues execute synchronously for now.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

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

// Whether CUDA devices are usable in this process (false in a build without CUDA).
bool is_cuda_available();
int get_cuda_device_count();

}  // namespace neomeg
