#include "neomeg/core/comp_node.h"

#include <charconv>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "neomeg/dnn/handle.h"

namespace neomeg {

struct CompNode::Impl {
    DeviceType type;
    int device;
    int stream;
    std::string name;
    std::unique_ptr<dnn::Handle> handle;
    CachingAllocator allocator;

    Impl(DeviceType t, int dev, int str, std::string n, std::unique_ptr<dnn::Handle> h,
         CachingAllocator::RawAlloc a, CachingAllocator::RawFree f)
        : type(t),
          device(dev),
          stream(str),
          name(std::move(n)),
          handle(std::move(h)),
          allocator(std::move(a), std::move(f)) {}
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

void* host_alloc(size_t size) {
    return std::aligned_alloc(CachingAllocator::kAlignment, size);
}
void host_free(void* p) {
    std::free(p);
}

[[noreturn]] void bad_name(std::string_view name) {
    throw std::invalid_argument("invalid comp node name '" + std::string(name) +
                                "': expected cpu<N>, gpu<N>, cpux, gpux or xpux, optionally "
                                "followed by :<stream>");
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

}  // namespace

bool is_cuda_available() {
    return get_cuda_device_count() > 0;
}

int get_cuda_device_count() {
    return 0;  // the CUDA backend's comp nodes arrive with the CUDA issue
}

CompNode CompNode::load(std::string_view name) {
    std::string_view dev = name;
    int stream = 0;
    if (auto colon = name.find(':'); colon != std::string_view::npos) {
        dev = name.substr(0, colon);
        stream = parse_int(name.substr(colon + 1), name);
    }
    if (dev == "xpux")
        dev = is_cuda_available() ? "gpu0" : "cpu0";
    else if (dev == "cpux")
        dev = "cpu0";
    else if (dev == "gpux")
        dev = "gpu0";
    DeviceType type;
    int index;
    if (dev.substr(0, 3) == "cpu") {
        type = DeviceType::CPU;
        index = parse_int(dev.substr(3), name);
    } else if (dev.substr(0, 3) == "gpu") {
        type = DeviceType::CUDA;
        index = parse_int(dev.substr(3), name);
        if (index >= get_cuda_device_count())
            throw std::runtime_error(
                    "comp node '" + std::string(name) + "': " +
                    (is_cuda_available() ? "no such CUDA device" : "no CUDA device is available"));
    } else {
        bad_name(name);
    }
    std::string canonical(dev.substr(0, 3));
    canonical.append(std::to_string(index));
    if (stream) {
        canonical.push_back(':');
        canonical.append(std::to_string(stream));
    }

    auto& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto& slot = reg.nodes[canonical];
    if (!slot)
        slot = std::make_unique<Impl>(type, index, stream, canonical, make_cpu_handle(), host_alloc,
                                      host_free);
    return CompNode(slot.get());
}

void CompNode::empty_all_caches() {
    auto& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    for (auto& [name, impl] : reg.nodes)
        impl->allocator.empty_cache();
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
    impl();  // CPU nodes run synchronously: nothing is pending
}
dnn::Handle* CompNode::dnn_handle() const {
    return impl().handle.get();
}

}  // namespace neomeg
