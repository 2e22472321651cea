// The caching allocator's out-of-memory path, on a fake raw allocator with a byte budget: what a
// GPU's cudaMalloc does when the device is full, tested on any machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "neomeg/core/caching_allocator.h"

using namespace neomeg;

namespace {

// A raw allocator that refuses once `budget` bytes are out, and counts its calls.
struct FakeDevice {
    size_t budget;
    size_t calls = 0, refusals = 0, frees = 0;

    CachingAllocator allocator(std::string name = "fake0",
                               CachingAllocator::Describe describe = {}) {
        return CachingAllocator(
                [this](size_t n) -> void* {
                    ++calls;
                    if (n > budget) {
                        ++refusals;
                        return nullptr;
                    }
                    budget -= n;
                    return std::malloc(n);
                },
                [this](void* p, size_t) {
                    ++frees;
                    std::free(p);
                },
                std::move(name), std::move(describe));
    }
};

constexpr size_t kMiB = size_t(1) << 20;

}  // namespace

TEST(CachingAllocatorOom, EmptiesTheCacheAndRetriesOnce) {
    FakeDevice dev{4 * kMiB};
    // The allocator keeps raw pointers to `dev` through the lambdas: both live in this scope.
    CachingAllocator a(
            [&](size_t n) -> void* {
                ++dev.calls;
                if (n > dev.budget) {
                    ++dev.refusals;
                    return nullptr;
                }
                dev.budget -= n;
                return std::malloc(n);
            },
            [&](void* p, size_t) {
                ++dev.frees;
                std::free(p);
                dev.budget += kMiB;  // every block here is 1 MiB
            },
            "fake0");
    std::vector<void*> blocks;
    for (int i = 0; i < 4; ++i)
        blocks.push_back(a.alloc(kMiB));
    a.free(blocks[0]);
    a.free(blocks[1]);
    // 2 MiB is not in the cache (two separate 1 MiB blocks) and the device is full: the first
    // raw call fails, the cache goes back, the retry gets the memory.
    size_t calls = dev.calls;
    void* big = a.alloc(2 * kMiB);
    EXPECT_NE(big, nullptr);
    EXPECT_EQ(dev.calls - calls, 2u);
    EXPECT_EQ(dev.refusals, 1u);
    EXPECT_EQ(dev.frees, 2u);
    auto st = a.stats();
    EXPECT_EQ(st.allocated, 4 * kMiB);
    EXPECT_EQ(st.reserved, 4 * kMiB);
    EXPECT_EQ(st.peak_reserved, 4 * kMiB);
    a.free(big);
    a.free(blocks[2]);
    a.free(blocks[3]);
}

TEST(CachingAllocatorOom, ThrowsNamingTheRequestAndTheStatistics) {
    FakeDevice dev{3 * kMiB};
    auto a = dev.allocator("gpu7:1", [] { return std::string("gpu7 has 12 of 34 bytes free"); });
    void* held = a.alloc(3 * kMiB);
    try {
        a.alloc(5 * kMiB + 3);
        FAIL() << "no OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
        std::string msg = e.what();
        for (const char* want :
             {"out of memory on gpu7:1", "tried to allocate 5.00 MiB (5242883 bytes",
              "6291456 rounded", "allocated 3.00 MiB", "reserved 3.00 MiB",
              "gpu7 has 12 of 34 bytes free"})
            EXPECT_NE(msg.find(want), std::string::npos) << want << " not in: " << msg;
    }
    EXPECT_EQ(dev.refusals, 2u);  // the request and its one retry
    // A Python RuntimeError: the error is a std::runtime_error.
    EXPECT_THROW(a.alloc(5 * kMiB), std::runtime_error);
    // The failed requests changed no statistics.
    EXPECT_EQ(a.stats().allocated, 3 * kMiB);
    EXPECT_EQ(a.stats().nr_system_allocs, 1u);
    a.free(held);
}

TEST(CachingAllocatorOom, RetryGivesBackOnlyCachedBlocks) {
    FakeDevice dev{2 * kMiB};
    auto a = dev.allocator();
    void* used = a.alloc(kMiB);
    void* cached = a.alloc(kMiB);
    a.free(cached);
    EXPECT_THROW(a.alloc(4 * kMiB), OutOfMemoryError);
    EXPECT_EQ(dev.frees, 1u);  // the cached block went back, the one in use did not
    EXPECT_EQ(a.stats().reserved, kMiB);
    EXPECT_EQ(a.stats().allocated, kMiB);
    a.free(used);
}
