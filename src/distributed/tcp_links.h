// One TCP connection per pair of ranks, driven by the thread that calls a collective (no event
// loop thread). Debian's Gloo (2022) reads its sockets on a loop thread that spins on a busy
// pair lock whenever the caller holds it; on a machine with fewer free cores than threads the
// spinning thread takes the caller's core and each message waits for a scheduler tick (4 ms
// medians for a 4 KB all-reduce). The all-reduce moves its data over these links instead.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "neomeg/distributed/communicator.h"

namespace neomeg::distributed::detail {

class TcpLinks {
public:
    using Clock = std::chrono::steady_clock;

    // Every rank of the group constructs its links together: each listens on `hostname`,
    // publishes its address under `prefix` in `store`, connects to the lower ranks and accepts
    // the higher ones. Throws CommError (or StoreTimeout) when a peer does not arrive in time.
    TcpLinks(Store& store, const std::string& prefix, int rank, int size,
             std::chrono::milliseconds timeout, const std::string& hostname);
    ~TcpLinks();
    TcpLinks(const TcpLinks&) = delete;
    TcpLinks& operator=(const TcpLinks&) = delete;

    int rank() const { return m_rank; }
    int size() const { return m_size; }

    // A contiguous run of bytes to or from one peer.
    struct Piece {
        int peer;
        std::byte* ptr;
        size_t bytes;
    };

    // Sends and receives every piece, those of one peer and direction in the given order, all
    // peers and directions at once (so that two ranks sending to each other never block).
    // `received(i)` runs as soon as recvs[i] is complete, while later pieces are still moving;
    // the next receive from that peer starts only after it returns, unless `recv_ahead` says
    // that the pieces do not overlap: then one system call may fill several. Throws CommError when
    // a peer closes its link, a socket fails, or `deadline` passes. Large sends run on a second
    // thread while this one receives: the kernel's copies of the two directions then proceed in
    // parallel, and on a busy machine the two threads get the share of the CPU that Gloo's
    // caller and loop threads get.
    void transfer(std::span<const Piece> sends, std::span<const Piece> recvs,
                  const std::function<void(size_t)>& received, Clock::time_point deadline,
                  bool recv_ahead = false);

    // Sends of at least this many bytes in one transfer go to the sending thread.
    static constexpr size_t kThreadedSendBytes = size_t{512} << 10;

private:
    class Sender;

    // transfer()'s engine on the calling thread; stops early (throwing) once *abort is set.
    void run(std::span<const Piece> sends, std::span<const Piece> recvs,
             const std::function<void(size_t)>& received, Clock::time_point deadline,
             bool recv_ahead, const std::atomic<bool>* abort);
    [[noreturn]] void fail(const std::string& what) const;

    int m_rank;
    int m_size;
    std::vector<int> m_fds;            // by peer rank; -1 for this rank
    std::unique_ptr<Sender> m_sender;  // started by the first large transfer
};

}  // namespace neomeg::distributed::detail
