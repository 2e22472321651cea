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

}  // namespace

PeerWatch::PeerWatch(const std::vector<gloo::Context*>& contexts, uint64_t slot) : m_slot(slot) {
    if (contexts.empty() || contexts.front()->size < 2)
        return;
    m_failed.resize(static_cast<size_t>(contexts.front()->size));
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
            if (w->buffer)
                w->buffer->abortWaitRecv();
    }
    for (auto& w : m_watched)
        if (w->thread.joinable())
            w->thread.join();
}

void PeerWatch::post(Watched& w) {
    auto buf = w.context->createUnboundBuffer(&w.byte, 1);
    for (int peer = 0; peer < w.context->size; ++peer) {
        if (peer == w.context->rank)
            continue;
        {
            std::lock_guard lock(m_mutex);
            if (!m_failed[static_cast<size_t>(peer)].empty())
                continue;
        }
        try {
            buf->recv(peer, m_slot, 0, 1);
        } catch (const std::exception& e) {  // the pair's error, rethrown
            mark_failed(peer, e.what());
        }
    }
    std::lock_guard lock(m_mutex);
    // The previous buffer goes at the end of this scope: its receives stay listed by their
    // pairs, but as pointers that no longer lead anywhere, which the pairs skip.
    std::swap(w.buffer, buf);
}

void PeerWatch::run(Watched& w) {
    for (;;) {
        gloo::transport::UnboundBuffer* buf;
        {
            std::lock_guard lock(m_mutex);
            if (m_stop)
                return;
            buf = w.buffer.get();
        }
        try {
            buf->waitRecv(nullptr, kForever);
        } catch (const std::exception&) {
            // A pair failed and woke its pending receive; posting again finds which.
        }
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
    // should name rather than this one.
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
