#include "op_profile.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/op_def.h"

namespace neomeg::imperative {
void EagerProfile::add(std::string kind, std::string site, std::chrono::nanoseconds t) {
    std::lock_guard<std::mutex> lock(m_mutex);
    auto [it, first] = m_sites.try_emplace({std::move(kind), std::move(site)});
    if (first)
        return;  // the call that planned the kernel
    Site& s = it->second;
    const int64_t ns = t.count();
    s.ns += ns;
    s.min_ns = s.calls ? std::min(s.min_ns, ns) : ns;
    ++s.calls;
}

bool EagerProfile::empty() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_sites.empty();
}

std::string EagerProfile::summary() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    struct Kind {
        int64_t ns = 0, min_ns = 0;
        size_t calls = 0;
    };
    std::map<std::string, Kind> kinds;
    int64_t total = 0, total_min = 0;
    for (const auto& [key, s] : m_sites) {
        if (s.calls == 0)
            continue;  // a site seen once: only its planning call
        Kind& k = kinds[key.first];
        const int64_t fastest = s.min_ns * static_cast<int64_t>(s.calls);
        k.ns += s.ns;
        k.min_ns += fastest;
        k.calls += s.calls;
        total += s.ns;
        total_min += fastest;
    }
    std::vector<std::pair<std::string, Kind>> rows(kinds.begin(), kinds.end());
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(3);
    os << "eager profile: " << ms(total)
       << " ms in timed calls (their sites' fastest: " << ms(total_min) << " ms)\n";
    for (const auto& [name, k] : rows)
        os << "  " << ms(k.ns) << " ms (fastest " << ms(k.min_ns) << " ms)  " << k.calls
           << " calls of " << name << "\n";
    return os.str();
}

namespace {

// The process's profile, printed when it ends.
struct ProcessProfile {
    EagerProfile profile;
    ~ProcessProfile() {
        if (!profile.empty())
            std::cerr << profile.summary();
    }
};

EagerProfile& process_profile() {
    static ProcessProfile p;
    return p.profile;
}

}  // namespace

bool eager_profile_enabled() {
    static const bool on = [] {
        const char* v = std::getenv("NEOMEG_EAGER_PROFILE");
        return v && *v && std::strcmp(v, "0") != 0;
    }();
    return on;
}

void eager_profile_add(const OpDef& def, std::span<const dnn::TensorLayout> layouts,
                       std::chrono::nanoseconds t) {
    // An Elemwise's cost depends on its mode far more than other ops' on their params.
    std::string kind = def.id() == ops::Elemwise::kId ? def.to_string() : def.name();
    std::string site = def.to_string();
    for (const dnn::TensorLayout& l : layouts) {
        site += ' ';
        site += l.to_string();
    }
    process_profile().add(std::move(kind), std::move(site), t);
}

}  // namespace neomeg::imperative
