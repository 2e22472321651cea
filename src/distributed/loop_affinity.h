// Keeps Gloo's TCP event-loop thread off the CPU of the thread that posts the messages.
//
// Why: Gloo's loop thread handles a socket's events only when it gets the pair's lock
// (try_lock); when the caller holds that lock (posting a send or a receive), the loop returns
// and epoll_wait reports the still-readable socket again at once: it spins. On one CPU, the
// loop thread, woken by the peer's message, preempts the caller in the middle of a post and
// spins until the scheduler takes the CPU back: milliseconds. Measured on the 2-core machine
// (2 ranks all-reducing 1 KB): with the caller and the loop thread on one CPU every all-reduce
// took 6-13 ms, the loop thread burning 1-3 ms of CPU in each; on different CPUs, 95 us. The
// scheduler puts them together for seconds at a time, so short runs measured either.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <atomic>

namespace gloo::transport::tcp {
class Device;
}

namespace neomeg::distributed {

class LoopAffinity {
public:
    // Finds the device's loop thread (a probe descriptor whose handler records its thread id).
    // Where it cannot (no answer within a second), avoid_current_cpu does nothing.
    explicit LoopAffinity(gloo::transport::tcp::Device& device);

    // Called by the thread about to communicate: when it runs on another CPU than last time,
    // the loop thread may run on every CPU it was allowed at construction except this one
    // (nothing changes where that leaves none). One system call per change of CPU.
    void avoid_current_cpu();
    // Lets the loop thread run on every CPU it was allowed at construction again (one system
    // call where avoid_current_cpu had moved it).
    void allow_every_cpu();

    pid_t loop_thread() const { return m_tid; }
    // The CPU the loop thread was last moved off, or -1.
    int avoided_cpu() const { return m_avoided.load(); }

private:
    pid_t m_tid = 0;
    cpu_set_t m_allowed{};
    std::atomic<int> m_avoided{-1};
};

}  // namespace neomeg::distributed
