#include "neomeg/core/caching_allocator.h"

#include <cstdio>
#include <iterator>
#include <stdexcept>

namespace neomeg {

CachingAllocator::CachingAllocator(RawAlloc raw_alloc, RawFree raw_free, std::string name,
                                   Describe describe)
    : m_raw_alloc(std::move(raw_alloc)),
      m_raw_free(std::move(raw_free)),
      m_name(std::move(name)),
      m_describe(std::move(describe)) {}

CachingAllocator::~CachingAllocator() {
    // Blocks still in use at exit belong to tensors that outlive the allocator (static
    // destruction order); returning them to the system is still correct.
    for (auto& [ptr, size] : m_in_use)
        m_raw_free(ptr, size);
    release_cached_locked();
}

size_t CachingAllocator::round_size(size_t size) {
    constexpr size_t kSmall = 512, kLarge = size_t(1) << 20;
    if (size == 0)
        return kSmall;
    if (size <= kLarge)
        return (size + kSmall - 1) / kSmall * kSmall;
    return (size + kLarge - 1) / kLarge * kLarge;
}

void* CachingAllocator::alloc(size_t size) {
    size_t rounded = round_size(size);
    std::lock_guard<std::mutex> lock(m_mutex);
    // Best fit, but never a block more than twice the request: a small tensor must not pin a
    // huge cached block.
    auto it = m_free.lower_bound(rounded);
    void* ptr = nullptr;
    size_t got = rounded;
    if (it != m_free.end() && it->first <= 2 * rounded) {
        // Of that size, the block freed last (a multimap keeps equal keys in insertion order):
        // likely still in cache. The first freed one, the oldest, made a loop of ops on 8 MiB
        // tensors write a different cold block each call while earlier ops' blocks were cached:
        // clip, neg, a + row ran at half speed (issue 12).
        it = std::prev(m_free.upper_bound(it->first));
        ptr = it->second;
        got = it->first;
        m_free.erase(it);
    } else {
        ptr = m_raw_alloc(rounded);
        if (!ptr) {
            release_cached_locked();
            ptr = m_raw_alloc(rounded);
        }
        if (!ptr)
            throw_oom_locked(size, rounded);
        m_stats.reserved += rounded;
        m_stats.peak_reserved = std::max(m_stats.peak_reserved, m_stats.reserved);
        ++m_stats.nr_system_allocs;
    }
    m_in_use.emplace(ptr, got);
    m_stats.allocated += got;
    m_stats.peak_allocated = std::max(m_stats.peak_allocated, m_stats.allocated);
    return ptr;
}

void CachingAllocator::free(void* ptr) {
    if (!ptr)
        return;
    std::lock_guard<std::mutex> lock(m_mutex);
    auto it = m_in_use.find(ptr);
    if (it == m_in_use.end())
        throw std::invalid_argument("CachingAllocator::free: pointer was not allocated here");
    m_stats.allocated -= it->second;
    m_free.emplace(it->second, ptr);
    m_in_use.erase(it);
}

void CachingAllocator::empty_cache() {
    std::lock_guard<std::mutex> lock(m_mutex);
    release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
    for (auto& [size, ptr] : m_free) {
        m_raw_free(ptr, size);
        m_stats.reserved -= size;
    }
    m_free.clear();
}

namespace {
std::string human_bytes(size_t n) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(n);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    char buf[48];
    std::snprintf(buf, sizeof(buf), u ? "%.2f %s" : "%.0f %s", v, units[u]);
    return buf;
}
}  // namespace

void CachingAllocator::throw_oom_locked(size_t request, size_t rounded) const {
    std::string msg = "out of memory on " + m_name + ": tried to allocate " + human_bytes(request) +
                      " (" + std::to_string(request) + " bytes, " + std::to_string(rounded) +
                      " rounded); allocated " + human_bytes(m_stats.allocated) + ", reserved " +
                      human_bytes(m_stats.reserved) +
                      " (cache emptied and retried), peak allocated " +
                      human_bytes(m_stats.peak_allocated) + ", peak reserved " +
                      human_bytes(m_stats.peak_reserved);
    if (m_describe)
        msg += "; " + m_describe();
    throw OutOfMemoryError(msg);
}

MemoryStats CachingAllocator::stats() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_stats;
}

void CachingAllocator::reset_peak() {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stats.peak_allocated = m_stats.allocated;
    m_stats.peak_reserved = m_stats.reserved;
}

}  // namespace neomeg
