// MemoryStore: the rendezvous store for ranks that are threads of one process.
#include <condition_variable>
#include <map>
#include <mutex>

#include "neomeg/distributed/communicator.h"

namespace neomeg::distributed {

struct MemoryStore::Impl {
    std::mutex mutex;
    std::condition_variable changed;
    std::map<std::string, std::vector<char>> values;
};

MemoryStore::MemoryStore() : m_impl(std::make_unique<Impl>()) {}
MemoryStore::~MemoryStore() = default;

void MemoryStore::set(const std::string& key, const std::vector<char>& value) {
    {
        std::lock_guard lock(m_impl->mutex);
        m_impl->values[key] = value;
    }
    m_impl->changed.notify_all();
}

void MemoryStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_impl->mutex);
    auto all_set = [&] {
        for (auto& k : keys)
            if (!m_impl->values.count(k))
                return false;
        return true;
    };
    if (!m_impl->changed.wait_for(lock, timeout, all_set)) {
        std::string missing;
        for (auto& k : keys)
            if (!m_impl->values.count(k))
                missing += (missing.empty() ? "" : ", ") + k;
        throw StoreTimeout("store: timed out after " + std::to_string(timeout.count()) +
                           " ms waiting for " + missing);
    }
}

std::vector<char> MemoryStore::get(const std::string& key, std::chrono::milliseconds timeout) {
    wait({key}, timeout);
    std::lock_guard lock(m_impl->mutex);
    return m_impl->values.at(key);
}

}  // namespace neomeg::distributed
