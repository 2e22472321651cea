// A caching allocator: freed blocks are kept and handed out again, so steady-state training
// performs no system allocation per op. Blocks are 64-byte aligned (what AVX-512 loads and oneDNN
// want). Thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace neomeg {

struct MemoryStats {
    size_t allocated = 0;       // bytes handed out and not yet freed
    size_t peak_allocated = 0;  // maximum of `allocated` since creation or reset_peak()
    size_t reserved = 0;        // bytes obtained from the system (allocated + cached)
    size_t peak_reserved = 0;   // maximum of `reserved` since creation or reset_peak()
    size_t nr_system_allocs = 0;
};

// A request the system could not satisfy even after the cache was given back. The message names
// the node, the request and the allocator's statistics (Python sees a RuntimeError).
class OutOfMemoryError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class CachingAllocator {
public:
    static constexpr size_t kAlignment = 64;

    using RawAlloc = std::function<void*(size_t)>;  // returns nullptr when out of memory
    // Gets the size raw_alloc was asked for (the host's munmap needs it).
    using RawFree = std::function<void(void*, size_t)>;
    // Extra words for an out-of-memory message (a GPU's free and total memory).
    using Describe = std::function<std::string()>;

    // raw_alloc/raw_free obtain and return system memory (aligned_alloc or mmap on the host,
    // cudaMalloc on a GPU); `name` (the comp node) and `describe` go into error messages.
    CachingAllocator(RawAlloc raw_alloc, RawFree raw_free, std::string name = "host",
                     Describe describe = {});
    ~CachingAllocator();
    CachingAllocator(const CachingAllocator&) = delete;
    CachingAllocator& operator=(const CachingAllocator&) = delete;

    // Returns a block of at least `size` bytes (a zero-byte request still gets a unique block).
    // When the system refuses, every cached block is given back and the request retried once;
    // if that fails too, throws OutOfMemoryError.
    void* alloc(size_t size);
    // Returns a block to the cache; throws std::invalid_argument for a pointer it did not give out.
    void free(void* ptr);
    // Gives every cached (free) block back to the system.
    void empty_cache();

    MemoryStats stats() const;
    // Restarts both peaks (allocated and reserved) from the current values.
    void reset_peak();

    // Size a request is rounded to: multiples of 512 bytes up to 1 MiB, of 1 MiB above.
    static size_t round_size(size_t size);

private:
    RawAlloc m_raw_alloc;
    RawFree m_raw_free;
    std::string m_name;
    Describe m_describe;
    mutable std::mutex m_mutex;
    std::multimap<size_t, void*> m_free;         // cached blocks by size
    std::unordered_map<void*, size_t> m_in_use;  // live blocks and their sizes
    MemoryStats m_stats;

    void release_cached_locked();
    [[noreturn]] void throw_oom_locked(size_t request, size_t rounded) const;
};

}  // namespace neomeg
