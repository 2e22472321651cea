// Ends a rank's waits for a peer as soon as that peer's connection fails, instead of at the
// group's timeout.
//
// Why: when a Gloo TCP pair's socket fails, the pair wakes the unbound buffers of the operations
// it still holds as pending (a send whose receiver has not announced its receive yet, a receive
// whose data has not started), but not the buffer of a send it has queued for writing nor of the
// message it is halfway through reading: its error loop over queued writes looks at bound buffers
// only, and the message being read is no longer in its pending list. A wait for such a buffer
// lasts the whole timeout. A rank SIGKILLed in the middle of a 3-rank ring all-reduce left a
// survivor that way (seen under load, gdb: rank 0 in waitSend for the group's 60 s, its send to
// the killed rank queued after the write met the reset socket), and the survivor waiting for that
// one in turn.
//
// The watch keeps one receive from every peer posted on a slot that nothing is sent to: a pending
// receive, which the pair does wake when it fails. A thread per context waits for it, records
// which peers failed (a receive posted on a failed pair throws the pair's error) and aborts the
// waits for those peers registered with it (abortWaitRecv/abortWaitSend). Such a wait then takes
// a completion that came before the failure, if any, and otherwise throws that error (wait()
// says how). A wait is for one peer, the one its operations go to or come from: a peer that
// finished and left must not fail a wait for another peer's data still on its way. Every
// collective of Communicator waits this way: Gloo's own (gloo::broadcast, gather, ...) wait on
// buffers of their own, which the watch cannot reach, so ours replace them (collectives.h).
//
// Which rank died. A rank whose collective fails because a peer's connection failed goes on to
// close its other connections (its moment's wait times out, or its process exits), and a third
// rank that sees that closing before the dead rank's own would name the wrong one: the race
// named a rank that only failed because of the dead one in about 1 run in 120. So a failing
// rank first tells every other peer which rank it lost (tell_peers: a report on the watch's
// slot, which the watch's receives take, one slot of the buffer per peer), and a report is
// read before the connection it came on is marked failed: TCP delivers the report before the
// close. culprit() is the first failed peer, or the rank that peer reported.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace neomeg::distributed {

class PeerWatch {
public:
    // Watches every peer of each of `contexts` (over the same ranks; they must outlive the
    // watch) through receives on `slot`, which no collective may use. The receives are posted
    // before the constructor returns.
    PeerWatch(const std::vector<gloo::Context*>& contexts, uint64_t slot);
    ~PeerWatch();
    PeerWatch(const PeerWatch&) = delete;
    PeerWatch& operator=(const PeerWatch&) = delete;

    // buf.waitRecv / buf.waitSend with `timeout` for an operation with `peer`, except that once
    // the connection to `peer` (to any peer where -1) is known to have failed, before or during
    // the wait, it takes a completion already there, or else throws gloo::IoException with that
    // connection's error after Gloo has closed every pair of the buffer's context.
    void wait_recv(gloo::transport::UnboundBuffer& buf, int peer,
                   std::chrono::milliseconds timeout);
    void wait_send(gloo::transport::UnboundBuffer& buf, int peer,
                   std::chrono::milliseconds timeout);

    // The error of the failed connection to `peer` (to any peer where -1); empty while none.
    std::string failure(int peer) const;

    // The rank whose failure this rank's failed collective goes back to (-1 while no
    // connection failed): the first peer whose connection failed, or the rank that peer
    // reported losing before it closed its connections (then `reporter` is that peer).
    struct Culprit {
        int rank = -1;
        int reporter = -1;
    };
    // For a collective that failed with Gloo's `error`: waits (briefly) until the watch has
    // seen a connection fail, tells the other peers which rank was lost, and returns the
    // culprit. Nothing of this for this rank's own timeout, which closed every connection
    // itself: it names no peer.
    Culprit culprit_of(const std::string& error);

    // The rank that `peer` reported losing before it closed its connection to this rank, or -1
    // (it reported none, or it is this rank). Waits up to `wait` for the watch to see the
    // connection to `peer` fail: a report is read before that failure is marked.
    int reported_by(int peer, std::chrono::milliseconds wait);

    // Tells every peer still connected (on the first context) which rank this rank lost, once,
    // before this rank's collective fails and its connections close: `lost`, or where -1 the
    // culprit of the connections that failed here (none: nothing is sent). Returns once the
    // reports are written (at most a second).
    void tell_peers(int lost = -1);

private:
    // What a failing rank tells its peers: the rank it lost, and a check word that a partly
    // received report fails.
    struct Report {
        int32_t rank = -1;
        uint32_t check = 0;
    };
    // The watch's receives, one Report per peer. Every posting is kept until the watch ends: a
    // pair matches an incoming report to its oldest receive on the slot, and a receive whose
    // buffer is gone would stall the pair's reading for good.
    struct Posting {
        std::vector<Report> reports;
        std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    };
    struct Watched {
        gloo::Context* context;
        std::vector<std::unique_ptr<Posting>> postings;  // the last one is waited for
        std::thread thread;
    };
    struct Waiting {
        gloo::transport::UnboundBuffer* buf;
        bool recv;
        int peer;
    };

    void post(Watched& w);
    void run(Watched& w);
    // Takes the reports that have arrived in any of `w`'s postings.
    void read_reports(const Watched& w);
    void mark_failed(int peer, const std::string& error);
    Culprit culprit_locked() const;
    void wait(gloo::transport::UnboundBuffer& buf, bool recv, int peer,
              std::chrono::milliseconds timeout);
    std::string failure_locked(int peer) const;
    // `error`, a wait's for `peer`, led by the first failed connection's when that was another
    // peer's.
    std::string first_failure_and(int peer, const std::string& error) const;

    const uint64_t m_slot;
    std::vector<std::unique_ptr<Watched>> m_watched;
    mutable std::mutex m_mutex;
    bool m_stop = false;
    std::vector<std::string> m_failed;  // by rank: the connection's error, empty while alive
    int m_first_failed = -1;
    std::vector<int> m_reported;       // by rank: the rank it reported losing, or -1
    std::condition_variable m_marked;  // a connection was marked failed
    std::vector<Waiting> m_waiting;
    bool m_told = false;                                     // tell_peers ran
    Report m_telling;                                        // what tell_peers sent
    std::unique_ptr<gloo::transport::UnboundBuffer> m_tell;  // and its buffer
};

// How a collective waits for each of its messages: at most `timeout`, and no longer than
// `watch` (watching the peers of every context it uses) knows the peer to be connected.
struct Waits {
    PeerWatch& watch;
    std::chrono::milliseconds timeout;
};

}  // namespace neomeg::distributed
