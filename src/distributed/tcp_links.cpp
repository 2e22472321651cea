#include "tcp_links.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

namespace neomeg::distributed::detail {

namespace {

using Millis = std::chrono::milliseconds;

std::string sys_error(const char* call) {
    return std::string(call) + ": " + std::strerror(errno);
}

// Milliseconds left until `deadline` for poll(), at least 1 while any remain.
int poll_ms(TcpLinks::Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<Millis>(deadline - TcpLinks::Clock::now()).count();
    if (left <= 0)
        return 0;
    return static_cast<int>(std::min<long long>(left + 1, 1 << 30));
}

class Fd {
public:
    explicit Fd(int fd = -1) : m_fd(fd) {}
    ~Fd() {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return m_fd; }
    int release() { return std::exchange(m_fd, -1); }

private:
    int m_fd;
};

struct AddrInfo {
    addrinfo* list = nullptr;
    ~AddrInfo() {
        if (list)
            freeaddrinfo(list);
    }
};

// Waits for `events` on fd until the deadline; false when it passed.
bool wait_fd(int fd, short events, TcpLinks::Clock::time_point deadline) {
    for (;;) {
        int ms = poll_ms(deadline);
        if (ms == 0)
            return false;
        pollfd p{fd, events, 0};
        int rv = ::poll(&p, 1, ms);
        if (rv > 0)
            return true;
        if (rv < 0 && errno != EINTR)
            throw CommError("distributed links: " + sys_error("poll"));
    }
}

// The sockets' buffers: small enough that a large transfer blocks every megabyte or so and wakes
// up again. On a busy machine the scheduler favours threads that sleep and wake over ones that
// stay runnable: with the kernel's autotuned buffers (up to 32 MB) a 64 MB all-reduce's threads
// never blocked and waited for a core several times their CPU time (PyTorch's Gloo, which waits
// for a notification per 1 MB segment, about 1.5 times). Loopback needs no more than this in
// flight for full speed. The kernel doubles the value.
constexpr int kSocketBufferBytes = 1 << 20;

void set_buffers(int fd) {
    int bytes = kSocketBufferBytes;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

void set_options(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int flags = ::fcntl(fd, F_GETFL, 0);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        throw CommError("distributed links: " + sys_error("fcntl"));
}

// Blocking-with-deadline I/O of a few bytes on a non-blocking socket (the hello message).
bool io_all(int fd, void* buf, size_t n, bool sending, TcpLinks::Clock::time_point deadline) {
    auto* p = static_cast<std::byte*>(buf);
    while (n) {
        ssize_t rv = sending ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
        if (rv > 0) {
            p += rv;
            n -= static_cast<size_t>(rv);
        } else if (rv == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            return false;
        } else if (!wait_fd(fd, sending ? POLLOUT : POLLIN, deadline)) {
            return false;
        }
    }
    return true;
}

}  // namespace

TcpLinks::TcpLinks(Store& store, const std::string& prefix, int rank, int size, Millis timeout,
                   const std::string& hostname)
    : m_rank(rank), m_size(size), m_fds(static_cast<size_t>(size), -1) {
    if (size == 1)
        return;
    const auto deadline = Clock::now() + timeout;
    const std::string key = prefix + "neomeg_links/";

    AddrInfo local;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if (int rv = ::getaddrinfo(hostname.c_str(), "0", &hints, &local.list); rv != 0)
        throw CommError("distributed links: cannot resolve '" + hostname +
                        "': " + gai_strerror(rv));
    Fd listener(::socket(local.list->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (listener.get() >= 0)
        set_buffers(listener.get());  // before listen(): accepted sockets inherit them
    if (listener.get() < 0 || ::bind(listener.get(), local.list->ai_addr, local.list->ai_addrlen) ||
        ::listen(listener.get(), size))
        throw CommError("distributed links: cannot listen on " + hostname + ": " +
                        sys_error("bind/listen"));
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &len);
    uint16_t port =
            ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    std::string addr = hostname + " " + std::to_string(port);
    store.set(key + std::to_string(rank), std::vector<char>(addr.begin(), addr.end()));

    std::vector<Fd> owned;
    // The lower ranks listen already (they published first): connect to each and say who we are.
    for (int p = 0; p < rank; ++p) {
        auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
        auto value = store.get(key + std::to_string(p), std::max(left, Millis(1)));
        std::string text(value.begin(), value.end());
        auto space = text.rfind(' ');
        AddrInfo peer;
        addrinfo phints{};
        phints.ai_family = AF_UNSPEC;
        phints.ai_socktype = SOCK_STREAM;
        if (space == std::string::npos ||
            ::getaddrinfo(text.substr(0, space).c_str(), text.substr(space + 1).c_str(), &phints,
                          &peer.list) != 0)
            throw CommError("distributed links: rank " + std::to_string(p) +
                            " published a bad address '" + text + "'");
        Fd fd(::socket(peer.list->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (fd.get() < 0)
            throw CommError("distributed links: " + sys_error("socket"));
        set_buffers(fd.get());  // before connect(): the window is agreed on there
        set_options(fd.get());
        int rv = ::connect(fd.get(), peer.list->ai_addr, peer.list->ai_addrlen);
        if (rv < 0 && errno != EINPROGRESS)
            throw CommError("distributed links: cannot connect to rank " + std::to_string(p) +
                            " at " + text + ": " + sys_error("connect"));
        int err = 0;
        socklen_t elen = sizeof(err);
        if (rv < 0 && (!wait_fd(fd.get(), POLLOUT, deadline) ||
                       ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &elen) || err))
            throw CommError("distributed links: cannot connect to rank " + std::to_string(p) +
                            " at " + text + (err ? std::string(": ") + std::strerror(err) : ""));
        int32_t hello = rank;
        if (!io_all(fd.get(), &hello, sizeof(hello), true, deadline))
            throw CommError("distributed links: rank " + std::to_string(p) +
                            " closed the connection during setup");
        m_fds[static_cast<size_t>(p)] = fd.release();
    }
    // The higher ranks connect to us, in any order.
    for (int accepted = 0; accepted < size - 1 - rank; ++accepted) {
        if (!wait_fd(listener.get(), POLLIN, deadline))
            fail("timed out waiting for the higher ranks to connect");
        Fd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (fd.get() < 0)
            throw CommError("distributed links: " + sys_error("accept"));
        set_options(fd.get());
        int32_t peer = -1;
        if (!io_all(fd.get(), &peer, sizeof(peer), false, deadline) || peer <= rank ||
            peer >= size || m_fds[static_cast<size_t>(peer)] >= 0)
            fail("a connection during setup did not name a new higher rank");
        m_fds[static_cast<size_t>(peer)] = fd.release();
    }
}

// The thread that runs a transfer's sends while the caller receives.
class TcpLinks::Sender {
public:
    explicit Sender(TcpLinks& links) : m_links(links), m_thread([this] { loop(); }) {}
    ~Sender() {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
        }
        m_cv.notify_all();
        m_thread.join();
    }

    void start(std::span<const Piece> sends, Clock::time_point deadline) {
        std::lock_guard lock(m_mutex);
        m_sends = sends;
        m_deadline = deadline;
        m_abort = false;
        m_error = nullptr;
        m_busy = true;
        m_cv.notify_all();
    }

    // Waits for the sends; with `abort`, stops them first (the caller's receives failed).
    void finish(bool abort) {
        if (abort)
            m_abort = true;
        std::unique_lock lock(m_mutex);
        m_cv.wait(lock, [&] { return !m_busy; });
        if (m_error && !abort)
            std::rethrow_exception(std::exchange(m_error, nullptr));
    }

private:
    void loop() {
        std::unique_lock lock(m_mutex);
        for (;;) {
            m_cv.wait(lock, [&] { return m_stop || m_busy; });
            if (m_stop)
                return;
            lock.unlock();
            std::exception_ptr error;
            try {
                m_links.run(m_sends, {}, nullptr, m_deadline, false, &m_abort);
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            m_error = error;
            m_busy = false;
            m_cv.notify_all();
        }
    }

    TcpLinks& m_links;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::span<const Piece> m_sends;
    Clock::time_point m_deadline;
    std::atomic<bool> m_abort{false};
    std::exception_ptr m_error;
    bool m_busy = false, m_stop = false;
    std::thread m_thread;  // last: starts once the members above exist
};

TcpLinks::~TcpLinks() {
    m_sender.reset();  // before the sockets it may be using
    for (int fd : m_fds)
        if (fd >= 0)
            ::close(fd);
}

void TcpLinks::fail(const std::string& what) const {
    throw CommError("distributed links of rank " + std::to_string(m_rank) + ": " + what);
}

void TcpLinks::transfer(std::span<const Piece> sends, std::span<const Piece> recvs,
                        const std::function<void(size_t)>& received, Clock::time_point deadline,
                        bool recv_ahead) {
    size_t send_bytes = 0;
    for (const Piece& p : sends)
        send_bytes += p.bytes;
    if (recvs.empty() || send_bytes < kThreadedSendBytes) {
        run(sends, recvs, received, deadline, recv_ahead, nullptr);
        return;
    }
    if (!m_sender)
        m_sender = std::make_unique<Sender>(*this);
    m_sender->start(sends, deadline);
    try {
        run({}, recvs, received, deadline, recv_ahead, nullptr);
    } catch (...) {
        m_sender->finish(true);
        throw;
    }
    m_sender->finish(false);
}

void TcpLinks::run(std::span<const Piece> sends, std::span<const Piece> recvs,
                   const std::function<void(size_t)>& received, Clock::time_point deadline,
                   bool recv_ahead, const std::atomic<bool>* abort) {
    constexpr size_t kMaxIov = 64;
    // Per peer: the pieces of each direction in order, the current one and the bytes done of it.
    struct Queue {
        std::vector<size_t> items;
        size_t next = 0, done = 0;
        bool pending() const { return next < items.size(); }
    };
    std::vector<Queue> out(static_cast<size_t>(m_size)), in(static_cast<size_t>(m_size));
    for (size_t i = 0; i < sends.size(); ++i)
        out.at(static_cast<size_t>(sends[i].peer)).items.push_back(i);
    for (size_t i = 0; i < recvs.size(); ++i)
        in.at(static_cast<size_t>(recvs[i].peer)).items.push_back(i);
    for (int p = 0; p < m_size; ++p)
        if (p == m_rank &&
            (out[static_cast<size_t>(p)].pending() || in[static_cast<size_t>(p)].pending()))
            fail("a transfer names this rank as its own peer");

    std::vector<pollfd> fds;
    for (;;) {
        bool moved = false, pending = false;
        for (int p = 0; p < m_size; ++p) {
            int fd = m_fds[static_cast<size_t>(p)];
            auto& s = out[static_cast<size_t>(p)];
            while (s.pending()) {
                const Piece& piece = sends[s.items[s.next]];
                if (s.done < piece.bytes) {
                    ssize_t rv = ::send(fd, piece.ptr + s.done, piece.bytes - s.done,
                                        MSG_NOSIGNAL | MSG_DONTWAIT);
                    if (rv < 0) {
                        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                            break;
                        fail("sending to rank " + std::to_string(p) + ": " + sys_error("send"));
                    }
                    s.done += static_cast<size_t>(rv);
                    moved = true;
                }
                if (s.done == piece.bytes) {
                    ++s.next;
                    s.done = 0;
                }
            }
            auto& r = in[static_cast<size_t>(p)];
            while (r.pending()) {
                // The current piece's rest and, with recv_ahead, the following ones: a single
                // system call takes whatever the socket holds.
                iovec iov[kMaxIov];
                size_t niov = 0;
                for (size_t k = r.next; k < r.items.size() && niov < (recv_ahead ? kMaxIov : 1);
                     ++k) {
                    const Piece& piece = recvs[r.items[k]];
                    size_t skip = k == r.next ? r.done : 0;
                    iov[niov++] = {piece.ptr + skip, piece.bytes - skip};
                }
                ssize_t rv = 0;
                if (iov[0].iov_len) {
                    msghdr msg{};
                    msg.msg_iov = iov;
                    msg.msg_iovlen = niov;
                    rv = ::recvmsg(fd, &msg, MSG_DONTWAIT);
                    if (rv == 0)
                        fail("rank " + std::to_string(p) +
                             " closed its link (it exited or failed)");
                    if (rv < 0) {
                        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                            break;
                        fail("receiving from rank " + std::to_string(p) + ": " + sys_error("recv"));
                    }
                    moved = true;
                }
                // Hand out the pieces this completed (an empty one completes at once).
                size_t got = static_cast<size_t>(rv);
                while (r.pending()) {
                    size_t idx = r.items[r.next];
                    size_t take = std::min(got, recvs[idx].bytes - r.done);
                    r.done += take;
                    got -= take;
                    if (r.done < recvs[idx].bytes)
                        break;
                    ++r.next;
                    r.done = 0;
                    if (received)
                        received(idx);
                    if (!got)
                        break;
                }
            }
            pending = pending || s.pending() || r.pending();
        }
        if (!pending)
            return;
        if (moved)
            continue;
        fds.clear();
        for (int p = 0; p < m_size; ++p) {
            short events =
                    static_cast<short>((out[static_cast<size_t>(p)].pending() ? POLLOUT : 0) |
                                       (in[static_cast<size_t>(p)].pending() ? POLLIN : 0));
            if (events)
                fds.push_back({m_fds[static_cast<size_t>(p)], events, 0});
        }
        if (abort && *abort)
            fail("the transfer was abandoned");
        int ms = poll_ms(deadline);
        if (ms == 0)
            fail("timed out (a peer died, hangs or never called the same collective)");
        // An abandoned sender notices within 100 ms.
        int rv = ::poll(fds.data(), fds.size(), abort ? std::min(ms, 100) : ms);
        if (rv < 0 && errno != EINTR)
            fail(sys_error("poll"));
    }
}

}  // namespace neomeg::distributed::detail
