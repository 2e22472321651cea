// PeerWatch: receives posted on a slot nothing is sent to, a thread per context waiting for the
// pair failures that wake them, and the waits it aborts then.
#include "peer_watch.h"

#include <gloo/common/error.h>

#include <algorithm>
#include <exception>

namespace neomeg::distributed {

namespace {

// The watch's wait must never time out: a timed-out wait of Gloo's closes every pair of its
// context. Ten years is longer than any job and still far from overflowing steady_clock.
constexpr auto kForever = std::chrono::hours(24 * 365 * 10);
// How long an aborted wait looks for a completion (PeerWatch::wait).
constexpr auto kMoment = std::chrono::milliseconds(50);
// How long a failed collective waits for the watch to see a connection fail (culprit_of), and
// for its reports to be written (tell_peers): both take microseconds unless the machine is
// loaded; a failing rank's error is not held up for longer.
constexpr auto kSettle = std::chrono::seconds(1);
// A report's check word is its rank xor this.
constexpr uint32_t kReportCheck = 0x5eed7e11u;

}  // namespace

PeerWatch::PeerWatch(const std::vector<gloo::Context*>& contexts, uint64_t slot) : m_slot(slot) {
    if (contexts.empty() || contexts.front()->size < 2)
        return;
    m_failed.resize(static_cast<size_t>(contexts.front()->size));
    m_reported.assign(static_cast<size_t>(contexts.front()->size), -1);
    for (auto* context : contexts) {
        auto w = std::make_unique<Watched>();
        w->context = context;
        post(*w);
        m_watched.push_back(std::move(w));
    }
    for (auto& w : m_watched)
        w->thread = std::thread([this, p = w.get()] { run(*p); });
}

PeerWatch::~PeerWatch() {
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
        for (auto& w : m_watched)
            if (!w->postings.empty())
                w->postings.back()->buffer->abortWaitRecv();
    }
    m_marked.notify_all();
    for (auto& w : m_watched)
        if (w->thread.joinable())
            w->thread.join();
}

void PeerWatch::post(Watched& w) {
    // Reports that came before a connection closed are taken before its failure is marked.
    read_reports(w);
    const int n = w.context->size;
    auto posting = std::make_unique<Posting>();
    posting->reports.resize(static_cast<size_t>(n));
    posting->buffer = w.context->createUnboundBuffer(posting->reports.data(),
                                                     posting->reports.size() * sizeof(Report));
    for (int peer = 0; peer < n; ++peer) {
        if (peer == w.context->rank)
            continue;
        {
            std::lock_guard lock(m_mutex);
            if (!m_failed[static_cast<size_t>(peer)].empty())
                continue;
        }
        try {
            posting->buffer->recv(peer, m_slot, static_cast<size_t>(peer) * sizeof(Report),
                                  sizeof(Report));
        } catch (const std::exception& e) {  // the pair's error, rethrown
            mark_failed(peer, e.what());
        }
    }
    std::lock_guard lock(m_mutex);
    w.postings.push_back(std::move(posting));
}

void PeerWatch::read_reports(const Watched& w) {
    std::lock_guard lock(m_mutex);
    for (const auto& posting : w.postings) {
        for (size_t peer = 0; peer < posting->reports.size(); ++peer) {
            if (m_reported[peer] >= 0)
                continue;
            // The loop thread writes a report while this thread may read it (a report that came
            // to an older posting wakes nobody): whole words, and a check that a half-written
            // report fails.
            auto& report = posting->reports[peer];
            int32_t rank = __atomic_load_n(&report.rank, __ATOMIC_ACQUIRE);
            uint32_t check = __atomic_load_n(&report.check, __ATOMIC_ACQUIRE);
            if (rank >= 0 && rank < static_cast<int32_t>(m_reported.size()) &&
                check == (static_cast<uint32_t>(rank) ^ kReportCheck))
                m_reported[peer] = rank;
        }
    }
}

void PeerWatch::run(Watched& w) {
    for (;;) {
        gloo::transport::UnboundBuffer* buf;
        {
            std::lock_guard lock(m_mutex);
            if (m_stop)
                return;
            buf = w.postings.back()->buffer.get();
        }
        try {
            buf->waitRecv(nullptr, kForever);
        } catch (const std::exception&) {
            // A pair failed and woke its pending receive; posting again finds which.
        }
        // Or a peer's report came (its connection fails next): posting again reads it.
        {
            std::lock_guard lock(m_mutex);
            if (m_stop)
                return;
        }
        post(w);
    }
}

void PeerWatch::mark_failed(int peer, const std::string& error) {
    std::lock_guard lock(m_mutex);
    auto& failed = m_failed[static_cast<size_t>(peer)];
    if (!failed.empty())
        return;
    failed = error.empty() ? "the connection to rank " + std::to_string(peer) + " failed" : error;
    if (m_first_failed < 0)
        m_first_failed = peer;
    m_marked.notify_all();
    for (const auto& waiting : m_waiting) {
        if (waiting.peer >= 0 && waiting.peer != peer)
            continue;
        if (waiting.recv)
            waiting.buf->abortWaitRecv();
        else
            waiting.buf->abortWaitSend();
    }
}

std::string PeerWatch::failure_locked(int peer) const {
    if (m_failed.empty())
        return {};
    if (peer < 0)
        return m_first_failed < 0 ? std::string() : m_failed[static_cast<size_t>(m_first_failed)];
    return m_failed[static_cast<size_t>(peer)];
}

std::string PeerWatch::failure(int peer) const {
    std::lock_guard lock(m_mutex);
    return failure_locked(peer);
}

PeerWatch::Culprit PeerWatch::culprit_locked() const {
    if (m_first_failed < 0)
        return {};
    int reported = m_reported[static_cast<size_t>(m_first_failed)];
    // A report naming this rank is that peer's view of a failure here; the peer is what this
    // rank lost.
    if (reported >= 0 && m_watched.size() && reported != m_watched.front()->context->rank)
        return {reported, m_first_failed};
    return {m_first_failed, -1};
}

PeerWatch::Culprit PeerWatch::culprit_of(const std::string& error) {
    // This rank's own timeout: Gloo closed every connection itself, and the watch will mark
    // them all failed, the lowest rank first; none of them is to blame.
    if (error.find("Timed out waiting") != std::string::npos ||
        error.find("Application timeout") != std::string::npos) {
        std::lock_guard lock(m_mutex);
        return {};
    }
    {
        std::unique_lock lock(m_mutex);
        m_marked.wait_for(lock, kSettle, [&] { return m_stop || m_first_failed >= 0; });
    }
    tell_peers();
    std::lock_guard lock(m_mutex);
    return culprit_locked();
}

int PeerWatch::reported_by(int peer, std::chrono::milliseconds wait) {
    std::unique_lock lock(m_mutex);
    if (peer < 0 || peer >= static_cast<int>(m_failed.size()) || m_watched.empty())
        return -1;
    const auto p = static_cast<size_t>(peer);
    m_marked.wait_for(lock, wait, [&] { return m_stop || !m_failed[p].empty(); });
    int reported = m_reported[p];
    return reported == m_watched.front()->context->rank ? -1 : reported;
}

void PeerWatch::tell_peers(int lost) {
    std::vector<int> peers;
    gloo::Context* context;
    {
        std::lock_guard lock(m_mutex);
        if (m_told || m_watched.empty())
            return;
        Culprit culprit = culprit_locked();
        if (lost >= 0)
            culprit = {lost, -1};
        if (culprit.rank < 0 || culprit.rank >= static_cast<int>(m_failed.size()) ||
            culprit.rank == m_watched.front()->context->rank)
            return;
        m_told = true;
        context = m_watched.front()->context;
        for (int peer = 0; peer < context->size; ++peer)
            if (peer != context->rank && peer != culprit.rank &&
                m_failed[static_cast<size_t>(peer)].empty())
                peers.push_back(peer);
        if (peers.empty())
            return;
        m_telling.rank = culprit.rank;
        m_telling.check = static_cast<uint32_t>(culprit.rank) ^ kReportCheck;
    }
    m_tell = context->createUnboundBuffer(&m_telling, sizeof(Report));
    int sent = 0;
    for (int peer : peers) {
        try {
            m_tell->send(peer, m_slot);
            ++sent;
        } catch (const std::exception&) {  // that connection failed too
        }
    }
    // The reports go out before this rank's connections close. A send to a peer that fails
    // meanwhile may never complete: the wait then times out (Gloo closes the connections,
    // which this rank's failing collective is about to do anyway).
    auto deadline = std::chrono::steady_clock::now() + kSettle;
    try {
        for (int i = 0; i < sent; ++i) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now());
            if (!m_tell->waitSend(nullptr, std::max(left, std::chrono::milliseconds(1))))
                break;
        }
    } catch (const std::exception&) {
    }
}

void PeerWatch::wait(gloo::transport::UnboundBuffer& buf, bool recv, int peer,
                     std::chrono::milliseconds timeout) {
    auto wait_for = [&](std::chrono::milliseconds t) {
        return recv ? buf.waitRecv(nullptr, t) : buf.waitSend(nullptr, t);
    };
    bool failed;
    {
        std::lock_guard lock(m_mutex);
        failed = !failure_locked(peer).empty();
        if (!failed)
            m_waiting.push_back({&buf, recv, peer});
    }
    if (!failed) {
        bool done = false;
        std::exception_ptr error;
        try {
            done = wait_for(timeout);
        } catch (...) {
            error = std::current_exception();
        }
        {
            std::lock_guard lock(m_mutex);
            auto it = std::find_if(m_waiting.begin(), m_waiting.end(), [&](const Waiting& x) {
                return x.buf == &buf && x.recv == recv && x.peer == peer;
            });
            if (it != m_waiting.end())
                m_waiting.erase(it);
        }
        if (error) {
            try {
                std::rethrow_exception(error);
            } catch (const gloo::Exception& e) {
                throw gloo::IoException(first_failure_and(peer, e.what()));
            }
        }
        if (done)
            return;
    }
    // The connection to the peer failed. The operation may have completed before: the peer sent
    // its last message and closed its socket (data first, then the close), and the watch's
    // abort came before this thread had woken (Gloo's abort wins over a completion, and an abort
    // that came after a completed wait stays for the next). A moment's wait (kMoment) takes such a
    // completion; the second look is for that left-over abort. An operation that did not
    // complete will not: the moment's wait times out, and Gloo closes every pair of the context,
    // so that the other peers' waits on this rank fail at once too. The moment is also a head
    // start for those peers' own watches to see the rank that died first, which their errors
    // should name rather than this one; and before the moment closes them, the peers still
    // connected hear which rank this one lost (tell_peers), which their errors name.
    tell_peers();
    try {
        for (int look = 0; look < 2; ++look)
            if (wait_for(kMoment))
                return;
    } catch (const gloo::Exception&) {
    }
    auto error = failure(peer);
    throw gloo::IoException(first_failure_and(
            peer,
            error.empty() ? std::string(recv ? "a receive" : "a send") + " was aborted" : error));
}

std::string PeerWatch::first_failure_and(int peer, const std::string& error) const {
    std::lock_guard lock(m_mutex);
    if (m_first_failed < 0 || m_first_failed == peer)
        return error;
    // Another peer's connection failed first (a rank that fails because of a dead one closes
    // its pairs): that one leads, so that it is the peer the error names.
    return m_failed[static_cast<size_t>(m_first_failed)] + " [then, with rank " +
           std::to_string(peer) + ": " + error + "]";
}

void PeerWatch::wait_recv(gloo::transport::UnboundBuffer& buf, int peer,
                          std::chrono::milliseconds timeout) {
    wait(buf, true, peer, timeout);
}

void PeerWatch::wait_send(gloo::transport::UnboundBuffer& buf, int peer,
                          std::chrono::milliseconds timeout) {
    wait(buf, false, peer, timeout);
}

}  // namespace neomeg::distributed
