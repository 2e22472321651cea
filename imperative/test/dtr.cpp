// DTR (dtr.h): evicted values come back with the same bits, gradients through them are the same,
// shared storage is never evicted, and nothing is kept outside a recording.
#include <gtest/gtest.h>

#include <cmath>

#include "grad_check.h"
#include "neomeg/imperative/dtr.h"

namespace neomeg::imperative {
namespace {

using namespace grad_check;

// Enables DTR with a threshold of one byte (evict whatever can go) for one test.
struct DtrOn {
    explicit DtrOn(size_t threshold = 1) {
        dtr::set_config({true, threshold, 0, false});
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

}  // namespace
}  // namespace neomeg::imperative
