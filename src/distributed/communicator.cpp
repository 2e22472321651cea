// Communicator on Gloo: the TCP transport, the full-mesh rendezvous through our Store, and the
// collectives on Gloo's unbound buffers (ring_all_reduce.h, collectives.h) with reduce functions
// for NeoMeg's element types.
#include "neomeg/distributed/communicator.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <thread>
#include <type_traits>

#include "collectives.h"
#include "loop_affinity.h"
#include "peer_watch.h"
#include "rendezvous.h"
#include "ring_all_reduce.h"

namespace neomeg::distributed {

namespace {

using Millis = std::chrono::milliseconds;

// Gloo's store interface over ours, with every key under a group's prefix. Its waits end at the
// rendezvous's deadline, whatever timeout Gloo passes (DeadlineContext shortens the context's).
// Gloo's keys are "<rank>" and "rank_<rank>", and it waits for a peer's address just before
// connecting to it: the last rank waited for names the peer of a failed connect.
class GlooStoreAdapter final : public gloo::rendezvous::Store {
public:
    GlooStoreAdapter(distributed::Store& store, std::string prefix, int rank, int size,
                     rendezvous::Clock::time_point deadline, Millis timeout)
        : m_store(store),
          m_prefix(std::move(prefix)),
          m_rank(rank),
          m_size(size),
          m_deadline(deadline),
          m_timeout(timeout) {}

    void set(const std::string& key, const std::vector<char>& data) override {
        // Gloo publishes the listening addresses of this rank's pairs. A pair that connects out
        // closes its listening socket, but its peer keeps that address as the one its errors
        // print: the sockets this process has now are noted for the peers' errors to name.
        auto sockets = rendezvous::own_socket_addresses();
        m_published.insert(m_published.end(), sockets.begin(), sockets.end());
        m_store.set(m_prefix + key, data);
    }
    std::vector<char> get(const std::string& key) override {
        wait({key}, m_timeout);
        return m_store.get(m_prefix + key, rendezvous::time_left(m_deadline));
    }
    void wait(const std::vector<std::string>& keys) override { wait(keys, m_timeout); }
    void wait(const std::vector<std::string>& keys, const Millis&) override {
        std::vector<std::string> full;
        full.reserve(keys.size());
        for (auto& k : keys)
            full.push_back(m_prefix + k);
        if (keys.size() == 1)
            m_peer = rank_of(keys[0]);
        auto missing = rendezvous::wait_for_keys(m_store, full, m_deadline);
        if (missing.empty())
            return;
        std::vector<int> ranks;
        std::string names;
        for (size_t i : missing) {
            ranks.push_back(rank_of(keys[i]));
            names += (names.empty() ? "" : ", ") + keys[i];
        }
        bool known = std::none_of(ranks.begin(), ranks.end(), [](int r) { return r < 0; });
        throw StoreTimeout("distributed rendezvous: rank " + std::to_string(m_rank) + " of " +
                           std::to_string(m_size) + ": " +
                           (known ? rendezvous::name_ranks(ranks) : "keys " + names) +
                           " arrived but did not publish " + (ranks.size() == 1 ? "its" : "their") +
                           " address within " + rendezvous::seconds(m_timeout) +
                           " (the group's timeout): died during the rendezvous?");
    }

    // The peer whose address was asked for last (-1 before any).
    int peer() const { return m_peer; }
    // own_socket_addresses() whenever this rank published something, one after the other.
    const std::vector<char>& published() const { return m_published; }

private:
    static int rank_of(std::string_view key) {
        if (key.substr(0, 5) == "rank_")
            key.remove_prefix(5);
        if (key.empty() || key.size() > 9 ||
            !std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return -1;
        return std::stoi(std::string(key));
    }

    distributed::Store& m_store;
    std::string m_prefix;
    int m_rank;
    int m_size;
    rendezvous::Clock::time_point m_deadline;
    Millis m_timeout;
    int m_peer = -1;
    std::vector<char> m_published;
};

// A rendezvous context connected by a deadline. Gloo's TCP pair waits for its peer's connection
// for five times the context's timeout (tcp/pair.h, waitUntil), so a peer that published its
// address and then died or gave up kept a rank in connectFullMesh for 5x the group's timeout.
// While connecting, the context's timeout is a fifth of the time left, so that wait ends at the
// deadline; afterwards it is the group's again (the pairs keep the short one only for their
// connect: their sockets are non-blocking, and every collective passes its own timeout).
class DeadlineContext final : public gloo::rendezvous::Context {
public:
    using gloo::rendezvous::Context::Context;

    void connect(GlooStoreAdapter& store, std::shared_ptr<gloo::transport::Device>& device,
                 rendezvous::Clock::time_point deadline, Millis timeout) {
        setTimeout(std::max(Millis(1), rendezvous::time_left(deadline) / 5));
        connectFullMesh(store, device);
        setTimeout(timeout);
        transportContext_->setTimeout(timeout);
    }
};

template <class T, ReduceOp op>
void reduce_fn(void* c, const void* a, const void* b, size_t n) {
    auto* pc = static_cast<T*>(c);
    auto* pa = static_cast<const T*>(a);
    auto* pb = static_cast<const T*>(b);
    for (size_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<T, bool>) {
            pc[i] = op == ReduceOp::Min ? (pa[i] && pb[i]) : (pa[i] || pb[i]);
        } else if constexpr (op == ReduceOp::Sum) {
            pc[i] = static_cast<T>(pa[i] + pb[i]);
        } else if constexpr (op == ReduceOp::Max) {
            pc[i] = pa[i] < pb[i] ? pb[i] : pa[i];
        } else {
            pc[i] = pb[i] < pa[i] ? pb[i] : pa[i];
        }
    }
}

template <class T>
void (*pick_reduce(ReduceOp op))(void*, const void*, const void*, size_t) {
    switch (op) {
        case ReduceOp::Sum:
            return &reduce_fn<T, ReduceOp::Sum>;
        case ReduceOp::Max:
            return &reduce_fn<T, ReduceOp::Max>;
        case ReduceOp::Min:
            return &reduce_fn<T, ReduceOp::Min>;
    }
    throw std::invalid_argument("unknown ReduceOp");
}

// Calls f(T{}) with the C++ element type of `dtype`.
template <class F>
void dispatch(dnn::DType dtype, F&& f) {
    using namespace dnn;  // NM_FOREACH_DTYPE names the element types unqualified
    switch (dtype.enumv()) {
#define NM_CB(e, t, n)      \
    case dnn::DTypeEnum::e: \
        f(t{});             \
        return;
        NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
        default:  // quantized tensors are not communicated
            break;
    }
    throw std::invalid_argument(std::string("distributed: unsupported dtype ") + dtype.name());
}

// An all-reduce's dtype and op in the signature its ranks compare (ring_all_reduce.h).
uint32_t signature_code(dnn::DType dtype, ReduceOp op) {
    return (static_cast<uint32_t>(dtype.enumv()) << 8) | static_cast<uint32_t>(op);
}

std::string describe(const AllReduceSignature& sig) {
    if (sig.elem_size == 0)
        return "something else (not an all-reduce message)";
    auto e = static_cast<dnn::DTypeEnum>(sig.code >> 8);
    auto op = static_cast<ReduceOp>(sig.code & 0xff);
    const char* op_name = op == ReduceOp::Sum ? "sum" : op == ReduceOp::Max ? "max" : "min";
    return std::to_string(sig.count) + " elements of " + dnn::DType(e).name() + " (" + op_name +
           ")";
}

// The error of a ring whose ranks passed different signatures (`what`: all_reduce, reduce).
std::invalid_argument signature_mismatch(const char* what, int rank, const AllReduceMismatch& e) {
    return std::invalid_argument(std::string("distributed ") + what + ": rank " +
                                 std::to_string(rank) + " reduces " + describe(e.mine) +
                                 " but rank " + std::to_string(e.peer) + " reduces " +
                                 describe(e.theirs) +
                                 ": every rank of the group must pass the same shape and dtype, "
                                 "with the same reduce op");
}

// p2p slots must not meet the collectives' (prefix << 56 | tag), whose prefixes are 1..8.
constexpr uint64_t kSendRecvSlotPrefix = uint64_t{0x7e} << 56;
// The peer watch's receives (and the reports of a failing peer) are on a slot of their own.
constexpr uint64_t kPeerWatchSlot = uint64_t{0x7d} << 56;
// From this size a broadcast lets the loop thread run on any CPU instead of keeping it off the
// caller's: measured on the 2-core machine, 4-64 MB ran 2.3-3.7x faster that way, 1 MB 2-10x
// slower (the loop's spinning that LoopAffinity prevents costs more than a 1 MB transfer).
constexpr size_t kBroadcastFreeLoopBytes = size_t{4} << 20;

}  // namespace

struct Communicator::Impl {
    std::shared_ptr<gloo::rendezvous::Context> context;
    std::unique_ptr<LoopAffinity> loop_affinity;  // of the context's device
    // Between 2 ranks, a second context on a device of its own (its own socket and loop
    // thread): the two-lane all-reduce sends rank 1's data through it (ring_all_reduce.h). Its
    // loop thread is not moved off the caller's CPU: it carries only large messages, whose
    // reading should run beside the other loop's writing, and on 2 CPUs both loops would be
    // confined to the same one.
    std::shared_ptr<gloo::rendezvous::Context> reverse;
    // Fails the waits of the collectives below as soon as a peer's connection fails (Gloo's
    // pairs leave some of them waiting for the timeout: peer_watch.h). Declared after the
    // contexts, so it stops watching before they go.
    std::unique_ptr<PeerWatch> watch;
    Waits waits() const { return {*watch, timeout}; }
    // The slot of the next collective, the same on every rank.
    uint64_t slot(uint8_t prefix) { return gloo::Slot::build(prefix, tag()); }
    Millis timeout;
    // Every socket address ("host:port") of every peer, with its rank.
    std::vector<std::pair<std::string, int>> peer_addresses;

    // A failed collective's error. Gloo's name the peer by its socket address only; the rank
    // behind it is what the user can act on. The rank named is the one the failure goes back
    // to (PeerWatch::culprit_of): the first peer lost, or the rank that peer reported losing
    // before it closed its connection to this rank; else the peer of the first address.
    CommError failure(const char* op_name, int rank, int size, const gloo::Exception& e) const {
        std::string what = e.what();
        bool io = dynamic_cast<const gloo::IoException*>(&e) != nullptr;
        auto culprit = watch && io ? watch->culprit_of(what) : PeerWatch::Culprit{};
        int peer = -1;
        std::string address;
        for (const auto& a : rendezvous::addresses_in(what)) {
            for (const auto& [known, r] : peer_addresses) {
                if (known != a || (culprit.rank >= 0 && r != culprit.rank))
                    continue;
                if (peer < 0) {
                    peer = r;
                    address = a;
                }
            }
        }
        std::string how = " (a peer died, disconnected or timed out): ";
        if (culprit.reporter >= 0)
            how = ": lost the connection to rank " + std::to_string(culprit.rank) +
                  ", which died or closed it (rank " + std::to_string(culprit.reporter) +
                  " lost it first, said so and closed its connection to this rank): ";
        else if (culprit.rank >= 0 || peer >= 0)
            how = ": lost the connection to rank " +
                  std::to_string(culprit.rank >= 0 ? culprit.rank : peer) +
                  (address.empty() ? "" : " (" + address + ")") + ", which died or closed it: ";
        return CommError(std::string("distributed ") + op_name + " failed on rank " +
                         std::to_string(rank) + " of " + std::to_string(size) + how + what);
    }

    // Before a collective posts its messages (loop_affinity.h says why).
    void keep_loop_away() {
        if (loop_affinity)
            loop_affinity->avoid_current_cpu();
    }
    uint32_t next_tag = 0;  // each collective gets its own slot, the same on every rank

    uint32_t tag() { return next_tag++; }
    std::vector<std::byte> scratch;  // the ring all-reduce's receive segments

    // The asynchronous collectives, run in issue order by one worker thread (started on the
    // first one), so that their order, and so their tags, are the same on every rank.
    struct Task {
        std::function<void()> run;
        std::shared_ptr<Work> work;
    };
    std::mutex mutex;
    std::condition_variable cv;  // a task queued, the queue drained, or stop
    std::deque<Task> queue;
    bool busy = false;
    bool stop = false;
    std::thread worker;

    void submit(Task task) {
        std::lock_guard lock(mutex);
        queue.push_back(std::move(task));
        if (!worker.joinable())
            worker = std::thread([this] { work_loop(); });
        cv.notify_all();
    }

    void work_loop() {
        std::unique_lock lock(mutex);
        for (;;) {
            cv.wait(lock, [&] { return stop || !queue.empty(); });
            if (queue.empty())
                return;
            Task task = std::move(queue.front());
            queue.pop_front();
            if (stop) {
                task.work->finish(std::make_exception_ptr(
                        CommError("distributed: the communicator was destroyed before an "
                                  "asynchronous collective ran")));
                continue;
            }
            busy = true;
            lock.unlock();
            std::exception_ptr error;
            try {
                task.run();
            } catch (...) {
                error = std::current_exception();
            }
            task.work->finish(error);
            lock.lock();
            busy = false;
            cv.notify_all();
        }
    }

    void drain() {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return queue.empty() && !busy; });
    }

    ~Impl() {
        {
            std::lock_guard lock(mutex);
            stop = true;
            cv.notify_all();
        }
        if (worker.joinable())
            worker.join();
    }
};

void Work::wait() {
    std::unique_lock lock(m_mutex);
    m_done_cv.wait(lock, [&] { return m_done; });
    if (m_error)
        std::rethrow_exception(m_error);
}

bool Work::completed() const {
    std::lock_guard lock(m_mutex);
    return m_done;
}

void Work::finish(std::exception_ptr error) {
    std::lock_guard lock(m_mutex);
    m_error = std::move(error);
    m_done = true;
    m_done_cv.notify_all();
}

// Gloo's errors name the failing socket; ours say which call and rank saw it, and which rank
// the socket led to.
#define NM_GLOO_CALL(op_name, ...)                             \
    do {                                                       \
        try {                                                  \
            __VA_ARGS__;                                       \
        } catch (const gloo::Exception& e) {                   \
            throw m_impl->failure(op_name, m_rank, m_size, e); \
        }                                                      \
    } while (0)

Communicator::Communicator(Store& store, const std::string& prefix, int rank, int size,
                           Millis timeout, const std::string& hostname)
    : m_impl(std::make_unique<Impl>()), m_rank(rank), m_size(size) {
    if (size < 1 || rank < 0 || rank >= size)
        throw std::invalid_argument("distributed: rank " + std::to_string(rank) +
                                    " is not in a group of size " + std::to_string(size));
    if (timeout.count() <= 0)
        throw std::invalid_argument("distributed: the timeout must be positive");
    m_impl->timeout = timeout;
    // One deadline for the whole rendezvous: the arrival of every rank, the connections of the
    // context (and of the reverse one) and the closing meeting. Once every rank is there the
    // connections take milliseconds, unless a rank dies meanwhile.
    auto deadline = rendezvous::Clock::now() + timeout;
    await_ranks(store, prefix, rank, size, deadline, timeout);
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname;
    // The addresses of this process's sockets as it published its pairs' addresses.
    std::vector<char> published;
    auto connect = [&](const std::string& key_prefix) {
        GlooStoreAdapter adapter(store, key_prefix, rank, size, deadline, timeout);
        try {
            auto device = gloo::transport::tcp::CreateDevice(attr);
            auto context = std::make_shared<DeadlineContext>(rank, size);
            context->connect(adapter, device, deadline, timeout);
            published.insert(published.end(), adapter.published().begin(),
                             adapter.published().end());
            return std::make_pair(std::shared_ptr<gloo::rendezvous::Context>(context), device);
        } catch (const gloo::Exception& e) {
            std::string peer = adapter.peer() >= 0
                                       ? " connecting to rank " + std::to_string(adapter.peer())
                                       : "";
            throw CommError("distributed rendezvous failed on rank " + std::to_string(rank) +
                            " of " + std::to_string(size) + peer + " (within " +
                            rendezvous::seconds(timeout) +
                            ", the group's timeout; the peer died or is unreachable): " + e.what());
        }
    };
    auto [context, device] = connect(prefix);
    if (auto* tcp = dynamic_cast<gloo::transport::tcp::Device*>(device.get()))
        m_impl->loop_affinity = std::make_unique<LoopAffinity>(*tcp);
    m_impl->context = std::move(context);
    if (size == 2)
        m_impl->reverse = connect(prefix + "reverse/").first;
    // A rank's own pairs can be connected while a peer is still handshaking with it; were it to
    // return and leave at once, that peer's rendezvous would fail with "connection closed". So
    // the constructor returns only when every rank has connected, which they say through the
    // store (a Gloo barrier could not name a rank that stopped).
    // The meeting's values are the ranks' socket addresses, which name a peer in the errors:
    // those open now and those open as the ranks published their listening addresses.
    auto mine = rendezvous::own_socket_addresses();
    mine.insert(mine.end(), published.begin(), published.end());
    auto stopped = rendezvous::meet(store, prefix + "connected/", rank, size, deadline, mine);
    if (!stopped.empty())
        throw CommError("distributed rendezvous failed on rank " + std::to_string(rank) + " of " +
                        std::to_string(size) + ": it connected, but " +
                        rendezvous::name_ranks(stopped) + " did not finish connecting within " +
                        rendezvous::seconds(timeout) +
                        " (the group's timeout): died or stopped during the rendezvous?");
    auto lines = [](const std::vector<char>& value) {
        std::vector<std::string> out;
        std::string text(value.begin(), value.end());
        for (size_t begin = 0, end; (end = text.find('\n', begin)) != std::string::npos;
             begin = end + 1)
            out.push_back(text.substr(begin, end - begin));
        return out;
    };
    // An address that is this process's own, or more than one peer's, names nobody: ranks that
    // are threads of one process (the C++ tests) list the same sockets.
    std::map<std::string, int> owner;
    for (const auto& address : lines(mine))
        owner[address] = -1;
    for (int r = 0; r < size; ++r) {
        if (r == rank)
            continue;
        auto value = store.get(prefix + "connected/" + std::to_string(r),
                               rendezvous::time_left(deadline));
        for (const auto& address : lines(value)) {
            auto [it, fresh] = owner.emplace(address, r);
            if (!fresh && it->second != r)
                it->second = -1;
        }
    }
    for (const auto& [address, r] : owner)
        if (r >= 0)
            m_impl->peer_addresses.emplace_back(address, r);
    std::vector<gloo::Context*> contexts{m_impl->context.get()};
    if (m_impl->reverse)
        contexts.push_back(m_impl->reverse.get());
    m_impl->watch = std::make_unique<PeerWatch>(contexts, kPeerWatchSlot);
}

// The worker thread (Impl's destructor) ends before the Gloo context it uses.
Communicator::~Communicator() = default;

void Communicator::check_rank(int r, const char* what) const {
    if (r < 0 || r >= m_size)
        throw std::invalid_argument(std::string("distributed ") + what + ": rank " +
                                    std::to_string(r) + " is not in a group of size " +
                                    std::to_string(m_size));
}

void Communicator::drain() {
    m_impl->drain();
}

void Communicator::all_reduce(const void* in, void* out, size_t count, dnn::DType dtype,
                              ReduceOp op) {
    drain();
    all_reduce_now(in, out, count, dtype, op);
}

std::shared_ptr<Work> Communicator::all_reduce_async(const void* in, void* out, size_t count,
                                                     dnn::DType dtype, ReduceOp op) {
    auto work = std::make_shared<Work>();
    m_impl->submit({[=, this] { all_reduce_now(in, out, count, dtype, op); }, work});
    return work;
}

void Communicator::all_reduce_now(const void* in, void* out, size_t count, dnn::DType dtype,
                                  ReduceOp op) {
    if (count == 0)
        return;
    m_impl->keep_loop_away();
    dispatch(dtype, [&](auto zero) {
        using T = decltype(zero);
        uint64_t slot = m_impl->slot(gloo::kAllreduceSlotPrefix);
        AllReduceSignature sig{count, sizeof(T), signature_code(dtype, op)};
        try {
            NM_GLOO_CALL("all_reduce", ring_all_reduce(*m_impl->context, m_impl->reverse.get(), in,
                                                       out, sig, pick_reduce<T>(op), slot,
                                                       m_impl->waits(), m_impl->scratch));
        } catch (const AllReduceMismatch& e) {
            throw signature_mismatch("all_reduce", m_rank, e);
        }
    });
}

void Communicator::reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op,
                          int root) {
    drain();
    m_impl->keep_loop_away();
    check_rank(root, "reduce");
    if (count == 0)
        return;
    // The ring reduces through the output buffer on every rank.
    std::vector<std::byte> scratch;
    if (m_rank != root) {
        scratch.resize(dtype.size(count));
        out = scratch.data();
    }
    dispatch(dtype, [&](auto zero) {
        using T = decltype(zero);
        AllReduceSignature sig{count, sizeof(T), signature_code(dtype, op)};
        try {
            NM_GLOO_CALL("reduce",
                         ring_all_reduce(*m_impl->context, nullptr, in, out, sig,
                                         pick_reduce<T>(op), m_impl->slot(gloo::kReduceSlotPrefix),
                                         m_impl->waits(), m_impl->scratch, root));
        } catch (const AllReduceMismatch& e) {
            throw signature_mismatch("reduce", m_rank, e);
        }
    });
}

void Communicator::broadcast(void* buf, size_t count, dnn::DType dtype, int root) {
    broadcast(buf, buf, count, dtype, root);
}

void Communicator::broadcast(const void* in, void* out, size_t count, dnn::DType dtype, int root) {
    drain();
    // A large message's transfer is the two loop threads' work (the root's writing, the
    // receiver's reading) while the callers wait; moved off their callers' CPUs, two ranks'
    // loops could share one CPU of two (docs/architecture.md, "Broadcast's loop thread").
    if (dtype.size(count) >= kBroadcastFreeLoopBytes) {
        if (m_impl->loop_affinity)
            m_impl->loop_affinity->allow_every_cpu();
    } else {
        m_impl->keep_loop_away();
    }
    check_rank(root, "broadcast");
    if (count == 0)
        return;
    const size_t bytes = dtype.size(count);
    const uint64_t slot = m_impl->slot(gloo::kBroadcastSlotPrefix);
    if (m_impl->reverse && bytes >= kTwoLaneBroadcastMinBytes)
        NM_GLOO_CALL("broadcast", two_lane_broadcast(*m_impl->context, *m_impl->reverse, in, out,
                                                     bytes, root, slot, m_impl->waits()));
    else
        NM_GLOO_CALL("broadcast",
                     tree_broadcast(*m_impl->context, in, out, bytes, root, slot, m_impl->waits()));
}

void Communicator::all_gather(const void* in, void* out, size_t count, dnn::DType dtype) {
    drain();
    m_impl->keep_loop_away();
    if (count == 0)
        return;
    NM_GLOO_CALL("all_gather",
                 direct_all_gather(*m_impl->context, in, out, dtype.size(count),
                                   m_impl->slot(gloo::kAllgatherSlotPrefix), m_impl->waits()));
}

void Communicator::gather(const void* in, void* out, size_t count, dnn::DType dtype, int root) {
    drain();
    m_impl->keep_loop_away();
    check_rank(root, "gather");
    if (count == 0)
        return;
    NM_GLOO_CALL("gather", direct_gather(*m_impl->context, in, out, dtype.size(count), root,
                                         m_impl->slot(gloo::kGatherSlotPrefix), m_impl->waits()));
}

void Communicator::scatter(const void* in, void* out, size_t count, dnn::DType dtype, int root) {
    drain();
    m_impl->keep_loop_away();
    check_rank(root, "scatter");
    if (count == 0)
        return;
    NM_GLOO_CALL("scatter",
                 direct_scatter(*m_impl->context, in, out, dtype.size(count), root,
                                m_impl->slot(gloo::kScatterSlotPrefix), m_impl->waits()));
}

void Communicator::all_to_all(const void* in, void* out, size_t count, dnn::DType dtype) {
    drain();
    m_impl->keep_loop_away();
    if (count == 0)
        return;
    NM_GLOO_CALL("all_to_all",
                 direct_all_to_all(*m_impl->context, in, out, dtype.size(count),
                                   m_impl->slot(gloo::kAlltoallSlotPrefix), m_impl->waits()));
}

void Communicator::send(const void* buf, size_t count, dnn::DType dtype, int dst, uint32_t tag) {
    drain();
    m_impl->keep_loop_away();
    check_rank(dst, "send");
    if (dst == m_rank)
        throw std::invalid_argument("distributed send: a rank cannot send to itself");
    auto ubuf = m_impl->context->createUnboundBuffer(const_cast<void*>(buf), dtype.size(count));
    NM_GLOO_CALL("send", {
        ubuf->send(dst, kSendRecvSlotPrefix | tag);
        m_impl->watch->wait_send(*ubuf, dst, m_impl->timeout);
    });
}

void Communicator::recv(void* buf, size_t count, dnn::DType dtype, int src, uint32_t tag) {
    drain();
    m_impl->keep_loop_away();
    check_rank(src, "recv");
    if (src == m_rank)
        throw std::invalid_argument("distributed recv: a rank cannot receive from itself");
    auto ubuf = m_impl->context->createUnboundBuffer(buf, dtype.size(count));
    NM_GLOO_CALL("recv", {
        ubuf->recv(src, kSendRecvSlotPrefix | tag);
        m_impl->watch->wait_recv(*ubuf, src, m_impl->timeout);
    });
}

void Communicator::send_recv(std::span<const PointToPoint> ops) {
    drain();
    for (const auto& op : ops) {
        bool send = op.kind == PointToPoint::Kind::Send;
        check_rank(op.peer, send ? "send" : "recv");
        if (op.peer == m_rank)
            throw std::invalid_argument(std::string("distributed ") + (send ? "send" : "recv") +
                                        ": a rank cannot " + (send ? "send to" : "receive from") +
                                        " itself");
    }
    m_impl->keep_loop_away();
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> bufs;
    bufs.reserve(ops.size());
    for (const auto& op : ops)
        bufs.push_back(m_impl->context->createUnboundBuffer(op.buf, op.dtype.size(op.count)));
    NM_GLOO_CALL("send_recv", {
        for (size_t i = 0; i < ops.size(); ++i) {
            uint64_t slot = kSendRecvSlotPrefix | ops[i].tag;
            if (ops[i].kind == PointToPoint::Kind::Send)
                bufs[i]->send(ops[i].peer, slot);
            else
                bufs[i]->recv(ops[i].peer, slot);
        }
        for (size_t i = 0; i < ops.size(); ++i) {
            if (ops[i].kind == PointToPoint::Kind::Send)
                m_impl->watch->wait_send(*bufs[i], ops[i].peer, m_impl->timeout);
            else
                m_impl->watch->wait_recv(*bufs[i], ops[i].peer, m_impl->timeout);
        }
    });
}

void Communicator::barrier() {
    drain();
    m_impl->keep_loop_away();
    NM_GLOO_CALL("barrier",
                 dissemination_barrier(*m_impl->context, m_impl->slot(gloo::kBarrierSlotPrefix),
                                       m_impl->waits()));
}

int Communicator::reported_by(int peer, std::chrono::milliseconds wait) const {
    return m_impl->watch ? m_impl->watch->reported_by(peer, wait) : -1;
}

void Communicator::tell_peers_lost(int rank) {
    if (m_impl->watch)
        m_impl->watch->tell_peers(rank);
}

}  // namespace neomeg::distributed
