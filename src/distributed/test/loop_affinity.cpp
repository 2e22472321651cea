// LoopAffinity: it finds Gloo's loop thread and moves it off the caller's CPU.
#include "loop_affinity.h"

#include <gloo/transport/tcp/device.h>
#include <gtest/gtest.h>
#include <unistd.h>

using neomeg::distributed::LoopAffinity;

TEST(LoopAffinity, MovesTheLoopThreadOffTheCallersCpu) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto* tcp = dynamic_cast<gloo::transport::tcp::Device*>(device.get());
    ASSERT_NE(tcp, nullptr);
    LoopAffinity affinity(*tcp);
    pid_t tid = affinity.loop_thread();
    ASSERT_NE(tid, 0);
    EXPECT_NE(tid, ::gettid());  // the loop's own thread, not the caller
    cpu_set_t allowed;
    ASSERT_EQ(::sched_getaffinity(tid, sizeof allowed, &allowed), 0);
    if (CPU_COUNT(&allowed) < 2)
        GTEST_SKIP() << "one CPU: the loop thread cannot move";
    EXPECT_EQ(affinity.avoided_cpu(), -1);
    affinity.avoid_current_cpu();
    int avoided = affinity.avoided_cpu();
    ASSERT_GE(avoided, 0);
    cpu_set_t now;
    ASSERT_EQ(::sched_getaffinity(tid, sizeof now, &now), 0);
    EXPECT_FALSE(CPU_ISSET(avoided, &now));
    EXPECT_EQ(CPU_COUNT(&now), CPU_COUNT(&allowed) - 1);
}
