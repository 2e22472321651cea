#include "src/x86/weight_cache.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace neomeg::dnn::x86 {
namespace {

constexpr size_t kDefaultBudgetMiB = 256;
// Values seen once are remembered (their key only) up to this many, newest kept.
constexpr size_t kMaxNodes = 4096;
constexpr size_t kAlign = 64;

size_t budget_from_env() {
    const char* s = std::getenv("NEOMEG_WEIGHT_CACHE_MB");
    if (!s || !*s)
        return kDefaultBudgetMiB << 20;
    char* end = nullptr;
    unsigned long long mib = std::strtoull(s, &end, 10);
    if (*end != '\0' || *s == '-') {
        std::fprintf(stderr,
                     "neomeg: NEOMEG_WEIGHT_CACHE_MB=%s is not a number of MiB; using %zu\n", s,
                     kDefaultBudgetMiB);
        return kDefaultBudgetMiB << 20;
    }
    return static_cast<size_t>(mib) << 20;
}

struct Key {
    uint64_t storage = 0, version = 0;
    const void* ptr = nullptr;
    TensorLayout layout;
    size_t reverse_from = 0;
    dnnl::memory::desc user, prim;

    bool same_view(const Key& o) const {
        return ptr == o.ptr && layout.eq_layout(o.layout) && reverse_from == o.reverse_from &&
               user == o.user && prim == o.prim;
    }
};

struct Node {
    Key key;
    std::shared_ptr<WeightCache::Entry> entry;  // null: seen once, nothing kept yet
    bool ready = false;                         // the entry is filled
};

}  // namespace

struct WeightCache::Impl {
    mutable std::mutex mutex;
    size_t budget = budget_from_env();
    std::list<Node> lru;  // most recently used first
    std::unordered_multimap<uint64_t, std::list<Node>::iterator> by_storage;
    Stats stats;

    void erase(std::list<Node>::iterator it) {
        auto [b, e] = by_storage.equal_range(it->key.storage);
        for (auto s = b; s != e; ++s) {
            if (s->second == it) {
                by_storage.erase(s);
                break;
            }
        }
        if (it->entry) {
            stats.bytes -= it->entry->bytes;
            --stats.entries;
        }
        lru.erase(it);
    }

    // Drops the least recently used nodes until the kept bytes and nodes fit, sparing `keep`.
    void evict(std::list<Node>::iterator keep) {
        auto it = lru.end();
        while (it != lru.begin() && (stats.bytes > budget || lru.size() > kMaxNodes)) {
            --it;
            if (it == keep)
                continue;
            auto victim = it++;
            erase(victim);
            ++stats.evictions;
        }
    }
};

WeightCache::WeightCache() : m_impl(std::make_unique<Impl>()) {
    StorageId::add_release_hook([](uint64_t id) { instance().release(id); });
    // A fork while another thread holds the lock would leave it held forever in the child (a
    // DataLoader worker): the fork waits for it, and both sides let go after.
    pthread_atfork([] { instance().m_impl->mutex.lock(); },
                   [] { instance().m_impl->mutex.unlock(); },
                   [] { instance().m_impl->mutex.unlock(); });
}

WeightCache& WeightCache::instance() {
    // Never destroyed: storages freed during exit still call the release hook.
    static WeightCache* cache = new WeightCache();
    return *cache;
}

WeightCache::Lookup WeightCache::lookup(const TensorND& t, size_t reverse_from,
                                        const dnnl::memory::desc& user,
                                        const dnnl::memory::desc& prim) {
    if (!t.storage)
        return {};
    Key key{t.storage->id(), t.storage->version(), t.raw_ptr(), t.layout, reverse_from, user, prim};
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    Impl& c = *m_impl;
    if (c.budget == 0)
        return {};
    std::vector<std::list<Node>::iterator> dead;
    auto found = c.lru.end();
    auto [b, e] = c.by_storage.equal_range(key.storage);
    for (auto s = b; s != e; ++s) {
        if (s->second->key.version < key.version)
            dead.push_back(s->second);  // written since: can never hit again
        else if (s->second->key.version == key.version && s->second->key.same_view(key))
            found = s->second;
    }
    for (auto it : dead)
        c.erase(it);
    if (found == c.lru.end()) {
        ++c.stats.misses;
        c.lru.push_front({std::move(key), nullptr, false});
        c.by_storage.emplace(c.lru.front().key.storage, c.lru.begin());
        t.storage->note_derived();
        c.evict(c.lru.begin());
        return {};
    }
    c.lru.splice(c.lru.begin(), c.lru, found);
    if (found->entry) {
        if (!found->ready) {  // another call is filling it
            ++c.stats.misses;
            return {};
        }
        ++c.stats.hits;
        return {found->entry, nullptr};
    }
    size_t bytes = prim.get_size();
    if (bytes > c.budget) {
        ++c.stats.misses;
        return {};
    }
    auto entry = std::make_shared<Entry>();
    entry->storage.reset(new std::byte[bytes + kAlign]);
    auto addr = reinterpret_cast<uintptr_t>(entry->storage.get());
    entry->data = entry->storage.get() + (kAlign - addr % kAlign) % kAlign;
    entry->bytes = bytes;
    found->entry = entry;
    c.stats.bytes += bytes;
    ++c.stats.entries;
    ++c.stats.fills;
    c.evict(found);
    return {nullptr, entry};
}

void WeightCache::commit(const std::shared_ptr<Entry>& entry) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    for (Node& n : m_impl->lru) {
        if (n.entry == entry) {
            n.ready = true;
            return;
        }
    }
}

WeightCache::Stats WeightCache::stats() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->stats;
}

void WeightCache::set_budget(size_t bytes) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    m_impl->budget = bytes;
    m_impl->evict(m_impl->lru.end());
}

void WeightCache::clear() {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    while (!m_impl->lru.empty())
        m_impl->erase(m_impl->lru.begin());
    m_impl->stats = {};
}

void WeightCache::release(uint64_t storage) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    auto [b, e] = m_impl->by_storage.equal_range(storage);
    std::vector<std::list<Node>::iterator> gone;
    for (auto s = b; s != e; ++s)
        gone.push_back(s->second);
    for (auto it : gone)
        m_impl->erase(it);
    if (!gone.empty())
        ++m_impl->stats.releases;
}

}  // namespace neomeg::dnn::x86
