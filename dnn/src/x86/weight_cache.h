// Weights reordered into a primitive's layout, kept between calls: a convolution whose filter is
// the same value on every call (inference, evaluation) reorders it once instead of per call.
// Sound because the key is the value, not the address: the filter's storage id (never reused,
// unlike a caching allocator's addresses) and version (bumped by every write into the storage),
// with the view (address, layout, reversal) and both descriptors of the reorder. A version newer
// than an entry's makes that entry dead and drops it; a freed storage drops its entries (a
// StorageId release hook). Only values seen twice are kept (training writes new weights every
// step, so a per-step value would only churn the cache); memory is bounded by a budget, least
// recently used first out (NEOMEG_WEIGHT_CACHE_MB, default 256; 0 turns the cache off).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn::x86 {

class WeightCache {
public:
    // Reordered weights in the primitive's layout; `data` is 64-byte aligned, `bytes` long.
    struct Entry {
        std::byte* data = nullptr;
        size_t bytes = 0;
        std::unique_ptr<std::byte[]> storage;
    };
    // What a kernel does with this call's weights.
    struct Lookup {
        std::shared_ptr<const Entry> hit;  // the entry holds them: skip staging and reordering
        std::shared_ptr<Entry> fill;       // reorder into this new entry, then commit() it
    };
    struct Stats {
        uint64_t hits = 0, fills = 0, misses = 0, evictions = 0, releases = 0;
        size_t bytes = 0, entries = 0;  // kept now (entries: filled ones only)
    };

    static WeightCache& instance();

    // The weights `t` (its view reversed from axis `reverse_from`, as the operand reads it),
    // described to the reorder as `user` and wanted as `prim`. Neither hit nor fill when `t`
    // carries no storage, the value is seen for the first time, or it would not fit the budget.
    Lookup lookup(const TensorND& t, size_t reverse_from, const dnnl::memory::desc& user,
                  const dnnl::memory::desc& prim);
    // The caller filled `entry` (from lookup().fill): later lookups of its key hit.
    void commit(const std::shared_ptr<Entry>& entry);

    Stats stats() const;
    // Tests: a budget in bytes (0 turns the cache off); drops what no longer fits.
    void set_budget(size_t bytes);
    // Tests: drops every entry and zeroes the counters.
    void clear();

    // Drops every entry of a storage that went (the StorageId release hook).
    void release(uint64_t storage);

private:
    WeightCache();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace neomeg::dnn::x86
