#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "neomeg/core/caching_allocator.h"
#include "neomeg/core/comp_node.h"
#include "neomeg/dnn/handle.h"

#include "../core/host_memory.h"

using namespace neomeg;

TEST(CompNode, NamesAreCanonicalAndInterned) {
    auto a = CompNode::load("cpu0");
    EXPECT_EQ(a, CompNode::load("cpux"));
    EXPECT_EQ(a.to_string(), "cpu0");
    EXPECT_EQ(a.device_type(), CompNode::DeviceType::CPU);
    auto s = CompNode::load("cpu0:2");
    EXPECT_NE(a, s);
    EXPECT_EQ(s.stream(), 2);
    EXPECT_EQ(s.to_string(), "cpu0:2");
    EXPECT_EQ(CompNode::load("cpu1").device_index(), 1);
    if (!is_cuda_available()) {
        EXPECT_EQ(CompNode::default_device(), a);
    }
    EXPECT_STREQ(a.dnn_handle()->name(), dnn::Handle::x86_available() ? "x86" : "naive");
}

// NEOMEG_BACKEND is read when a node is first loaded, so each case loads a node no other test
// uses.
TEST(CompNode, BackendEnvironmentVariableChoosesTheHandle) {
    ::setenv("NEOMEG_BACKEND", "naive", 1);
    EXPECT_STREQ(CompNode::load("cpu5").dnn_handle()->name(), "naive");
    ::setenv("NEOMEG_BACKEND", "bogus", 1);
    EXPECT_THROW(CompNode::load("cpu6"), std::invalid_argument);
    if (dnn::Handle::x86_available()) {
        ::setenv("NEOMEG_BACKEND", "x86", 1);
        EXPECT_STREQ(CompNode::load("cpu7").dnn_handle()->name(), "x86");
    }
    ::unsetenv("NEOMEG_BACKEND");
    EXPECT_STREQ(CompNode::load("cpu5").dnn_handle()->name(), "naive");  // interned as loaded
}

// Every test of a suite runs in one process outside ctest: a failed load must not leave an
// empty registry entry that a later empty_all_caches or sync_all would follow.
TEST(CompNode, AFailedLoadLeavesNoNodeBehind) {
    ::setenv("NEOMEG_BACKEND", "bogus", 1);
    EXPECT_THROW(CompNode::load("cpu12"), std::invalid_argument);
    ::unsetenv("NEOMEG_BACKEND");
    EXPECT_NO_THROW(CompNode::empty_all_caches());
    EXPECT_NO_THROW(CompNode::sync_all());
    EXPECT_EQ(CompNode::load("cpu12").to_string(), "cpu12");  // loads once the cause is gone
}

// The locators MegEngine 1.13 accepts, with what it resolved them to on a machine without a GPU.
TEST(CompNode, MegEngineLocatorsResolve) {
    const std::string cpu_or_gpu = is_cuda_available() ? "gpu" : "cpu";
    const std::pair<const char*, std::string> cases[] = {{"cpux", "cpu0"},
                                                         {"cpu00", "cpu0"},
                                                         {"cpu:1", "cpu0:1"},
                                                         {"cpux:1", "cpu0:1"},
                                                         {"xpux", cpu_or_gpu + "0"},
                                                         {"xpu", cpu_or_gpu + "0"},
                                                         {"xpu:1", cpu_or_gpu + "0:1"}};
    for (const auto& [name, want] : cases)
        EXPECT_EQ(CompNode::load(name).to_string(), want) << name;
    if (!is_cuda_available()) {
        EXPECT_EQ(CompNode::load("xpu2").to_string(), "cpu2");
        EXPECT_EQ(CompNode::load("xpu0:2").to_string(), "cpu0:2");
    }
}

TEST(CompNode, BadNamesAreClearErrors) {
    for (const char* bad : {"", "cpu", "gpu", "cpuA", "tpu0", "CPU0", "cpu 0", "cpu0:", "cpu0:x",
                            "xpu0:x", "cpu-1", "x", "xpuxx"}) {
        try {
            CompNode::load(bad);
            FAIL() << bad;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("invalid comp node name"), std::string::npos);
        }
    }
    if (!is_cuda_available()) {
        EXPECT_THROW(CompNode::load("gpu0"), std::runtime_error);
    }
    EXPECT_EQ(CompNode().to_string(), "invalid");
    EXPECT_THROW(CompNode().alloc(4), std::logic_error);
}

TEST(CachingAllocator, ReusesFreedBlocksAndTracksPeak) {
    auto cn = CompNode::load("cpu7");  // a node of its own, so stats start at zero
    auto base = cn.memory_stats();
    void* p = cn.alloc(1000);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % CachingAllocator::kAlignment, 0u);
    auto st = cn.memory_stats();
    EXPECT_EQ(st.allocated - base.allocated, 1024u);
    cn.free(p);
    void* q = cn.alloc(900);  // same 1024-byte class: the cached block comes back
    EXPECT_EQ(p, q);
    EXPECT_EQ(cn.memory_stats().nr_system_allocs, st.nr_system_allocs);
    void* r = cn.alloc(4 << 20);
    EXPECT_GE(cn.memory_stats().peak_allocated, (4u << 20) + 1024u);
    cn.free(q);
    cn.free(r);
    EXPECT_EQ(cn.memory_stats().allocated, base.allocated);
    cn.empty_cache();
    EXPECT_EQ(cn.memory_stats().reserved, 0u);
}

// Among cached blocks of one size the one freed last comes back first: it is the one still in
// cache. Handing out the oldest made a loop of same-size ops cycle through every cached block.
TEST(CachingAllocator, ReusesTheBlockFreedLast) {
    auto cn = CompNode::load("cpu10");
    for (size_t size : {size_t(1000), size_t(3) << 20}) {
        void* p[3] = {cn.alloc(size), cn.alloc(size), cn.alloc(size)};
        for (void* b : p)
            cn.free(b);
        void* q = cn.alloc(size);
        EXPECT_EQ(q, p[2]) << size;
        cn.free(q);
        EXPECT_EQ(cn.alloc(size), p[2]) << size;  // freed last again
        void* r = cn.alloc(size);
        EXPECT_EQ(r, p[1]) << size;
        cn.free(p[2]);
        cn.free(r);
    }
    cn.empty_cache();
}

TEST(CachingAllocator, EmptyAllCachesReleasesEveryNodesFreeBlocks) {
    auto a = CompNode::load("cpu8"), b = CompNode::load("cpu9:1");
    a.free(a.alloc(2000));
    void* held = b.alloc(3000);
    b.free(b.alloc(5000));
    CompNode::empty_all_caches();
    EXPECT_EQ(a.memory_stats().reserved, 0u);
    EXPECT_EQ(b.memory_stats().reserved, 3072u);  // the block in use stays
    b.free(held);
    b.empty_cache();
}

namespace {

// This process's resident bytes (/proc/self/statm: size, then resident, in pages).
size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    size_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

void* volatile g_sink;

}  // namespace

TEST(CachingAllocator, EmptyCacheGivesHostPagesBackToTheSystem) {
    auto cn = CompNode::load("cpu10");
    constexpr size_t kBlock = size_t(4) << 20, kBlocks = 16;
    // glibc raises its mmap threshold to the size of each mapped chunk freed: after this one,
    // its malloc serves 4 MiB from its heap, where freed chunks stay resident (the small chunk
    // after each block keeps them from merging into the heap's top, which it would trim).
    g_sink = std::malloc(size_t(8) << 20);
    std::free(g_sink);
    std::vector<void*> blocks, pins;
    for (size_t i = 0; i < kBlocks; ++i) {
        blocks.push_back(cn.alloc(kBlock));
        std::memset(blocks.back(), 1, kBlock);  // resident now
        pins.push_back(std::malloc(64));
        g_sink = pins.back();
    }
    const size_t before = resident_bytes();
    for (void* p : blocks)
        cn.free(p);
    EXPECT_GE(resident_bytes() + kBlock, before);  // cached: still resident
    cn.empty_cache();
    const size_t after = resident_bytes();
    EXPECT_GE(before, after + (kBlocks - 1) * kBlock) << "before " << before << ", after " << after;
    for (void* p : pins)
        std::free(p);
}

namespace {

// The kernel's transparent huge page size, 0 without THP: read here, apart from the allocator.
size_t huge_page_bytes() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    size_t n = 0;
    f >> n;
    return f ? n : 0;
}

// The VmFlags of the mapping that holds p (/proc/self/smaps), "" if none does.
std::string vm_flags_of(const void* p) {
    std::ifstream smaps("/proc/self/smaps");
    const auto at = reinterpret_cast<uintptr_t>(p);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        unsigned long lo = 0, hi = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
            inside = lo <= at && at < hi;
            continue;
        }
        if (inside && line.starts_with("VmFlags:"))
            return line;
    }
    return "";
}

// This process's mapped bytes (/proc/self/statm: size first, in pages).
size_t mapped_bytes() {
    std::ifstream statm("/proc/self/statm");
    size_t size = 0;
    statm >> size;
    return size * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

// Host blocks of a huge page and more start on a huge-page boundary and are advised as huge-page
// memory (VmFlags "hg"): a memory-bound op over 8 MiB tensors then needs 4 TLB entries per
// operand, not 2048. Smaller mapped blocks are page aligned. Every byte is writable.
TEST(CachingAllocator, HostBlocksOfAHugePageAreAlignedAndAdvised) {
    const size_t huge = huge_page_bytes(), page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    auto cn = CompNode::load("cpu20");
    for (size_t size : {size_t(1) << 20, (size_t(3) << 20) / 2, (size_t(2) << 20) - 1,
                        size_t(2) << 20, (size_t(2) << 20) + 1, size_t(3) << 20, size_t(9) << 20}) {
        auto* p = static_cast<unsigned char*>(cn.alloc(size));
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % page, 0u) << size;
        if (huge != 0 && CachingAllocator::round_size(size) >= huge) {
            EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % huge, 0u) << size;
            EXPECT_NE(vm_flags_of(p).find(" hg"), std::string::npos)
                    << size << ": " << vm_flags_of(p);
        }
        std::memset(p, 1, size);
        EXPECT_EQ(p[size - 1], 1);
        cn.free(p);
    }
    cn.empty_cache();
    EXPECT_EQ(cn.memory_stats().reserved, 0u);
}

// A huge-page-aligned block is mapped with room to align it, which is unmapped again: the blocks
// given back leave the process's mappings as they were (a head or tail left mapped would add up
// to a huge page per block).
TEST(CachingAllocator, AlignedHostBlocksLeaveNoMappingBehind) {
    auto cn = CompNode::load("cpu21");
    const auto cycle = [&] {
        std::vector<void*> blocks;
        for (size_t mib : {2, 3, 5, 8})
            blocks.push_back(cn.alloc(mib << 20));
        for (void* p : blocks)
            cn.free(p);
        cn.empty_cache();
    };
    cycle();  // the node, its maps and vectors exist before the count
    const size_t before = mapped_bytes();
    for (int round = 0; round < 4; ++round)
        cycle();
    EXPECT_EQ(mapped_bytes(), before);
}

// host_memory's own contract for a size that is not a whole number of pages (the caching
// allocator only asks for whole MiB): the block is aligned, writable to its last byte, and
// freeing it leaves no part of the aligning room mapped.
TEST(HostMemory, AnySizeAlignsAndUnmapsWhole) {
    const size_t huge = neomeg::host_memory::huge_page_size();
    const size_t odd = (size_t(2) << 20) + 12345;
    auto once = [&] {
        auto* p = static_cast<unsigned char*>(neomeg::host_memory::alloc(odd));
        ASSERT_NE(p, nullptr);
        if (huge != 0) {
            EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % huge, 0u);
        }
        std::memset(p, 3, odd);
        EXPECT_EQ(p[odd - 1], 3);
        neomeg::host_memory::free(p, odd);
    };
    once();
    const size_t before = mapped_bytes();
    for (int i = 0; i < 4; ++i)
        once();
    EXPECT_EQ(mapped_bytes(), before);
}

TEST(CachingAllocator, PeakReservedOutlivesEmptyCacheUntilReset) {
    CachingAllocator a([](size_t n) { return std::aligned_alloc(64, n); },
                       [](void* p, size_t) { std::free(p); });
    void* p = a.alloc(3 << 20);
    void* q = a.alloc(1000);
    a.free(p);
    EXPECT_EQ(a.stats().peak_reserved, (3u << 20) + 1024u);
    EXPECT_EQ(a.stats().peak_allocated, (3u << 20) + 1024u);
    a.empty_cache();  // the 3 MiB block goes back to the system; the peak stays
    EXPECT_EQ(a.stats().reserved, 1024u);
    EXPECT_EQ(a.stats().peak_reserved, (3u << 20) + 1024u);
    a.reset_peak();
    EXPECT_EQ(a.stats().peak_reserved, 1024u);
    EXPECT_EQ(a.stats().peak_allocated, 1024u);
    a.free(q);
}

TEST(CachingAllocator, SmallRequestDoesNotPinHugeBlock) {
    CachingAllocator a([](size_t n) { return std::aligned_alloc(64, n); },
                       [](void* p, size_t) { std::free(p); });
    void* big = a.alloc(8 << 20);
    a.free(big);
    void* small = a.alloc(100);
    EXPECT_NE(small, big);
    EXPECT_EQ(a.stats().nr_system_allocs, 2u);
    a.free(small);
    EXPECT_THROW(a.free(reinterpret_cast<void*>(0x40)), std::invalid_argument);
}

TEST(CachingAllocator, OutOfMemoryDropsCacheThenThrows) {
    size_t budget = 4096;
    CachingAllocator a(
            [&](size_t n) -> void* {
                if (n > budget)
                    return nullptr;
                budget -= n;
                return std::aligned_alloc(64, n);
            },
            [&](void* p, size_t) { std::free(p); });
    std::vector<void*> held;
    for (int i = 0; i < 8; ++i)
        held.push_back(a.alloc(512));
    EXPECT_THROW(a.alloc(512), OutOfMemoryError);
    for (void* p : held)
        a.free(p);
    EXPECT_EQ(a.round_size(0), 512u);
    EXPECT_EQ(a.round_size(513), 1024u);
    EXPECT_EQ(a.round_size((1 << 20) + 1), 2u << 20);
}
