// Collective communication between processes on CPU buffers, through Gloo's TCP transport.
// The megengine.distributed package drives one Communicator per process group; the buffers are
// the contiguous host storage of eager tensors. See docs/architecture.md, "Distributed".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
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

// The first step of a group's rendezvous (Communicator's and NcclCommunicator's): this rank
// writes `prefix` + "arrived/<rank>" and waits until `deadline` for the other ranks' marks. A
// transport connects only once every rank is there, so a rank that raised, died or never
// reached the group's first collective is named by a StoreTimeout here, within the timeout,
// rather than found by the transport's own connect waits. `timeout` is the group's (for the
// message).
void await_ranks(Store& store, const std::string& prefix, int rank, int size,
                 std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds timeout);

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

// One transfer of a batch of point-to-point transfers (Communicator::send_recv): `count`
// elements of `dtype` sent from `buf` to `peer`, or received into `buf` from `peer`. A send
// matches the peer's recv of the same `tag`; NCCL's batch (DeviceCommunicator::send_recv)
// ignores tags and matches each send with the peer's next recv from this rank.
struct PointToPoint {
    enum class Kind { Send, Recv };
    Kind kind = Kind::Send;
    void* buf = nullptr;  // read by a send, written by a recv
    size_t count = 0;
    dnn::DType dtype;
    int peer = 0;
    uint32_t tag = 0;
};

// A collective started by Communicator::all_reduce_async, which its communicator's worker
// thread runs. The buffers it was given must stay valid until wait() returns.
class Work {
public:
    // Blocks until the collective is done; rethrows its error (CommError).
    void wait();
    bool completed() const;
    // The worker's side: the collective ended, with `error` when it failed.
    void finish(std::exception_ptr error);

private:
    mutable std::mutex m_mutex;
    std::condition_variable m_done_cv;
    bool m_done = false;
    std::exception_ptr m_error;
};

// One rank's connections to the other `size - 1` ranks of a group. Every rank of the group
// constructs it together (the constructor is the rendezvous, bounded by `timeout` as a whole:
// it throws StoreTimeout naming the ranks that did not arrive, or CommError naming the rank it
// could not connect to) and then calls the same collectives in the same order. Counts are in
// elements of `dtype` (every NeoMeg dtype; bool reduces as "or" for sum and max, "and" for min);
// buffers are contiguous. Every call blocks until done, or throws CommError after `timeout`;
// all_reduce_async returns at once. One thread issues a communicator's calls: collectives then run
// in call order on every rank (a blocking call first waits for the asynchronous ones issued before
// it).
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

    // Throws std::invalid_argument, naming both, where a rank's count, dtype or op differs from
    // its peer's (every rank of a pair that disagrees; the others' wait times out).
    void all_reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op);
    // As all_reduce, run on this communicator's worker thread while the caller goes on (the
    // gradient buckets of megengine.distributed's make_allreduce_cb overlap backward this way).
    std::shared_ptr<Work> all_reduce_async(const void* in, void* out, size_t count,
                                           dnn::DType dtype, ReduceOp op);
    // `out` is written on `root` only.
    void reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op, int root);
    // `buf` is read on `root` and written on every other rank.
    void broadcast(void* buf, size_t count, dnn::DType dtype, int root);
    // `in` (read on `root` only) into `out` on every rank, root included (`in` may be `out`).
    // The root copies `in` into `out` while its messages go out from `in`.
    void broadcast(const void* in, void* out, size_t count, dnn::DType dtype, int root);
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
    // The transfers of `ops` together, as NCCL runs those between ncclGroupStart and
    // ncclGroupEnd: every send and recv is posted before any is waited for, so transfers that
    // wait for each other one by one (two ranks each sending to the other first) complete.
    // Blocks until all are done; CommError after the timeout, std::invalid_argument (before
    // anything is posted) for a bad peer.
    void send_recv(std::span<const PointToPoint> ops);
    void barrier();

    // The rank that `peer` said it lost, in the report a failing rank sends each peer still
    // connected before it closes its connections; -1 when it sent none. Waits up to `wait` for
    // `peer`'s connection to fail (the report comes before). Says which rank to blame when a
    // peer is lost outside a collective: the Server's host gone while this rank waits on the
    // store (megengine.distributed's Client).
    int reported_by(int peer, std::chrono::milliseconds wait) const;
    // Tells every peer still connected that this rank lost `rank` (as a collective that fails on
    // a lost peer does), once, before this rank fails for it outside a collective (a store wait
    // for a key that `rank` was to set): a peer that then sees this rank's connection close
    // names `rank`, not this one. Returns once the reports are written (at most a second).
    void tell_peers_lost(int rank);

private:
    void check_rank(int r, const char* what) const;
    void all_reduce_now(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op);
    // Waits until the asynchronous collectives issued so far have run.
    void drain();

    struct Impl;
    std::unique_ptr<Impl> m_impl;
    int m_rank;
    int m_size;
};

}  // namespace neomeg::distributed
