// Which memory a tensor views and which of its writes it sees, for kernels that keep something
// derived from an input's values between calls (the x86 kernels' weights reordered into oneDNN's
// blocked layout). A pointer cannot say this: a caching allocator hands a freed block's address to
// the next tensor, and a tensor's storage may be written again. So the owner of the memory (the
// runtime's Blob) holds a StorageId: an id no other storage ever gets, and a version that every
// write after the storage's first contents bumps. A tensor that carries one (TensorND::storage)
// promises both; a tensor without one (nullptr) is never cached from.
#pragma once

#include <atomic>
#include <cstdint>

namespace neomeg::dnn {

class StorageId {
public:
    StorageId();  // a fresh id, version 0: the first contents its owner writes
    // Tells the caches that derived something from this storage to drop it.
    ~StorageId();
    StorageId(const StorageId&) = delete;
    StorageId& operator=(const StorageId&) = delete;

    uint64_t id() const { return m_id; }
    uint64_t version() const { return m_version.load(std::memory_order_acquire); }
    // The owner calls this after every write into memory that may have been read already (its
    // first contents, written before anyone reads them, need none).
    void note_write() { m_version.fetch_add(1, std::memory_order_acq_rel); }

    // A cache keeps something derived from this storage: its release hook runs with this id when
    // the storage goes (const: kernels see their inputs' storage read-only).
    void note_derived() const { m_derived.store(true, std::memory_order_relaxed); }

    // Called with the id of every storage that goes after note_derived(); a cache registers one
    // (at most kMaxReleaseHooks in a process).
    using ReleaseHook = void (*)(uint64_t id);
    static constexpr int kMaxReleaseHooks = 4;
    static void add_release_hook(ReleaseHook hook);

private:
    uint64_t m_id;
    std::atomic<uint64_t> m_version{0};
    mutable std::atomic<bool> m_derived{false};
};

}  // namespace neomeg::dnn
