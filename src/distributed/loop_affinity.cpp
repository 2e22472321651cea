// LoopAffinity: the loop thread's id from a probe descriptor it handles, and its CPU mask.
#include "loop_affinity.h"

#include <gloo/transport/tcp/device.h>
#include <gloo/transport/tcp/loop.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace neomeg::distributed {

namespace {

// Readable at once; its handler, run by the loop thread, records that thread's id.
class TidProbe final : public gloo::transport::tcp::Handler {
public:
    explicit TidProbe(int fd) : m_fd(fd) {}

    void handleEvents(int) override {
        uint64_t value;
        // Drained so that the level-triggered descriptor stops reporting.
        [[maybe_unused]] auto n = ::read(m_fd, &value, sizeof value);
        std::lock_guard lock(m_mutex);
        m_tid = ::gettid();
        m_cv.notify_all();
    }

    pid_t wait(std::chrono::milliseconds timeout) {
        std::unique_lock lock(m_mutex);
        m_cv.wait_for(lock, timeout, [&] { return m_tid != 0; });
        return m_tid;
    }

private:
    int m_fd;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    pid_t m_tid = 0;
};

}  // namespace

LoopAffinity::LoopAffinity(gloo::transport::tcp::Device& device) {
    int fd = ::eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0)
        return;
    TidProbe probe(fd);
    device.registerDescriptor(fd, EPOLLIN, &probe);
    pid_t tid = probe.wait(std::chrono::seconds(1));
    device.unregisterDescriptor(fd, &probe);
    ::close(fd);
    if (tid != 0 && ::sched_getaffinity(tid, sizeof m_allowed, &m_allowed) == 0)
        m_tid = tid;
}

void LoopAffinity::avoid_current_cpu() {
    if (m_tid == 0 || CPU_COUNT(&m_allowed) < 2)
        return;
    int cpu = ::sched_getcpu();
    if (cpu < 0 || m_avoided.exchange(cpu) == cpu)
        return;
    cpu_set_t others = m_allowed;
    if (cpu < CPU_SETSIZE)
        CPU_CLR(cpu, &others);
    // A failure (the thread gone with its device) leaves the mask as it was: nothing to undo.
    if (CPU_COUNT(&others) > 0)
        ::sched_setaffinity(m_tid, sizeof others, &others);
}

void LoopAffinity::allow_every_cpu() {
    if (m_tid == 0 || m_avoided.exchange(-1) == -1)
        return;
    ::sched_setaffinity(m_tid, sizeof m_allowed, &m_allowed);
}

}  // namespace neomeg::distributed
