// The convolutions' weight cache (src/x86/weight_cache.h) against naive: a filter whose storage
// and version stay the same is reordered once and then served from the cache (counted, not
// timed); a filter written in place and marked so (a new version), or a new storage at the freed
// one's address, gives the new result (ConvBiasBlocked's filter too); untagged tensors, a budget of
// 0 and a filter too large for the budget are never cached; entries go with their storage. (Built
// with oneDNN only: the cache is part of the x86 backend.)
#ifdef NEOMEG_WITH_DNNL
#include <optional>

#include "naive/convolution.h"
#include "neomeg/dnn/channel_blocked_rules.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/weight_cache.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using x86::WeightCache;

// A host tensor with a storage identity, as the runtime's blobs give them.
struct Tagged {
    HostTensor t;
    std::optional<StorageId> id{std::in_place};
    TensorND nd() const { return {t.nd().raw_ptr(), t.layout(), id ? &*id : nullptr}; }
};

// Empties the cache and zeroes its counters for one test, with a budget the tests' filters fit;
// puts the default budget back after.
class FreshCache {
public:
    FreshCache() {
        WeightCache::instance().clear();
        WeightCache::instance().set_budget(size_t{64} << 20);
    }
    ~FreshCache() { WeightCache::instance().set_budget(size_t{256} << 20); }
};

WeightCache::Stats stats() {
    return WeightCache::instance().stats();
}

// Runs `op` on tagged inputs and checks its output against naive on the same values.
template <class Op>
void run_checked(Op& op, const std::vector<const Tagged*>& in, const TensorShape& out_shape) {
    std::vector<TensorND> nds;
    std::vector<TensorLayout> layouts;
    std::vector<HostTensor> values;
    for (const Tagged* t : in) {
        nds.push_back(t->nd());
        layouts.push_back(t->t.layout());
        values.push_back(t->t);
    }
    HostTensor out(out_shape, dtype::Float32);
    std::vector<TensorLayout> out_layouts{out.layout()};
    std::vector<std::byte> ws(op.get_workspace_in_bytes(layouts, out_layouts) + 64);
    auto* aligned = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
    std::vector<TensorND> outs{out.nd()};
    op.exec(nds, outs, {aligned, ws.size() - 64});
    EXPECT_TRUE(ran_onednn(op)) << last_kernel(op);
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<Op>();
    ref->param() = op.param();
    auto want = run_op(*ref, values, {out_shape});
    EXPECT_TRUE(tensors_near(out, want[0], 1e-4)) << op.param_str();
}

const TensorShape kSrc{2, 16, 9, 9}, kFilter{32, 16, 3, 3}, kDst{2, 32, 9, 9};

Tagged random_tagged(const TensorShape& s, std::mt19937& rng) {
    return {random_tensor(s, rng)};
}

}  // namespace

TEST_F(X86, WeightCacheSameFilterIsReorderedOnceThenHits) {
    FreshCache fresh;
    std::mt19937 rng(1);
    Tagged x = random_tagged(kSrc, rng), w = random_tagged(kFilter, rng);
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = conv_param({1, 1}, {1, 1}, {1, 1});
    run_checked(*op, {&x, &w}, kDst);  // seen once: remembered, reordered into the workspace
    EXPECT_EQ(stats().hits, 0u);
    EXPECT_EQ(stats().fills, 0u);
    run_checked(*op, {&x, &w}, kDst);  // seen twice: reordered into a new entry
    EXPECT_EQ(stats().fills, 1u);
    EXPECT_EQ(stats().entries, 1u);
    EXPECT_GT(stats().bytes, 0u);
    for (int i = 0; i < 3; ++i)
        run_checked(*op, {&x, &w}, kDst);
    EXPECT_EQ(stats().hits, 3u);
    EXPECT_EQ(stats().fills, 1u);
}

TEST_F(X86, WeightCacheFilterWrittenInPlaceGivesTheNewResult) {
    FreshCache fresh;
    std::mt19937 rng(2);
    Tagged x = random_tagged(kSrc, rng), w = random_tagged(kFilter, rng);
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = conv_param({1, 1}, {1, 1}, {1, 1});
    for (int i = 0; i < 3; ++i)
        run_checked(*op, {&x, &w}, kDst);
    ASSERT_EQ(stats().hits, 1u);
    // An optimiser step in place: same address, same storage, new values, a new version.
    fill_uniform(w.t, -1, 1, rng);
    w.id->note_write();
    run_checked(*op, {&x, &w}, kDst);
    EXPECT_EQ(stats().hits, 1u);
    EXPECT_EQ(stats().entries, 0u);  // the old version's entry can never hit again: dropped
    run_checked(*op, {&x, &w}, kDst);
    run_checked(*op, {&x, &w}, kDst);
    EXPECT_EQ(stats().hits, 2u);
}

TEST_F(X86, WeightCacheNewStorageAtTheFreedAddressGivesTheNewResult) {
    FreshCache fresh;
    std::mt19937 rng(3);
    Tagged x = random_tagged(kSrc, rng), w = random_tagged(kFilter, rng);
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = conv_param({1, 1}, {1, 1}, {1, 1});
    for (int i = 0; i < 3; ++i)
        run_checked(*op, {&x, &w}, kDst);
    ASSERT_EQ(stats().entries, 1u);
    // The storage is freed and the allocator hands its address to a new tensor.
    w.id.reset();
    EXPECT_EQ(stats().entries, 0u);  // released with its storage
    w.id.emplace();
    fill_uniform(w.t, -1, 1, rng);
    run_checked(*op, {&x, &w}, kDst);
    run_checked(*op, {&x, &w}, kDst);
    run_checked(*op, {&x, &w}, kDst);
    EXPECT_EQ(stats().hits, 2u);
}

TEST_F(X86, WeightCacheFlippedGroupedAndBackwardDataAreCached) {
    FreshCache fresh;
    std::mt19937 rng(4);
    // CONVOLUTION mode (the filter reversed in its staging copy), two groups.
    param::Convolution p = conv_param({1, 1}, {1, 1}, {1, 1}, 2, true);
    TensorShape filter{32, 8, 3, 3};
    Tagged x = random_tagged(kSrc, rng), w = random_tagged(filter, rng),
           dy = random_tagged(kDst, rng);
    auto fwd = handle->create_operator<ConvolutionForward>();
    fwd->param() = p;
    auto data = handle->create_operator<ConvolutionBackwardData>();
    data->param() = p;
    for (int i = 0; i < 3; ++i) {
        run_checked(*fwd, {&x, &w}, kDst);
        run_checked(*data, {&w, &dy}, kSrc);
    }
    // The CPU decides how many entries: one per filter layout the primitives reorder into (two,
    // one when both chose the same layout or one runs on the plain filter, as oneDNN's gemm
    // backward-data under an SSE4.1 cap). Each is filled on the second round and hit after.
    const auto cached = stats();
    if (cached.entries == 0)
        GTEST_SKIP() << "neither primitive reorders this filter on this CPU: nothing to cache";
    EXPECT_GE(cached.hits, cached.entries);
    fill_uniform(w.t, -1, 1, rng);
    w.id->note_write();
    run_checked(*fwd, {&x, &w}, kDst);
    run_checked(*data, {&w, &dy}, kSrc);

    EXPECT_EQ(stats().hits, cached.hits);  // the written value is never served from the old one
}

TEST_F(X86, WeightCacheConvBiasIsCached) {
    FreshCache fresh;
    std::mt19937 rng(5);
    Tagged x = random_tagged(kSrc, rng), w = random_tagged(kFilter, rng),
           bias = random_tagged({1, 32, 1, 1}, rng), z = random_tagged(kDst, rng),
           none{HostTensor(TensorShape{}, dtype::Float32)};
    auto cb = handle->create_operator<ConvBias>();
    cb->param().padding = {1, 1};
    cb->param().nonlineMode = param::ConvBias::NonlineMode::RELU;
    for (int i = 0; i < 3; ++i)
        run_checked(*cb, {&x, &w, &bias, &none}, kDst);
    EXPECT_EQ(stats().fills, 1u);
    EXPECT_EQ(stats().hits, 1u);
    // With a residual: another plan, whose filter layout may be the first one's (then all hit).
    for (int i = 0; i < 3; ++i)
        run_checked(*cb, {&x, &w, &bias, &z}, kDst);
    EXPECT_GE(stats().hits, 2u);
}

// ConvBiasBlocked (eager mode's convolution on blocked activations) without filter_is_const: a
// tagged filter is reordered once and then hits, a write into it (a new version) gives the new
// result, an untagged one is reordered on every call (no cache traffic), and filter_is_const
// keeps its own once-per-address conversion outside the cache.
TEST_F(X86, WeightCacheConvBiasBlockedIsCached) {
    FreshCache fresh;
    std::mt19937 rng(7);
    const size_t blk = handle->preferred_channel_block();
    ASSERT_NE(blk, 0u);
    using channel_blocked::blocked_shape;
    Tagged x = random_tagged(blocked_shape(kSrc, blk), rng), w = random_tagged(kFilter, rng),
           none{HostTensor(TensorShape{}, dtype::Float32)};
    const TensorShape dst = blocked_shape(kDst, blk);
    for (bool flip : {false, true}) {
        WeightCache::instance().clear();
        param::Convolution conv = conv_param({1, 1}, {1, 1}, {1, 1});
        if (flip)
            conv.mode = param::Convolution::Mode::CONVOLUTION;
        auto op = handle->create_operator<ConvBiasBlocked>();
        op->param() = channel_blocked::conv_bias_blocked_param(conv, blk, false);
        for (int i = 0; i < 3; ++i)
            run_checked(*op, {&x, &w, &none, &none}, dst);
        EXPECT_EQ(stats().fills, 1u);
        EXPECT_EQ(stats().hits, 1u);
        fill_uniform(w.t, -1, 1, rng);  // an optimiser step in place
        w.id->note_write();
        for (int i = 0; i < 3; ++i)
            run_checked(*op, {&x, &w, &none, &none}, dst);
        EXPECT_EQ(stats().fills, 2u);
        EXPECT_EQ(stats().hits, 2u);
        Tagged untagged{w.t};
        untagged.id.reset();
        for (int i = 0; i < 2; ++i)
            run_checked(*op, {&x, &untagged, &none, &none}, dst);
        auto constant = handle->create_operator<ConvBiasBlocked>();
        constant->param() = channel_blocked::conv_bias_blocked_param(conv, blk, true);
        for (int i = 0; i < 3; ++i)
            run_checked(*constant, {&x, &w, &none, &none}, dst);
        EXPECT_EQ(stats().fills, 2u);
        EXPECT_EQ(stats().hits, 2u);
    }
}

TEST_F(X86, WeightCacheUntaggedOffOrOverBudgetIsNeverCached) {
    FreshCache fresh;
    std::mt19937 rng(6);
    Tagged x = random_tagged(kSrc, rng), w = random_tagged(kFilter, rng);
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = conv_param({1, 1}, {1, 1}, {1, 1});
    Tagged untagged{w.t};
    untagged.id.reset();
    for (int i = 0; i < 3; ++i)
        run_checked(*op, {&x, &untagged}, kDst);
    EXPECT_EQ(stats().misses + stats().hits + stats().fills, 0u);
    WeightCache::instance().set_budget(0);
    for (int i = 0; i < 3; ++i)
        run_checked(*op, {&x, &w}, kDst);
    EXPECT_EQ(stats().hits + stats().fills, 0u);
    WeightCache::instance().set_budget(kFilter.total_nr_elems());  // a quarter of the filter
    for (int i = 0; i < 3; ++i)
        run_checked(*op, {&x, &w}, kDst);
    EXPECT_EQ(stats().hits + stats().fills, 0u);
    EXPECT_EQ(stats().bytes, 0u);
}

TEST_F(X86, WeightCacheLeastRecentlyUsedGoesFirst) {
    FreshCache fresh;
    std::mt19937 rng(7);
    Tagged x = random_tagged(kSrc, rng), a = random_tagged(kFilter, rng),
           b = random_tagged(kFilter, rng);
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = conv_param({1, 1}, {1, 1}, {1, 1});
    for (int i = 0; i < 2; ++i)
        run_checked(*op, {&x, &a}, kDst);
    size_t one = stats().bytes;
    ASSERT_GT(one, 0u);
    WeightCache::instance().set_budget(one);  // room for one filter
    for (int i = 0; i < 2; ++i)
        run_checked(*op, {&x, &b}, kDst);  // b's entry pushes a's out
    EXPECT_EQ(stats().entries, 1u);
    EXPECT_GE(stats().evictions, 1u);
    uint64_t hits = stats().hits;
    run_checked(*op, {&x, &b}, kDst);
    EXPECT_EQ(stats().hits, hits + 1);
    run_checked(*op, {&x, &a}, kDst);  // a was evicted: a miss, and a correct result
    EXPECT_EQ(stats().hits, hits + 1);
}
#endif  // NEOMEG_WITH_DNNL
