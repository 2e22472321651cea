#include "neomeg/imperative/op_timeline.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/op_def.h"

namespace neomeg::imperative {
namespace {

std::atomic<bool> g_on{false};

struct Recording {
    std::mutex mutex;
    std::vector<TimelineEvent> events;
    std::unordered_map<std::thread::id, uint64_t> threads;
};

Recording& recording() {
    static Recording r;
    return r;
}

}  // namespace

void timeline_start() {
    Recording& r = recording();
    std::lock_guard lock(r.mutex);
    r.events.clear();
    r.threads.clear();
    g_on.store(true, std::memory_order_release);
}

std::vector<TimelineEvent> timeline_stop() {
    Recording& r = recording();
    std::lock_guard lock(r.mutex);
    g_on.store(false, std::memory_order_release);
    std::vector<TimelineEvent> out;
    out.swap(r.events);
    return out;
}

bool timeline_recording() {
    return g_on.load(std::memory_order_relaxed);
}

int64_t timeline_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
}

void timeline_add(const OpDef& def, std::span<const dnn::TensorLayout> layouts, int64_t start_ns,
                  int64_t end_ns) {
    if (!timeline_recording())
        return;
    TimelineEvent e;
    // An Elemwise's cost depends on its mode far more than other ops' on their params.
    e.name = def.id() == ops::Elemwise::kId ? def.to_string() : def.name();
    e.params = def.to_string();
    e.inputs.reserve(layouts.size());
    for (const dnn::TensorLayout& l : layouts)
        e.inputs.push_back(l.to_string());
    e.start_ns = start_ns;
    e.duration_ns = end_ns - start_ns;
    Recording& r = recording();
    std::lock_guard lock(r.mutex);
    if (!g_on.load(std::memory_order_relaxed))
        return;  // stopped while this call ran
    auto [it, fresh] = r.threads.try_emplace(std::this_thread::get_id(), r.threads.size());
    e.thread = it->second;
    r.events.push_back(std::move(e));
}

}  // namespace neomeg::imperative
