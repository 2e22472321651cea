// DTR (dtr.h): evicted values come back with the same bits, gradients through them are the same,
// shared storage is never evicted, nothing is kept outside a recording, and by default what is
// evicted follows from the program alone, not from how long its ops took.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "grad_check.h"
#include "neomeg/imperative/dtr.h"
#include "neomeg/op/defs/reduce.h"

namespace neomeg::imperative {
namespace {

using namespace grad_check;

// Enables DTR with a threshold of one byte (evict whatever can go) for one test.
struct DtrOn {
    explicit DtrOn(size_t threshold = 1, dtr::Cost cost = dtr::Cost::Estimate) {
        dtr::set_config({true, threshold, 0, false, cost});
        dtr::reset_stats();
    }
    ~DtrOn() {
        dtr::set_config({});
        dtr::clear_candidates();
    }
};

std::vector<float> ramp(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = std::sin(0.37f * static_cast<float>(i));
    return v;
}

// tanh applied `depth` times under a recording key; returns every activation and dL/dx of
// L = sum(last).
struct Chain {
    std::vector<Tensor> acts;
    Tensor grad;
};

Chain run_chain(int depth) {
    Tensor x = make(ramp(4096), {64, 64});
    auto key = GradKey::make();
    key->attach(x);
    key->activate();
    Chain c;
    Tensor h = x;
    for (int i = 0; i < depth; ++i)
        c.acts.push_back(h = ew(Mode::TANH, {h}));
    key->deactivate();
    Tensor one = make(std::vector<float>(4096, 1.f), {64, 64});
    c.grad = key->backward({&h, 1}, {&one, 1}, {&x, 1})[0];
    return c;
}

TEST(Dtr, EvictedActivationsAndGradientsKeepTheirBits) {
    Chain plain = run_chain(6);
    Chain with;
    {
        DtrOn on;
        with = run_chain(6);
        auto s = dtr::stats();
        EXPECT_GT(s.evictions, 0u);
        EXPECT_GT(s.recomputations, 0u);  // backward read evicted activations
    }
    EXPECT_EQ(values(with.grad), values(plain.grad));
    for (size_t i = 0; i < plain.acts.size(); ++i)
        EXPECT_EQ(values(with.acts[i]), values(plain.acts[i])) << "activation " << i;
}

TEST(Dtr, SharedStorageIsNeverEvicted) {
    DtrOn on;
    Tensor x = make(ramp(4096), {64, 64});
    auto key = GradKey::make();
    key->attach(x);
    key->activate();
    Tensor a = ew(Mode::EXP, {x});
    Tensor view = a.view(dnn::TensorLayout({4096}, dnn::dtype::Float32));  // shares a's storage
    auto before = values(view);
    for (int i = 0; i < 4; ++i)
        ew(Mode::TANH, {x});  // more applies: more chances to evict
    key->deactivate();
    EXPECT_GT(dtr::stats().evictions, 0u);  // the tanh outputs the tape keeps went
    EXPECT_EQ(values(view), before);
    EXPECT_EQ(values(a), before);
    EXPECT_EQ(dtr::stats().recomputations, 0u);  // a never did: reading it ran nothing
}

TEST(Dtr, NothingIsRecordedOutsideARecording) {
    DtrOn on;
    Tensor x = make(ramp(4096), {64, 64});
    Tensor y = ew(Mode::EXP, {ew(Mode::EXP, {x})});
    auto s = dtr::stats();
    EXPECT_EQ(s.evictions, 0u);
    EXPECT_EQ(s.candidates, 0u);
    EXPECT_FLOAT_EQ(values(y)[0], std::exp(std::exp(0.f)));
}

TEST(Dtr, AValueOnlyRecomputationNeedsIsReleasedAndComesBack) {
    DtrOn on(0);  // no threshold: only the release path frees memory
    Tensor x = make(ramp(4096), {64, 64});
    auto key = GradKey::make();
    key->attach(x);
    key->activate();
    Tensor a = ew(Mode::EXP, {x});
    Tensor b = ew(Mode::TANH, {a});
    key->deactivate();
    key->release();  // the tape's saved copies of a go
    auto want = values(b);
    a = Tensor();  // b's history still names a: its memory is freed now
    EXPECT_EQ(dtr::stats().released, 1u);
    EXPECT_EQ(values(b), want);
}

TEST(Dtr, TheDefaultCostIsTheBytesTheOpMoved) {
    EXPECT_EQ(dtr::Config{}.cost, dtr::Cost::Estimate);
    DtrOn on(0);  // nothing evicted while the two candidates are made
    Tensor big = make(ramp(64 * 64 * 64), {64, 64, 64});
    Tensor x = make(ramp(4096), {64, 64});
    Tensor small = make({0.5f}, {1});
    auto key = GradKey::make();
    key->attach(big);
    key->attach(x);
    key->activate();
    dnn::param::Reduce sum;
    sum.mode = dnn::param::Reduce::Mode::SUM;
    sum.axis = 2;
    // Two 16 KiB values: `reduced` read 1 MiB and is the staler, `cheap` read 16 KiB. Counting
    // the output alone, or time since use, would evict `reduced`.
    Tensor reduced = run<ops::Reduce>(sum, {big})[0];
    Tensor cheap = ew(Mode::TANH, {x});
    auto want_reduced = values(reduced), want_cheap = values(cheap);
    // A threshold just below what the next op's 512-byte output brings: one eviction.
    dtr::set_config({true, cpu().memory_stats().allocated + 256, 0, false});
    ew(Mode::NEGATE, {small});
    key->deactivate();
    EXPECT_EQ(dtr::stats().evictions, 1u);
    EXPECT_EQ(values(reduced), want_reduced);
    EXPECT_EQ(dtr::stats().recomputations, 0u);  // `reduced` stayed
    EXPECT_EQ(values(cheap), want_cheap);
    EXPECT_EQ(dtr::stats().recomputations, 1u);  // `cheap` went
}

// Which of a chain's activations are in memory after it ran, as DTR left them (probing each one
// recomputes it if it was evicted; the probes run in the same order every time).
std::vector<bool> resident_after_chain(dtr::Cost cost) {
    Tensor x = make(ramp(4096), {64, 64});
    size_t base = cpu().memory_stats().allocated;
    DtrOn on(base + 6 * 16384, cost);
    auto key = GradKey::make();
    key->attach(x);
    key->activate();
    std::vector<Tensor> acts;
    Tensor h = x;
    for (int i = 0; i < 16; ++i)  // elementwise ops of two costs: one input or two
        acts.push_back(h = i % 2 ? ew(Mode::ADD, {h, x}) : ew(Mode::TANH, {h}));
    key->deactivate();
    EXPECT_GT(dtr::stats().evictions, 0u);
    std::vector<bool> resident;
    for (const Tensor& a : acts) {
        size_t before = dtr::stats().recomputations;
        values(a);
        resident.push_back(dtr::stats().recomputations == before);
    }
    return resident;
}

TEST(Dtr, WhatIsEvictedDoesNotDependOnTheMachinesLoad) {
    auto quiet = resident_after_chain(dtr::Cost::Estimate);
    // Threads that compete for the cores stretch the ops' times unevenly; the estimate ignores it.
    std::atomic<bool> stop{false};
    std::vector<std::thread> hogs;
    for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i)
        hogs.emplace_back([&stop] {
            while (!stop.load(std::memory_order_relaxed)) {
            }
        });
    for (int run = 0; run < 5; ++run)
        EXPECT_EQ(resident_after_chain(dtr::Cost::Estimate), quiet) << "run " << run;
    stop = true;
    for (auto& t : hogs)
        t.join();
}

TEST(Dtr, TheMeasuredCostGivesTheSameBits) {
    Chain plain = run_chain(6);
    Chain with;
    {
        DtrOn on(1, dtr::Cost::Measured);
        with = run_chain(6);
        EXPECT_GT(dtr::stats().recomputations, 0u);
    }
    EXPECT_EQ(values(with.grad), values(plain.grad));
}

}  // namespace
}  // namespace neomeg::imperative
