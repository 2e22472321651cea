// The all-reduce algorithms and the TCP links under them: ranks are threads of this process
// sharing a MemoryStore. Integer sums are exact, so every rank's result must equal the sum of
// the inputs computed here, bit for bit.
#include "../all_reduce_algorithms.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

using namespace neomeg::distributed;
using namespace neomeg::distributed::detail;
using namespace std::chrono_literals;

namespace {

std::atomic<int> g_prefix{0};

void run_links(int size, const std::function<void(TcpLinks&)>& body,
               std::chrono::milliseconds timeout = 10s) {
    MemoryStore store;
    std::string prefix = "links" + std::to_string(g_prefix++);
    prefix.append("/");
    std::vector<std::exception_ptr> errors(size);
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r)
        threads.emplace_back([&, r] {
            try {
                TcpLinks links(store, prefix, r, size, timeout, "127.0.0.1");
                body(links);
            } catch (...) {
                errors[r] = std::current_exception();
            }
        });
    for (auto& t : threads)
        t.join();
    for (auto& e : errors)
        if (e)
            std::rethrow_exception(e);
}

void add_i32(void* c, const void* a, const void* b, size_t n) {
    for (size_t i = 0; i < n; ++i)
        static_cast<int32_t*>(c)[i] =
                static_cast<const int32_t*>(a)[i] + static_cast<const int32_t*>(b)[i];
}

int32_t value(int rank, size_t i) {
    return static_cast<int32_t>((i * 31 + static_cast<size_t>(rank) * 7) % 1000) - 500;
}

enum class Algo { Exchange, Ring, RingSmallSegments, Auto };

void check(int size, size_t count, Algo algo, bool in_place) {
    run_links(size, [&](TcpLinks& links) {
        std::vector<int32_t> in(count), out(count, -1);
        for (size_t i = 0; i < count; ++i)
            in[i] = value(links.rank(), i);
        AllReduceArgs args{in.data(), in_place ? in.data() : out.data(), count, sizeof(int32_t),
                           &add_i32,  TcpLinks::Clock::now() + 10s};
        switch (algo) {
            case Algo::Exchange:
                exchange_all_reduce(links, args);
                break;
            case Algo::Ring:
                ring_all_reduce(links, args);
                break;
            case Algo::RingSmallSegments:  // many segments per chunk: 3 elements each
                ring_all_reduce(links, args, 12);
                break;
            case Algo::Auto:
                all_reduce(links, args);
                break;
        }
        const auto& got = in_place ? in : out;
        for (size_t i = 0; i < count; ++i) {
            int32_t expect = 0;
            for (int r = 0; r < size; ++r)
                expect += value(r, i);
            ASSERT_EQ(got[i], expect) << "rank " << links.rank() << " element " << i;
        }
    });
}

}  // namespace

TEST(AllReduceAlgorithms, ExchangeSumsEveryRanksInput) {
    for (int size : {2, 3, 4})
        for (size_t count : {size_t{1}, size_t{5}, size_t{1000}})
            check(size, count, Algo::Exchange, false);
}

TEST(AllReduceAlgorithms, RingSumsEveryRanksInputForUnevenChunks) {
    // Fewer elements than ranks leaves empty chunks; 1001 and 100003 split unevenly.
    for (int size : {2, 3, 4})
        for (size_t count : {size_t{1}, size_t{3}, size_t{1001}, size_t{100003}})
            check(size, count, Algo::Ring, false);
}

TEST(AllReduceAlgorithms, RingWithManySegmentsPerChunk) {
    for (int size : {2, 3})
        check(size, 1001, Algo::RingSmallSegments, false);
}

TEST(AllReduceAlgorithms, InPlaceWhenOutputIsTheInput) {
    for (int size : {2, 3, 4}) {
        check(size, 257, Algo::Exchange, true);
        check(size, 257, Algo::RingSmallSegments, true);
    }
}

TEST(AllReduceAlgorithms, AutoPicksBothSidesOfTheThreshold) {
    // 256 KiB of int32 is 65536 elements: below runs the exchange, above the ring (with sends
    // large enough for the links' sending thread).
    check(2, kExchangeMaxBytes / 4, Algo::Auto, false);
    check(3, 3 * (kExchangeMaxBytes / 4) + 1, Algo::Auto, false);
}

TEST(TcpLinks, ASilentPeerTimesOut) {
    // Rank 1 never sends: rank 0's receive fails at its deadline instead of waiting forever.
    std::atomic<bool> done{false};
    run_links(2, [&](TcpLinks& links) {
        if (links.rank() == 1) {
            while (!done)
                std::this_thread::sleep_for(1ms);
            return;
        }
        std::byte buf[8];
        TcpLinks::Piece recv{1, buf, sizeof(buf)};
        auto start = TcpLinks::Clock::now();
        EXPECT_THROW(links.transfer({}, {&recv, 1}, nullptr, start + 200ms), CommError);
        EXPECT_LT(TcpLinks::Clock::now() - start, 5s);
        done = true;
    });
}

TEST(TcpLinks, APeerThatLeavesFailsTheTransfer) {
    run_links(2, [&](TcpLinks& links) {
        if (links.rank() == 1)
            return;  // its links close as it returns
        std::vector<std::byte> buf(4 << 20);
        TcpLinks::Piece send{1, buf.data(), buf.size()}, recv{1, buf.data(), buf.size()};
        EXPECT_THROW(links.transfer({&send, 1}, {&recv, 1}, nullptr, TcpLinks::Clock::now() + 10s),
                     CommError);
    });
}

TEST(TcpLinks, MissingPeerTimesOutAtSetup) {
    MemoryStore store;
    auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(TcpLinks(store, "alone/", 1, 2, 300ms, "127.0.0.1"), StoreTimeout);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}
