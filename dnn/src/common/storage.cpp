#include "neomeg/dnn/storage.h"

#include <mutex>
#include <stdexcept>

namespace neomeg::dnn {
namespace {

std::atomic<uint64_t> g_next_id{1};
std::atomic<StorageId::ReleaseHook> g_hooks[StorageId::kMaxReleaseHooks];
std::atomic<int> g_num_hooks{0};

}  // namespace

StorageId::StorageId() : m_id(g_next_id.fetch_add(1, std::memory_order_relaxed)) {}

StorageId::~StorageId() {
    if (!m_derived.load(std::memory_order_relaxed))
        return;
    int n = g_num_hooks.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i)
        if (ReleaseHook hook = g_hooks[i].load(std::memory_order_acquire))
            hook(m_id);
}

void StorageId::add_release_hook(ReleaseHook hook) {
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    int n = g_num_hooks.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i)
        if (g_hooks[i].load(std::memory_order_relaxed) == hook)
            return;
    if (n == kMaxReleaseHooks)
        throw std::logic_error("StorageId::add_release_hook: too many hooks");
    g_hooks[n].store(hook, std::memory_order_release);
    g_num_hooks.store(n + 1, std::memory_order_release);
}

}  // namespace neomeg::dnn
