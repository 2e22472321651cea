// The store steps of a group's rendezvous (rendezvous.h) and await_ranks (communicator.h).
#include "rendezvous.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace neomeg::distributed {

namespace rendezvous {

using Millis = std::chrono::milliseconds;

Millis time_left(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    return std::max(left, Millis(1));
}

std::string seconds(Millis t) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g s", static_cast<double>(t.count()) / 1000.0);
    return buf;
}

std::string name_ranks(const std::vector<int>& ranks) {
    std::string out = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i)
        out += (i ? ", " : "") + std::to_string(ranks[i]);
    return out;
}

std::vector<size_t> wait_for_keys(Store& store, const std::vector<std::string>& keys,
                                  Clock::time_point deadline) {
    try {
        store.wait(keys, time_left(deadline));
        return {};
    } catch (const StoreTimeout&) {
    }
    // Which ones: each looked at once more.
    std::vector<size_t> missing;
    for (size_t i = 0; i < keys.size(); ++i) {
        try {
            store.wait({keys[i]}, Millis(1));
        } catch (const StoreTimeout&) {
            missing.push_back(i);
        }
    }
    return missing;
}

std::vector<int> meet(Store& store, const std::string& prefix, int rank, int size,
                      Clock::time_point deadline, const std::vector<char>& value) {
    store.set(prefix + std::to_string(rank), value);
    std::vector<std::string> keys;
    std::vector<int> peers;
    for (int r = 0; r < size; ++r) {
        if (r == rank)
            continue;
        keys.push_back(prefix + std::to_string(r));
        peers.push_back(r);
    }
    std::vector<int> missing;
    for (size_t i : wait_for_keys(store, keys, deadline))
        missing.push_back(peers[i]);
    return missing;
}

std::vector<char> own_socket_addresses() {
    std::string out;
    DIR* dir = opendir("/proc/self/fd");
    if (!dir)
        return {};
    while (dirent* entry = readdir(dir)) {
        char* end = nullptr;
        long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd == dirfd(dir))
            continue;
        sockaddr_storage ss{};
        socklen_t len = sizeof(ss);
        if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&ss), &len) != 0)
            continue;
        char host[INET6_ADDRSTRLEN] = {};
        int port = 0;
        if (ss.ss_family == AF_INET) {
            auto* in = reinterpret_cast<sockaddr_in*>(&ss);
            inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
            port = ntohs(in->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            auto* in = reinterpret_cast<sockaddr_in6*>(&ss);
            inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof(host));
            port = ntohs(in->sin6_port);
        } else {
            continue;
        }
        out += std::string(host) + ":" + std::to_string(port) + "\n";
    }
    closedir(dir);
    return {out.begin(), out.end()};
}

std::vector<std::string> addresses_in(const std::string& message) {
    // Gloo prints an address as "[host]:port", Debian's Gloo (2022) with the port's two bytes
    // in network order: each port is also read the other way round, after the one as printed.
    std::vector<std::string> out;
    for (size_t open = message.find('['); open != std::string::npos;
         open = message.find('[', open + 1)) {
        size_t close = message.find_first_of("[]", open + 1);
        if (close == std::string::npos)
            break;
        if (message[close] == '[' || message.compare(close, 2, "]:") != 0)
            continue;
        size_t digits = close + 2;
        while (digits < message.size() && message[digits] >= '0' && message[digits] <= '9')
            ++digits;
        if (digits == close + 2 || digits > close + 7)
            continue;
        std::string host = message.substr(open + 1, close - open - 1);
        unsigned long port = std::stoul(message.substr(close + 2, digits - close - 2));
        if (port > 0xffff)
            continue;
        out.push_back(host + ":" + std::to_string(port));
        out.push_back(host + ":" + std::to_string(((port & 0xff) << 8) | (port >> 8)));
    }
    return out;
}

}  // namespace rendezvous

void await_ranks(Store& store, const std::string& prefix, int rank, int size,
                 std::chrono::steady_clock::time_point deadline,
                 std::chrono::milliseconds timeout) {
    auto absent = rendezvous::meet(store, prefix + "arrived/", rank, size, deadline);
    if (absent.empty())
        return;
    throw StoreTimeout("distributed rendezvous: rank " + std::to_string(rank) + " of " +
                       std::to_string(size) + " waited " + rendezvous::seconds(timeout) +
                       " (the group's timeout) for " + rendezvous::name_ranks(absent) +
                       " of the group, which never reached the group's first collective (" +
                       (absent.size() == 1 ? "it" : "they") +
                       " raised, died, or called something else)");
}

}  // namespace neomeg::distributed
