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
    {
        std::lock_guard lock(m_mutex);
        auto failed = failure_locked(peer);
        if (!failed.empty())
            throw gloo::IoException(failed);
        m_waiting.push_back({&buf, recv, peer});
    }
    bool done = false;
    std::exception_ptr error;
    try {
        done = recv ? buf.waitRecv(nullptr, timeout) : buf.waitSend(nullptr, timeout);
    } catch (...) {
        error = std::current_exception();
    }
    std::string failed;
    {
        std::lock_guard lock(m_mutex);
        auto it = std::find_if(m_waiting.begin(), m_waiting.end(), [&](const Waiting& x) {
            return x.buf == &buf && x.recv == recv && x.peer == peer;
        });
        if (it != m_waiting.end())
            m_waiting.erase(it);
        failed = failure_locked(peer);
    }
    if (error)
        std::rethrow_exception(error);
    if (!done)
        throw gloo::IoException(failed.empty() ? std::string(recv ? "a receive" : "a send") +
                                                         " was aborted"
                                               : failed);
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
