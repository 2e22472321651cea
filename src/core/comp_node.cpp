#include "neomeg/core/comp_node.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "device_queue.h"
#include "host_memory.h"
#include "neomeg/core/cuda_env.h"
#include "neomeg/dnn/handle.h"

namespace neomeg {

struct CompNode::Impl {
    DeviceType type;
    int device;
    int stream;
    std::string name;
    std::unique_ptr<DeviceQueue> queue;  // null on a CPU node
    std::atomic<dnn::Handle*> handle{nullptr};
    std::unique_ptr<dnn::Handle> handle_owner;
    std::mutex handle_mutex;
    CachingAllocator allocator;

    Impl(DeviceType t, int dev, int str, std::string n, std::unique_ptr<dnn::Handle> h,
         std::unique_ptr<DeviceQueue> q, CachingAllocator::RawAlloc a, CachingAllocator::RawFree f,
         CachingAllocator::Describe describe)
        : type(t),
          device(dev),
          stream(str),
          name(n),
          queue(std::move(q)),
          handle(h.get()),
          handle_owner(std::move(h)),
          allocator(std::move(a), std::move(f), std::move(n), std::move(describe)) {}
};

namespace {

// The interned nodes, by canonical name. Never destroyed: tensors may be freed during static
// destruction.
struct Registry {
    std::mutex mutex;
    std::map<std::string, std::unique_ptr<CompNode::Impl>> nodes;
};
Registry& registry() {
    static auto* reg = new Registry();
    return *reg;
}

[[noreturn]] void bad_name(std::string_view name) {
    throw std::invalid_argument("invalid comp node name '" + std::string(name) +
                                "': expected cpu<N>, gpu<N>, xpu<N> or cpux, gpux, xpux, "
                                "optionally followed by :<stream>");
}

// A CPU node runs the x86 backend (oneDNN kernels, naive for the rest) when NeoMeg was built
// with it. NEOMEG_BACKEND=naive forces the reference kernels (to tell a kernel bug from a model
// bug, or to measure what the fast kernels gain); it is read when a node is first loaded.
std::unique_ptr<dnn::Handle> make_cpu_handle() {
    const char* env = std::getenv("NEOMEG_BACKEND");
    std::string_view want = env ? env : "";
    if (want == "naive")
        return dnn::Handle::make_naive();
    if (want == "x86")
        return dnn::Handle::make_x86();
    if (!want.empty())
        throw std::invalid_argument("NEOMEG_BACKEND=" + std::string(want) +
                                    ": expected naive or x86, or unset for the best available");
    return dnn::Handle::x86_available() ? dnn::Handle::make_x86() : dnn::Handle::make_naive();
}

int parse_int(std::string_view s, std::string_view whole) {
    int v = -1;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0)
        bad_name(whole);
    return v;
}

// A GPU node: its stream, its cudaMalloc allocator (whose out-of-memory message adds the
// device's free and total memory); the dnn handle comes on first use (dnn_handle()).
std::unique_ptr<CompNode::Impl> make_gpu_impl(int index, int stream, const std::string& name) {
    std::unique_ptr<DeviceQueue> queue = make_cuda_queue(index, stream);
    DeviceQueue* q = queue.get();
    auto describe = [q, name] {
        auto [total, free] = q->mem_status();
        return name + " has " + std::to_string(free) + " of " + std::to_string(total) +
               " bytes free";
    };
    return std::make_unique<CompNode::Impl>(
            CompNode::DeviceType::CUDA, index, stream, name, nullptr, std::move(queue),
            [q](size_t n) { return q->raw_alloc(n); }, [q](void* p, size_t) { q->raw_free(p); },
            describe);
}

}  // namespace

bool is_cuda_available() {
    return get_cuda_device_count() > 0;
}

int get_cuda_device_count() {
    return cuda::device_count();
}

CompNode CompNode::load(std::string_view name) {
    std::string_view dev = name;
    int stream = 0;
    if (auto colon = name.find(':'); colon != std::string_view::npos) {
        dev = name.substr(0, colon);
        stream = parse_int(name.substr(colon + 1), name);
    }
    // MegEngine's locators: "<type><index>" or "<type>x" (the default device of that type);
    // "xpu" means the GPU where there is one and the CPU otherwise; a type followed directly by
    // ":<stream>" ("cpu:1") is device 0, and a bare "xpu" is "xpux".
    std::string_view kind = dev.substr(0, 3),
                     index_str = dev.substr(std::min<size_t>(3, dev.size()));
    const bool stream_given = dev.size() != name.size();
    if (index_str == "x" || (index_str.empty() && (stream_given || kind == "xpu")))
        index_str = "0";
    if (kind == "xpu")
        kind = is_cuda_available() ? "gpu" : "cpu";
    DeviceType type;
    int index;
    if (kind == "cpu") {
        type = DeviceType::CPU;
        index = parse_int(index_str, name);
    } else if (kind == "gpu") {
        type = DeviceType::CUDA;
        index = parse_int(index_str, name);
        if (int n = get_cuda_device_count(); index >= n)
            throw std::runtime_error("comp node '" + std::string(name) + "': request gpu" +
                                     std::to_string(index) + " out of valid range [0, " +
                                     std::to_string(n) + ")" +
                                     (n ? "" : ": " + cuda::unavailable_reason()));
    } else {
        bad_name(name);
    }
    std::string canonical(kind);
    canonical.append(std::to_string(index));
    if (stream) {
        canonical.push_back(':');
        canonical.append(std::to_string(stream));
    }

    auto& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    if (auto it = reg.nodes.find(canonical); it != reg.nodes.end())
        return CompNode(it->second.get());
    // Made before it is registered: a node whose making throws (a bad NEOMEG_BACKEND, a GPU
    // that cannot start) leaves no empty entry behind for empty_all_caches/sync_all.
    std::unique_ptr<Impl> made =
            type == DeviceType::CUDA
                    ? make_gpu_impl(index, stream, canonical)
                    : std::make_unique<Impl>(type, index, stream, canonical, make_cpu_handle(),
                                             nullptr, host_memory::alloc, host_memory::free,
                                             nullptr);
    Impl* impl = made.get();
    reg.nodes.emplace(canonical, std::move(made));
    return CompNode(impl);
}

void CompNode::empty_all_caches() {
    auto& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    for (auto& [name, impl] : reg.nodes)
        impl->allocator.empty_cache();
}

void CompNode::sync_all() {
    std::vector<Impl*> nodes;
    {
        auto& reg = registry();
        std::lock_guard<std::mutex> lock(reg.mutex);
        for (auto& [name, impl] : reg.nodes)
            if (impl->queue)
                nodes.push_back(impl.get());
    }
    for (Impl* impl : nodes)  // outside the lock: a wait may be long
        impl->queue->sync();
}

CompNode::Impl& CompNode::impl() const {
    if (!m_impl)
        throw std::logic_error("use of an invalid (default-constructed) CompNode");
    return *m_impl;
}

CompNode::DeviceType CompNode::device_type() const {
    return impl().type;
}
int CompNode::device_index() const {
    return impl().device;
}
int CompNode::stream() const {
    return impl().stream;
}
std::string CompNode::to_string() const {
    return m_impl ? m_impl->name : "invalid";
}
void* CompNode::alloc(size_t size) const {
    return impl().allocator.alloc(size);
}
void CompNode::free(void* ptr) const {
    impl().allocator.free(ptr);
}
MemoryStats CompNode::memory_stats() const {
    return impl().allocator.stats();
}
void CompNode::reset_peak_memory_stats() const {
    impl().allocator.reset_peak();
}
void CompNode::empty_cache() const {
    impl().allocator.empty_cache();
}
void CompNode::sync() const {
    if (auto& q = impl().queue)  // CPU nodes run synchronously: nothing is pending
        q->sync();
}

dnn::Handle* CompNode::dnn_handle() const {
    Impl& i = impl();
    if (dnn::Handle* h = i.handle.load(std::memory_order_acquire))
        return h;
    // A GPU node makes its handle on first use, so that loading a node, its memory and its
    // copies work in a build whose kernels cannot run here.
    std::lock_guard<std::mutex> lock(i.handle_mutex);
    if (!i.handle_owner) {
        i.handle_owner = i.queue->make_handle();
        i.handle.store(i.handle_owner.get(), std::memory_order_release);
    }
    return i.handle_owner.get();
}

void* CompNode::stream_handle() const {
    auto& q = impl().queue;
    return q ? q->stream() : nullptr;
}

std::pair<size_t, size_t> CompNode::mem_status() const {
    if (auto& q = impl().queue)
        return q->mem_status();
    size_t page = static_cast<size_t>(::sysconf(_SC_PAGE_SIZE));
    size_t total = page * static_cast<size_t>(::sysconf(_SC_PHYS_PAGES));
    size_t free = page * static_cast<size_t>(::sysconf(_SC_AVPHYS_PAGES));
    std::ifstream meminfo("/proc/meminfo");  // MemAvailable counts reclaimable caches too
    for (std::string key; meminfo >> key;) {
        size_t kib = 0;
        meminfo >> kib;
        if (key == "MemAvailable:") {
            free = kib * 1024;
            break;
        }
        meminfo.ignore(64, '\n');
    }
    return {total, free};
}

void CompNode::copy_from_host(void* dst, const void* src, size_t bytes) const {
    if (!bytes)
        return;
    if (auto& q = impl().queue)
        q->copy_h2d(dst, src, bytes);
    else
        std::memcpy(dst, src, bytes);
}

void CompNode::copy_to_host(void* dst, const void* src, size_t bytes) const {
    if (!bytes)
        return;
    if (auto& q = impl().queue)
        q->copy_d2h(dst, src, bytes);
    else
        std::memcpy(dst, src, bytes);
}

void CompNode::copy(CompNode dst_cn, void* dst, CompNode src_cn, const void* src, size_t bytes) {
    if (!bytes)
        return;
    auto& dq = dst_cn.impl().queue;
    auto& sq = src_cn.impl().queue;
    if (!sq) {
        dst_cn.copy_from_host(dst, src, bytes);
        return;
    }
    if (!dq) {
        src_cn.copy_to_host(dst, src, bytes);
        return;
    }
    // Both on GPUs: the copy runs on the destination's stream after the source's pending work;
    // the source's stream then waits for the copy, so a block it frees and reuses is not
    // overwritten while being read.
    dq->wait_for(*sq);
    dq->copy_d2d(dst, src, sq->device(), bytes);
    sq->wait_for(*dq);
}

void CompNode::wait_for(CompNode other) const {
    auto& q = impl().queue;
    auto& oq = other.impl().queue;
    if (!oq || m_impl == other.m_impl)
        return;  // a CPU node's work is done when it returns
    if (q)
        q->wait_for(*oq);
    else
        oq->sync();
}

}  // namespace neomeg
