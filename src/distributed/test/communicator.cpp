// Communicator: ranks are threads of this process sharing a MemoryStore; every collective is
// checked against the same computation done directly on the ranks' inputs.
#include "neomeg/distributed/communicator.h"

#include <gtest/gtest.h>

#include "collectives.h"      // the size limit of the two-lane broadcast
#include "rendezvous.h"       // the addresses that name a peer in errors
#include "ring_all_reduce.h"  // the size limits of its algorithms

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

using namespace neomeg;
using namespace neomeg::distributed;
using namespace std::chrono_literals;

namespace {

std::atomic<int> g_prefix{0};

// Runs body(comm) on `size` threads, one Communicator each; rethrows the first failure.
void run_ranks(int size, const std::function<void(Communicator&)>& body,
               std::chrono::milliseconds timeout = 10s) {
    MemoryStore store;
    // (Built by append: GCC 12 gives a false -Wrestrict on "t" + to_string(...).)
    std::string prefix = std::to_string(g_prefix++);
    prefix.append("/");
    std::vector<std::exception_ptr> errors(size);
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r)
        threads.emplace_back([&, r] {
            try {
                Communicator comm(store, prefix, r, size, timeout);
                body(comm);
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

// Rank r's element i: distinct per rank and element, exact in every dtype used.
template <class T>
std::vector<T> input(int r, size_t n) {
    std::vector<T> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<T>(static_cast<int>((i * 7 + r * 3) % 11) - 5);
    return v;
}

template <class T>
void check_all_reduce(dnn::DType dtype) {
    const int size = 3;
    const size_t n = 1000;
    run_ranks(size, [&](Communicator& comm) {
        auto in = input<T>(comm.rank(), n);
        for (auto op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
            std::vector<T> out(n);
            comm.all_reduce(in.data(), out.data(), n, dtype, op);
            for (size_t i = 0; i < n; ++i) {
                float expect = op == ReduceOp::Sum ? 0.f : static_cast<float>(input<T>(0, n)[i]);
                for (int r = 0; r < size; ++r) {
                    float x = static_cast<float>(input<T>(r, n)[i]);
                    expect = op == ReduceOp::Sum   ? expect + x
                             : op == ReduceOp::Max ? std::max(expect, x)
                                                   : std::min(expect, x);
                }
                ASSERT_EQ(static_cast<float>(out[i]), expect) << "element " << i;
            }
        }
    });
}

}  // namespace

TEST(Communicator, AllReduceFloat32) {
    check_all_reduce<float>(dnn::dtype::Float32);
}
TEST(Communicator, AllReduceInt32) {
    check_all_reduce<int32_t>(dnn::dtype::Int32);
}
TEST(Communicator, AllReduceFloat16) {
    check_all_reduce<dnn::dt_float16>(dnn::dtype::Float16);
}
TEST(Communicator, AllReduceInt8) {
    check_all_reduce<int8_t>(dnn::dtype::Int8);
}

TEST(Communicator, BoolReducesAsOrAndAnd) {
    run_ranks(2, [](Communicator& comm) {
        bool in[2] = {comm.rank() == 0, true};
        bool out[2];
        comm.all_reduce(in, out, 2, dnn::dtype::Bool, ReduceOp::Sum);
        EXPECT_TRUE(out[0]);
        comm.all_reduce(in, out, 2, dnn::dtype::Bool, ReduceOp::Min);
        EXPECT_FALSE(out[0]);
        EXPECT_TRUE(out[1]);
    });
}

TEST(Communicator, AllReduceInPlaceWhenOutputIsTheInput) {
    // The output buffer given as the input: Gloo reduces it in place. 1000003 elements (4 MB)
    // span several of Gloo's ring segments and split unevenly between 2 and 3 ranks.
    for (int size : {2, 3})
        for (size_t n : {size_t{1}, size_t{1000003}})
            run_ranks(size, [&](Communicator& comm) {
                std::vector<int32_t> expect(n, 0);
                for (int r = 0; r < size; ++r) {
                    auto x = input<int32_t>(r, n);
                    for (size_t i = 0; i < n; ++i)
                        expect[i] += x[i];
                }
                auto buf = input<int32_t>(comm.rank(), n);
                comm.all_reduce(buf.data(), buf.data(), n, dnn::dtype::Int32, ReduceOp::Sum);
                for (size_t i = 0; i < n; ++i)
                    ASSERT_EQ(buf[i], expect[i]) << size << " ranks, element " << i;
            });
}

TEST(Communicator, AllReduceOutOfPlaceLeavesTheInput) {
    // Fewer elements than ranks (empty chunks), uneven chunks, and chunks of several 1 MB
    // segments (more than the two received ahead); the input must come back unchanged.
    for (int size : {2, 3, 4})
        for (size_t n : {size_t{1}, size_t{2}, size_t{5}, size_t{1000003}, size_t{2100001}})
            run_ranks(size, [&](Communicator& comm) {
                auto expect = input<int32_t>(0, n);
                for (int r = 1; r < size; ++r) {
                    auto x = input<int32_t>(r, n);
                    for (size_t i = 0; i < n; ++i)
                        expect[i] = std::max(expect[i], x[i]);
                }
                const auto in = input<int32_t>(comm.rank(), n);
                auto copy = in;
                std::vector<int32_t> out(n, -99);
                comm.all_reduce(in.data(), out.data(), n, dnn::dtype::Int32, ReduceOp::Max);
                ASSERT_EQ(in, copy);
                for (size_t i = 0; i < n; ++i)
                    ASSERT_EQ(out[i], expect[i]) << size << " ranks, element " << i;
            });
}

TEST(Communicator, TwoRanksExchangeDirectlyUpToTheLimitAndRingAbove) {
    // Around kDirectAllReduceMaxBytes: the direct exchange below and at it, the ring above;
    // in place and out of place; max and min reduced in rank order on both ranks, so that a NaN
    // against a number gives the same result on each.
    const size_t direct = kDirectAllReduceMaxBytes / sizeof(int32_t);
    for (size_t n : {size_t{1}, size_t{1000}, direct, direct + 1})
        run_ranks(2, [&](Communicator& comm) {
            auto x0 = input<int32_t>(0, n), x1 = input<int32_t>(1, n);
            auto in = comm.rank() == 0 ? x0 : x1;
            std::vector<int32_t> out(n, -99);
            comm.all_reduce(in.data(), out.data(), n, dnn::dtype::Int32, ReduceOp::Sum);
            for (size_t i = 0; i < n; ++i)
                ASSERT_EQ(out[i], x0[i] + x1[i]) << n << " elements, element " << i;
            comm.all_reduce(in.data(), in.data(), n, dnn::dtype::Int32, ReduceOp::Min);
            for (size_t i = 0; i < n; ++i)
                ASSERT_EQ(in[i], std::min(x0[i], x1[i])) << n << " elements, element " << i;
        });
    run_ranks(2, [](Communicator& comm) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        float in[2] = {comm.rank() == 0 ? nan : 1.f, comm.rank() == 0 ? 1.f : nan};
        float out[2];
        comm.all_reduce(in, out, 2, dnn::dtype::Float32, ReduceOp::Max);
        // x0 max x1 is x0 where the comparison fails: NaN, then 1, on both ranks.
        EXPECT_TRUE(std::isnan(out[0]));
        EXPECT_EQ(out[1], 1.f);
    });
}

TEST(Communicator, TwoRanksGoTwoLanesFromTheLimit) {
    // From kTwoLaneAllReduceMinBytes the 2 ranks pipeline the reduce-scatter and all-gather
    // over two contexts: just below it (the ring), at it and an odd count above (uneven halves
    // of 1 MB segments, more than an in-place all-reduce receives ahead); out of place (the
    // input unchanged), in place, and a NaN against a number that both ranks reduce the same.
    const size_t lanes = kTwoLaneAllReduceMinBytes / sizeof(float);
    for (size_t n : {lanes - 1, lanes, lanes + 3})
        run_ranks(2, [&](Communicator& comm) {
            auto x0 = input<int32_t>(0, n), x1 = input<int32_t>(1, n);
            auto in = comm.rank() == 0 ? x0 : x1;
            const auto copy = in;
            std::vector<int32_t> out(n, -99);
            comm.all_reduce(in.data(), out.data(), n, dnn::dtype::Int32, ReduceOp::Sum);
            ASSERT_EQ(in, copy);
            for (size_t i = 0; i < n; ++i)
                ASSERT_EQ(out[i], x0[i] + x1[i]) << n << " elements, element " << i;
            comm.all_reduce(in.data(), in.data(), n, dnn::dtype::Int32, ReduceOp::Max);
            for (size_t i = 0; i < n; ++i)
                ASSERT_EQ(in[i], std::max(x0[i], x1[i])) << n << " elements, element " << i;
        });
    run_ranks(2, [&](Communicator& comm) {
        // NaN and 1 at both ends of the message (one in each rank's half).
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::vector<float> in(lanes, 0.f);
        in.front() = comm.rank() == 0 ? nan : 1.f;
        in.back() = comm.rank() == 0 ? 1.f : nan;
        std::vector<float> out(lanes);
        comm.all_reduce(in.data(), out.data(), lanes, dnn::dtype::Float32, ReduceOp::Max);
        EXPECT_TRUE(std::isnan(out.front()));
        EXPECT_EQ(out.back(), 1.f);
    });
}

TEST(Communicator, RanksThatDisagreeGetAnErrorNamingBoth) {
    // Counts on either side of the direct and two-lane limits, dtypes, ops: each rank of the pair
    // raises invalid_argument (no crash in Gloo's event loop, no hang).
    struct Case {
        size_t n0, n1;
        dnn::DType d1;
        ReduceOp op1;
    };
    const size_t direct = kDirectAllReduceMaxBytes / sizeof(float);
    const size_t lanes = kTwoLaneAllReduceMinBytes / sizeof(float);
    for (Case c : {Case{3, 4, dnn::dtype::Float32, ReduceOp::Sum},
                   Case{4, direct + 1, dnn::dtype::Float32, ReduceOp::Sum},
                   Case{direct + 1, direct + 2, dnn::dtype::Float32, ReduceOp::Sum},
                   Case{4, lanes, dnn::dtype::Float32, ReduceOp::Sum},
                   Case{lanes - 1, lanes, dnn::dtype::Float32, ReduceOp::Sum},
                   Case{lanes, lanes + 1, dnn::dtype::Float32, ReduceOp::Sum},
                   Case{5, 5, dnn::dtype::Int32, ReduceOp::Sum},
                   Case{5, 5, dnn::dtype::Float32, ReduceOp::Max}}) {
        std::atomic<int> raised{0};
        run_ranks(2, [&](Communicator& comm) {
            bool one = comm.rank() == 1;
            size_t n = one ? c.n1 : c.n0;
            std::vector<float> in(n, 1.f), out(n);
            try {
                comm.all_reduce(in.data(), out.data(), n, one ? c.d1 : dnn::dtype::Float32,
                                one ? c.op1 : ReduceOp::Sum);
            } catch (const std::invalid_argument& e) {
                std::string msg = e.what();
                EXPECT_NE(msg.find("same shape and dtype"), std::string::npos) << msg;
                EXPECT_NE(msg.find(std::to_string(c.n0) + " elements of float32 (sum)"),
                          std::string::npos)
                        << msg;
                ++raised;
            }
        });
        EXPECT_EQ(raised, 2) << c.n0 << " vs " << c.n1;
    }
}

TEST(Communicator, ARingWithOneDisagreeingRankFailsEveryRank) {
    // 3 ranks, rank 2 with one element more: ranks 0 and 2 see a left neighbour that disagrees
    // and raise invalid_argument, unless the other one has already left (its connection
    // closed: CommError); rank 1, whose left neighbour agrees, waits for data that never comes
    // and fails at the timeout or when a peer leaves. Every rank fails; none hangs or aborts.
    std::vector<std::string> outcome(3);
    run_ranks(
            3,
            [&](Communicator& comm) {
                size_t n = comm.rank() == 2 ? 6 : 5;
                std::vector<float> in(n, 1.f), out(n);
                try {
                    comm.all_reduce(in.data(), out.data(), n, dnn::dtype::Float32, ReduceOp::Sum);
                    outcome[comm.rank()] = "ok";
                } catch (const std::invalid_argument&) {
                    outcome[comm.rank()] = "invalid_argument";
                } catch (const CommError&) {
                    outcome[comm.rank()] = "CommError";
                }
            },
            1s);
    EXPECT_EQ(outcome[1], "CommError");
    EXPECT_NE(outcome[0], "ok");
    EXPECT_NE(outcome[2], "ok");
    EXPECT_TRUE(outcome[0] == "invalid_argument" || outcome[2] == "invalid_argument")
            << outcome[0] << ", " << outcome[2];
}

TEST(Communicator, BroadcastReduceGatherScatter) {
    const int size = 3;
    const size_t n = 5;
    run_ranks(size, [&](Communicator& comm) {
        int r = comm.rank();
        auto in = input<float>(r, n);
        std::vector<float> buf = in;
        comm.broadcast(buf.data(), n, dnn::dtype::Float32, 1);
        EXPECT_EQ(buf, input<float>(1, n));

        std::vector<float> red(n, -1.f);
        comm.reduce(in.data(), red.data(), n, dnn::dtype::Float32, ReduceOp::Sum, 2);
        for (size_t i = 0; i < n; ++i) {
            float expect = 0;
            for (int q = 0; q < size; ++q)
                expect += input<float>(q, n)[i];
            EXPECT_EQ(red[i], r == 2 ? expect : -1.f);
        }

        std::vector<float> all(n * size);
        comm.all_gather(in.data(), all.data(), n, dnn::dtype::Float32);
        std::vector<float> gathered(n * size, 0.f);
        comm.gather(in.data(), gathered.data(), n, dnn::dtype::Float32, 0);
        for (int q = 0; q < size; ++q)
            for (size_t i = 0; i < n; ++i) {
                EXPECT_EQ(all[q * n + i], input<float>(q, n)[i]);
                EXPECT_EQ(gathered[q * n + i], r == 0 ? input<float>(q, n)[i] : 0.f);
            }

        // Root 1 scatters its all-gathered buffer: rank q gets part q, which is q's input.
        std::vector<float> part(n);
        comm.scatter(all.data(), part.data(), n, dnn::dtype::Float32, 1);
        EXPECT_EQ(part, in);
    });
}

TEST(Communicator, BroadcastOutOfPlaceAndInPlaceOnEitherSideOfTheTwoLaneLimit) {
    // Out of place, the root's input reaches every rank's output, the root's included (the root
    // copies it while its messages go out), and no input changes; in place, the buffer. 2 ranks
    // from kTwoLaneBroadcastMinBytes go two lanes (halves through two contexts): just below,
    // at, and an odd byte count above (uneven halves); 3 ranks and 1 rank go the tree.
    const size_t lanes = kTwoLaneBroadcastMinBytes;
    for (int size : {1, 2, 3})
        for (size_t n : {size_t{7}, lanes - 1, lanes, lanes + 3})
            for (int root = 0; root < size; ++root)
                run_ranks(size, [&](Communicator& comm) {
                    const int r = comm.rank();
                    auto in = input<int8_t>(r + 1, n);
                    const auto copy = in;
                    const auto expect = input<int8_t>(root + 1, n);
                    std::vector<int8_t> out(n, -99);
                    comm.broadcast(in.data(), out.data(), n, dnn::dtype::Int8, root);
                    ASSERT_EQ(in, copy) << "rank " << r;
                    ASSERT_TRUE(out == expect)
                            << size << " ranks, " << n << " bytes, root " << root << ", rank " << r;
                    comm.broadcast(in.data(), n, dnn::dtype::Int8, root);
                    ASSERT_TRUE(in == expect) << size << " ranks, " << n << " bytes, root " << root
                                              << ", rank " << r << ", in place";
                });
}

TEST(Communicator, AllToAllTransposesParts) {
    const int size = 3;
    run_ranks(size, [&](Communicator& comm) {
        int r = comm.rank();
        std::vector<int32_t> in(size * 2), out(size * 2);
        for (int q = 0; q < size; ++q) {
            in[q * 2] = r * 100 + q;
            in[q * 2 + 1] = -(r * 100 + q);
        }
        comm.all_to_all(in.data(), out.data(), 2, dnn::dtype::Int32);
        for (int q = 0; q < size; ++q) {
            EXPECT_EQ(out[q * 2], q * 100 + r);
            EXPECT_EQ(out[q * 2 + 1], -(q * 100 + r));
        }
    });
}

TEST(Communicator, SendRecvMatchesTags) {
    run_ranks(2, [](Communicator& comm) {
        std::vector<int16_t> a = {1, 2, 3}, b = {4, 5};
        if (comm.rank() == 0) {
            // A send completes once the peer has posted the matching recv: blocking sends and
            // recvs pair up in the same order on both sides.
            comm.send(a.data(), 3, dnn::dtype::Int16, 1, 7);
            comm.send(b.data(), 2, dnn::dtype::Int16, 1, 8);
        } else {
            std::vector<int16_t> ra(3), rb(2);
            comm.recv(ra.data(), 3, dnn::dtype::Int16, 0, 7);
            comm.recv(rb.data(), 2, dnn::dtype::Int16, 0, 8);
            EXPECT_EQ(ra, a);
            EXPECT_EQ(rb, b);
        }
        comm.barrier();
    });
}

TEST(Communicator, BlockingSendsToEachOtherFirstTimeOut) {
    // What send_recv is for: two ranks that each send to the other before receiving wait for
    // each other's recv, and fail after the timeout.
    run_ranks(
            2,
            [](Communicator& comm) {
                std::vector<float> out(1 << 16, static_cast<float>(comm.rank())), in(out.size());
                int peer = 1 - comm.rank();
                EXPECT_THROW(
                        {
                            comm.send(out.data(), out.size(), dnn::dtype::Float32, peer, 0);
                            comm.recv(in.data(), in.size(), dnn::dtype::Float32, peer, 0);
                        },
                        CommError);
            },
            1s);
}

TEST(Communicator, SendRecvBatchExchangesBothWays) {
    // The same exchange as one batch completes, sends listed before recvs on every rank.
    run_ranks(2, [](Communicator& comm) {
        const size_t n = 1 << 16;
        int peer = 1 - comm.rank();
        auto mine = input<float>(comm.rank(), n), theirs = input<float>(peer, n);
        std::vector<int32_t> small = {comm.rank() * 10, comm.rank() * 10 + 1};
        std::vector<float> got(n);
        std::vector<int32_t> got_small(2);
        using K = PointToPoint::Kind;
        std::vector<PointToPoint> ops = {
                {K::Send, mine.data(), n, dnn::dtype::Float32, peer, 4},
                {K::Send, small.data(), 2, dnn::dtype::Int32, peer, 5},
                {K::Recv, got.data(), n, dnn::dtype::Float32, peer, 4},
                {K::Recv, got_small.data(), 2, dnn::dtype::Int32, peer, 5},
        };
        comm.send_recv(ops);
        EXPECT_EQ(got, theirs);
        EXPECT_EQ(got_small, (std::vector<int32_t>{peer * 10, peer * 10 + 1}));
    });
}

TEST(Communicator, SendRecvBatchShiftsAroundARing) {
    // Four ranks: each sends to the next and receives from the previous, two messages each way
    // matched by tag (listed in opposite orders on the two sides), and an empty one.
    run_ranks(4, [](Communicator& comm) {
        int r = comm.rank(), n = comm.size();
        int next = (r + 1) % n, prev = (r + n - 1) % n;
        auto a = input<int16_t>(r, 7), b = input<int16_t>(r + 10, 3);
        std::vector<int16_t> got_a(7), got_b(3);
        using K = PointToPoint::Kind;
        std::vector<PointToPoint> ops = {
                {K::Recv, got_b.data(), 3, dnn::dtype::Int16, prev, 2},
                {K::Send, a.data(), 7, dnn::dtype::Int16, next, 1},
                {K::Send, nullptr, 0, dnn::dtype::Int16, next, 3},
                {K::Recv, got_a.data(), 7, dnn::dtype::Int16, prev, 1},
                {K::Send, b.data(), 3, dnn::dtype::Int16, next, 2},
                {K::Recv, nullptr, 0, dnn::dtype::Int16, prev, 3},
        };
        comm.send_recv(ops);
        EXPECT_EQ(got_a, input<int16_t>(prev, 7));
        EXPECT_EQ(got_b, input<int16_t>(prev + 10, 3));
        comm.send_recv({});  // an empty batch is a no-op
    });
}

TEST(Communicator, BadRanksAreRejected) {
    MemoryStore store;
    EXPECT_THROW(Communicator(store, "x/", 2, 2, 1s), std::invalid_argument);
    EXPECT_THROW(Communicator(store, "x/", 0, 2, 0ms), std::invalid_argument);
    run_ranks(2, [](Communicator& comm) {
        float x = 0;
        EXPECT_THROW(comm.broadcast(&x, 1, dnn::dtype::Float32, 5), std::invalid_argument);
        EXPECT_THROW(comm.send(&x, 1, dnn::dtype::Float32, comm.rank(), 0), std::invalid_argument);
        using K = PointToPoint::Kind;
        int peer = 1 - comm.rank();
        std::vector<PointToPoint> self = {{K::Send, &x, 1, dnn::dtype::Float32, peer, 0},
                                          {K::Recv, &x, 1, dnn::dtype::Float32, comm.rank(), 0}};
        EXPECT_THROW(comm.send_recv(self), std::invalid_argument);
        std::vector<PointToPoint> outside = {{K::Send, &x, 1, dnn::dtype::Float32, 5, 0}};
        EXPECT_THROW(comm.send_recv(outside), std::invalid_argument);
    });
}

// The message of the exception `f` throws (it must throw an E).
template <class E, class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    ADD_FAILURE() << "no exception";
    return "";
}

TEST(Communicator, MissingPeerTimesOut) {
    MemoryStore store;
    auto start = std::chrono::steady_clock::now();
    auto msg = error_of<StoreTimeout>([&] { Communicator(store, "lonely/", 0, 2, 300ms); });
    EXPECT_NE(msg.find("for rank 1 of the group, which never reached"), std::string::npos) << msg;
    EXPECT_NE(msg.find("0.3 s"), std::string::npos) << msg;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // a hang guard
}

TEST(Communicator, EveryPresentRankNamesTheMissingOnes) {
    // Ranks 0 and 2 of 4 come; each names the two that never arrived.
    MemoryStore store;
    std::vector<std::string> msgs(4);
    std::vector<std::thread> threads;
    for (int r : {0, 2})
        threads.emplace_back([&, r] {
            msgs[r] = error_of<StoreTimeout>([&] { Communicator(store, "half/", r, 4, 500ms); });
        });
    for (auto& t : threads)
        t.join();
    for (int r : {0, 2}) {
        EXPECT_NE(msgs[r].find("rank " + std::to_string(r) + " of 4"), std::string::npos);
        EXPECT_NE(msgs[r].find("for ranks 1, 3 of the group"), std::string::npos) << msgs[r];
    }
}

TEST(Communicator, AwaitRanksReturnsOnceAllArrive) {
    MemoryStore store;
    auto deadline = std::chrono::steady_clock::now() + 10s;
    std::thread late([&] {
        std::this_thread::sleep_for(50ms);
        await_ranks(store, "g/", 1, 2, deadline, 10s);
    });
    await_ranks(store, "g/", 0, 2, deadline, 10s);
    late.join();
    // A group of one has nobody to wait for.
    await_ranks(store, "solo/", 0, 1, std::chrono::steady_clock::now(), 1ms);
}

// Rank 1's store: after its `n`-th write it stops, as a rank that died (`hold` false: it throws,
// and its Gloo device, with the listening sockets whose addresses it published, goes) or hangs
// (`hold` true: it blocks until `release`) in the middle of the rendezvous.
class StoppingStore final : public Store {
public:
    StoppingStore(Store& inner, int n, bool hold) : m_inner(inner), m_n(n), m_hold(hold) {}
    void set(const std::string& key, const std::vector<char>& value) override {
        m_inner.set(key, value);
        if (++m_writes != m_n)
            return;
        if (!m_hold)
            throw std::runtime_error("rank 1 died");
        std::unique_lock lock(m_mutex);
        m_cv.wait(lock, [&] { return m_released; });
        throw std::runtime_error("rank 1 released");
    }
    std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override {
        return m_inner.get(key, timeout);
    }
    void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
        m_inner.wait(keys, timeout);
    }
    void release() {
        std::lock_guard lock(m_mutex);
        m_released = true;
        m_cv.notify_all();
    }

private:
    Store& m_inner;
    int m_n;
    bool m_hold;
    int m_writes = 0;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_released = false;
};

// Rank 0's error when rank 1 stops after its n-th store write (its writes: its arrival, then
// per context "rank_1" and its address "1"; the third is the main context's address).
std::string error_when_peer_stops(int n, bool hold, std::chrono::milliseconds timeout) {
    MemoryStore store;
    StoppingStore stopping(store, n, hold);
    std::string prefix = "stop" + std::to_string(g_prefix++) + "/";
    std::thread peer([&] {
        try {
            Communicator comm(stopping, prefix, 1, 2, 60s);
        } catch (...) {
        }
    });
    std::string msg;
    try {
        Communicator comm(store, prefix, 0, 2, timeout);
        ADD_FAILURE() << "the rendezvous succeeded";
    } catch (const CommError& e) {
        msg = e.what();
    } catch (const StoreTimeout& e) {
        msg = e.what();
    }
    stopping.release();
    peer.join();
    return msg;
}

TEST(Communicator, APeerThatStopsAfterPublishingItsAddressFailsTheRendezvousByTheTimeout) {
    // Gloo's listening side of a pair waited 5x the timeout for a peer that published its
    // address and then never connected; which side a rank takes depends on the ports, so each
    // case runs a few times. Every run must fail naming rank 1, well before 5x the timeout.
    for (bool hold : {true, false})
        for (int n : {3, 5})
            for (int run = 0; run < 2; ++run) {
                SCOPED_TRACE("hold " + std::to_string(hold) + ", write " + std::to_string(n));
                auto start = std::chrono::steady_clock::now();
                auto msg = error_when_peer_stops(n, hold, 1s);
                EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
                EXPECT_NE(msg.find("1 s"), std::string::npos) << msg;
                EXPECT_LT(std::chrono::steady_clock::now() - start, 4s) << msg;  // a hang guard
            }
}

TEST(Communicator, APeerThatStopsBeforePublishingIsNamed) {
    // Arrived (write 1) but gone before its address (write 3): rank 0's store wait names it.
    for (int n : {1, 2}) {
        auto msg = error_when_peer_stops(n, false, 500ms);
        EXPECT_NE(msg.find("rank 1 arrived but did not publish its address"), std::string::npos)
                << msg;
    }
}

TEST(Communicator, DeadPeerFailsTheCollective) {
    // Rank 1 leaves right after the rendezvous: rank 0's all-reduce must fail, not hang.
    MemoryStore store;
    std::exception_ptr error;
    std::thread t1([&] { Communicator comm(store, "dead/", 1, 2, 2s); });
    try {
        Communicator comm(store, "dead/", 0, 2, 2s);
        t1.join();
        float x = 1, y = 0;
        comm.all_reduce(&x, &y, 1, dnn::dtype::Float32, ReduceOp::Sum);
    } catch (...) {
        error = std::current_exception();
    }
    if (t1.joinable())
        t1.join();
    EXPECT_THROW(std::rethrow_exception(error), CommError);
}

TEST(Communicator, SilentPeerTimesOutTheCollective) {
    // Rank 1 stays connected but never joins the all-reduce: rank 0's fails within its
    // timeout instead of waiting forever.
    std::atomic<bool> done{false};
    run_ranks(
            2,
            [&](Communicator& comm) {
                if (comm.rank() == 1) {
                    while (!done)
                        std::this_thread::sleep_for(1ms);
                    return;
                }
                std::vector<float> x(1 << 16, 1.f), y(x.size());
                auto start = std::chrono::steady_clock::now();
                EXPECT_THROW(comm.all_reduce(x.data(), y.data(), x.size(), dnn::dtype::Float32,
                                             ReduceOp::Sum),
                             CommError);
                EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
                done = true;
            },
            1s);
}

TEST(Communicator, AsyncAllReducesRunInIssueOrderBeforeABlockingCall) {
    // Several all-reduces in flight at once, then a blocking broadcast: every result matches
    // the sum of the ranks' inputs, and the broadcast (which waits for them) meets its peers'.
    const int size = 3;
    const size_t n = 4096;
    run_ranks(size, [&](Communicator& comm) {
        std::vector<std::vector<float>> ins, outs;
        std::vector<std::shared_ptr<Work>> works;
        for (int k = 0; k < 4; ++k) {
            ins.push_back(input<float>(comm.rank() + k, n));
            outs.emplace_back(n);
        }
        for (int k = 0; k < 4; ++k)
            works.push_back(comm.all_reduce_async(ins[k].data(), outs[k].data(), n,
                                                  dnn::dtype::Float32, ReduceOp::Sum));
        float b = comm.rank() == 1 ? 42.f : 0.f;
        comm.broadcast(&b, 1, dnn::dtype::Float32, 1);
        EXPECT_EQ(b, 42.f);
        for (int k = 0; k < 4; ++k) {
            EXPECT_TRUE(works[k]->completed());  // the broadcast waited for them
            works[k]->wait();
            for (size_t i = 0; i < n; ++i) {
                float expect = 0;
                for (int r = 0; r < size; ++r)
                    expect += input<float>(r + k, n)[i];
                ASSERT_EQ(outs[k][i], expect) << "all-reduce " << k << " element " << i;
            }
        }
    });
}

TEST(Communicator, AsyncAllReduceRunsWithoutTheCaller) {
    // Each rank polls its work without calling wait() or another collective: it completes
    // because the worker thread runs it while the caller does something else.
    run_ranks(2, [](Communicator& comm) {
        float x = static_cast<float>(comm.rank() + 1), y = 0;
        auto work = comm.all_reduce_async(&x, &y, 1, dnn::dtype::Float32, ReduceOp::Sum);
        auto deadline = std::chrono::steady_clock::now() + 10s;
        while (!work->completed() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(1ms);
        ASSERT_TRUE(work->completed());
        EXPECT_EQ(y, 3.f);
    });
}

TEST(Communicator, AsyncAllReduceWithADeadPeerFailsItsWork) {
    MemoryStore store;
    std::thread t1([&] { Communicator comm(store, "dead_async/", 1, 2, 2s); });
    Communicator comm(store, "dead_async/", 0, 2, 2s);
    t1.join();
    float x = 1, y = 0;
    auto work = comm.all_reduce_async(&x, &y, 1, dnn::dtype::Float32, ReduceOp::Sum);
    EXPECT_THROW(work->wait(), CommError);
}

TEST(Rendezvous, TransportErrorAddressesAreReadAsPrintedAndByteSwapped) {
    // 9092 is 0x2384: Debian's Gloo prints port 0x8423 = 33827 so.
    auto found = rendezvous::addresses_in(
            "[pair.cc:589] Read error [127.0.0.1]:9092: Connection reset by peer");
    EXPECT_EQ(found, (std::vector<std::string>{"127.0.0.1:9092", "127.0.0.1:33827"}));
    found = rendezvous::addresses_in("Connection closed by peer [::1]:256 and [10.0.0.2]:1");
    EXPECT_EQ(found, (std::vector<std::string>{"::1:256", "::1:1", "10.0.0.2:1", "10.0.0.2:256"}));
    // A bracket that is no address: a file name, a port too large, no port.
    EXPECT_TRUE(rendezvous::addresses_in("[./gloo/pair.cc:12] [x]:70000 [y]: [z]").empty());
}

TEST(Rendezvous, OwnSocketAddressesListAListeningSocket) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    std::string expect = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "\n";
    auto listed = rendezvous::own_socket_addresses();
    close(fd);
    EXPECT_NE(std::string(listed.begin(), listed.end()).find(expect), std::string::npos);
    listed = rendezvous::own_socket_addresses();
    EXPECT_EQ(std::string(listed.begin(), listed.end()).find(expect), std::string::npos);
}
