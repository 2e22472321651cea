// Collective communication between processes on CPU buffers, through Gloo's TCP transport.
// The megengine.distributed package drives one Communicator per process group; the buffers are
// the contiguous host storage of eager tensors. See docs/architecture.md, "Distributed".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "neomeg/dnn/dtype.h"

namespace neomeg::distributed {

enum class ReduceOp { Sum, Max, Min };

// A failed or timed-out collective: a peer died, closed its connection or never answered.
// The communicator is unusable afterwards (Gloo's pairs stay in the error state).
class CommError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The rendezvous store timed out waiting for keys (a peer never arrived).
class StoreTimeout : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The key-value store the ranks of a group exchange their addresses through. `get` and `wait`
// block until the keys are set, and throw StoreTimeout after `timeout`.
class Store {
public:
    virtual ~Store() = default;
    virtual void set(const std::string& key, const std::vector<char>& value) = 0;
    virtual std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
    virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

// A store in this process's memory, for ranks that are threads (the C++ tests).
class MemoryStore final : public Store {
public:
    MemoryStore();
    ~MemoryStore() override;
    void set(const std::string& key, const std::vector<char>& value) override;
    std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override;
    void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// One rank's connections to the other `size - 1` ranks of a group. Every rank of the group
// constructs it together (the constructor is the rendezvous) and then calls the same
// collectives in the same order. Counts are in elements of `dtype` (every NeoMeg dtype; bool
// reduces as "or" for sum and max, "and" for min); buffers are contiguous.
// Every call blocks until done, or throws CommError after `timeout`.
class Communicator {
public:
    // Keys are written under `prefix` in `store`, so several groups can share one store.
    // `hostname` is the address this rank's listening sockets bind to.
    Communicator(Store& store, const std::string& prefix, int rank, int size,
                 std::chrono::milliseconds timeout, const std::string& hostname = "127.0.0.1");
    ~Communicator();
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    int rank() const { return m_rank; }
    int size() const { return m_size; }

    void all_reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op);
    // `out` is written on `root` only.
    void reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op, int root);
    // `buf` is read on `root` and written on every other rank.
    void broadcast(void* buf, size_t count, dnn::DType dtype, int root);
    // `out` holds size() * count elements, rank r's part at r * count.
    void all_gather(const void* in, void* out, size_t count, dnn::DType dtype);
    // As all_gather, but only `root` receives (`out` is ignored elsewhere).
    void gather(const void* in, void* out, size_t count, dnn::DType dtype, int root);
    // `in` (size() * count elements, read on `root` only): rank r receives part r into `out`.
    void scatter(const void* in, void* out, size_t count, dnn::DType dtype, int root);
    // `in` and `out` hold size() * count elements: part r of `in` goes to rank r, and part r
    // of `out` comes from rank r.
    void all_to_all(const void* in, void* out, size_t count, dnn::DType dtype);
    // Point-to-point: a send matches the recv of the same `tag` on the peer.
    void send(const void* buf, size_t count, dnn::DType dtype, int dst, uint32_t tag);
    void recv(void* buf, size_t count, dnn::DType dtype, int src, uint32_t tag);
    void barrier();

private:
    void check_rank(int r, const char* what) const;

    struct Impl;
    std::unique_ptr<Impl> m_impl;
    int m_rank;
    int m_size;
};

}  // namespace neomeg::distributed
