// GroupNormForward and GroupNormBackward on the x86 handle against naive, at each Highway target
// and at 1, 2 and 3 threads: with and without affine, one element per group, spatial 1 (every
// element a vector tail), runs shorter than a vector, odd sizes, runs over several summation
// blocks, sizes above the threading grain, a mean of 1e3 over a spread of 1 (cancellation), a
// run of 2^20 elements, and outputs of 8.6 MB (non-temporal stores); the outputs the same at 1 and
// 3 threads; strided inputs and other dtypes, which go to naive.
//
// The tolerances follow docs/x86-backend.md ("Accuracy contracts", GroupNorm): y, mean, rstd and
// dx within 1e-5 of max(1, |naive's|), where on data of spread about 1 the float lanes' errors
// stay below 3e-6 at worst (near 1e-7 in practice) while a wrong channel, a lost element or a mean
// off by one term errs by 1e-4 or more at these sizes; dweight and dbias within 2e-6 of the sum of
// their terms' magnitudes (check_backward). The inputs keep that scale: x in [-1, 1] (or 1e3 plus
// [-1, 1]), weight in [0.5, 1.5], and for the backward a mean near x's and rstd in [0.5, 2], so
// that xhat stays within a few units as it does after a forward.
#include "neomeg/dnn/operators/norm.h"
#include "x86/highway_targets.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

constexpr double kEps = 1e-5;

param::GroupNorm gn(bool affine, uint32_t group) {
    param::GroupNorm p;
    p.affine = affine;
    p.group = group;
    return p;
}

struct Case {
    uint32_t group;
    TensorShape shape;
    float offset = 0;  // x in offset + [-1, 1]
};

void check_forward(Handle* handle, bool affine, const Case& k) {
    TensorShape ch{k.shape.shape[1]};
    Checker<GroupNormForward> f(handle);
    f.set_param(gn(affine, k.group)).set_epsilon(kEps);
    f.set_range(0, k.offset - 1, k.offset + 1).set_range(1, 0.5, 1.5).set_range(2, -0.5, 0.5);
    std::vector<TensorShape> in{k.shape};
    if (affine)
        in.insert(in.end(), {ch, ch});
    f.execs(in);
}

// dx within kEps of max(1, |naive's|). dweight and dbias are sums of N * spatial terms each: a
// float sum's error does not shrink with the sum, so they are held to 2e-6 of the sum of their
// terms' magnitudes (the blocks' bound, 24 * 2^-24 = 1.4e-6, rounded up), which still shows a
// lost term (about 0.5 here) wherever a channel sums fewer than 2^18 terms: every case but the
// 2^20 one.
void check_backward(Handle* handle, bool affine, const Case& k, std::mt19937& rng) {
    const TensorShape& s = k.shape;
    const size_t n = s.shape[0], c = s.shape[1], size = s.total_nr_elems() / (n * k.group);
    HostTensor dy(s, dtype::Float32), x(s, dtype::Float32), w({c}, dtype::Float32);
    HostTensor mean({n, k.group}, dtype::Float32), rstd({n, k.group}, dtype::Float32);
    fill_uniform(dy, -1, 1, rng);
    fill_uniform(x, k.offset - 1, k.offset + 1, rng);
    fill_uniform(mean, k.offset - 0.1, k.offset + 0.1, rng);
    fill_uniform(rstd, 0.5, 2, rng);
    fill_uniform(w, 0.5, 1.5, rng);
    std::vector<HostTensor> in{dy, x, mean, rstd};
    if (affine)
        in.push_back(w);
    auto op = handle->create_operator<GroupNormBackward>();
    op->param() = gn(affine, k.group);
    auto got = run_op(*op, in, {});
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<GroupNormBackward>();
    ref->param() = gn(affine, k.group);
    auto want = run_op(*ref, in, {});
    ASSERT_EQ(got.size(), want.size());
    EXPECT_TRUE(tensors_near(got[0], want[0], kEps)) << "dx";
    if (!affine)
        return;
    auto vdy = dy.values(), vx = x.values(), vm = mean.values(), vr = rstd.values();
    std::vector<double> mag_w(c), mag_b(c);
    for (size_t i = 0; i < vx.size(); ++i) {
        size_t run = i / size, ch = i / (size * k.group / c) % c;
        mag_w[ch] += std::abs(vdy[i] * (vx[i] - vm[run]) * vr[run]);
        mag_b[ch] += std::abs(vdy[i]);
    }
    auto gw = got[1].values(), ww = want[1].values(), gb = got[2].values(), wb = want[2].values();
    for (size_t j = 0; j < c; ++j) {
        EXPECT_LE(std::abs(gw[j] - ww[j]), 2e-6 * mag_w[j]) << "dweight " << j;
        EXPECT_LE(std::abs(gb[j] - wb[j]), 2e-6 * mag_b[j]) << "dbias " << j;
    }
}

const std::vector<Case>& cases() {
    static const std::vector<Case> c = {
            {1, {3, 4, 5}},
            {2, {3, 4, 5}},
            {4, {2, 4, 7, 3}},
            {6, {4, 6}},                 // one element per group
            {2, {3, 8}},                 // spatial 1: every channel a scalar tail
            {1, {1, 1, 1}},              // one element in all
            {2, {2, 4, 3}},              // runs of 6, shorter than a vector
            {3, {2, 6, 33}},             // odd spatial with vector tails
            {3, {3, 6, 5, 7}},           // odd channels and spatial
            {1, {2, 2, 3001}},           // runs over several summation blocks and a tail
            {8, {16, 64, 30, 30}},       // above the threading grain
            {2, {2, 4, 9, 7}, 1e3f},     // a large mean over a small spread
            {1, {1, 2, 1 << 19}, 1e3f},  // 2^20 elements in one group
            {3, {2, 6, 180007}}          // 8.6 MB: non-temporal stores, odd channel starts
    };
    return c;
}

// The x86 outputs of `op`'s inputs at 1 and at 3 threads, which must agree bit for bit.
template <class Op>
void same_at_1_and_3_threads(Handle* handle, const param::GroupNorm& p,
                             const std::vector<HostTensor>& inputs) {
    auto run = [&](int threads) {
        ScopedOmpThreads t(threads);
        auto op = handle->create_operator<Op>();
        op->param() = p;
        return run_op(*op, inputs, {});
    };
    auto one = run(1), three = run(3);
    ASSERT_EQ(one.size(), three.size());
    for (size_t i = 0; i < one.size(); ++i)
        EXPECT_TRUE(tensors_near(one[i], three[i], 0)) << "output " << i;
}

}  // namespace

TEST_F(X86, GroupNormMatchesNaiveAtEachTarget) {
#ifdef NEOMEG_WITH_DNNL
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t t) {
                SCOPED_TRACE(testing::Message() << "Highway target " << hwy::TargetName(t));
                for (int threads : {1, 2, 3}) {
                    ScopedOmpThreads omp(threads);
                    std::mt19937 rng(threads);
                    for (bool affine : {false, true})
                        for (const Case& k : cases()) {
                            SCOPED_TRACE(testing::Message()
                                         << threads << " threads, affine " << affine << ", "
                                         << k.shape.to_string() << " in " << k.group);
                            check_forward(handle.get(), affine, k);
                            check_backward(handle.get(), affine, k, rng);
                        }
                }
            });
    EXPECT_GE(ran, 1u);
#endif
    HostTensor x({2, 4, 3}, dtype::Float32), w({4}, dtype::Float32), bias({4}, dtype::Float32);
    EXPECT_EQ(run_and_compare<GroupNormForward>(*handle, gn(true, 2), {x, w, bias}, {}, kEps),
              "loop");
}

TEST_F(X86, GroupNormSameAtEachThreadCount) {
#ifdef NEOMEG_WITH_DNNL
    // 48 runs of 1800 split unevenly over 3 threads; dweight/dbias sum 6 samples per channel.
    HostTensor x({6, 32, 30, 60}, dtype::Float32), dy({6, 32, 30, 60}, dtype::Float32);
    HostTensor w({32}, dtype::Float32), bias({32}, dtype::Float32);
    HostTensor mean({6, 8}, dtype::Float32), rstd({6, 8}, dtype::Float32);
    std::mt19937 rng(7);
    fill_uniform(x, -1, 1, rng);
    fill_uniform(dy, -1, 1, rng);
    fill_uniform(w, 0.5, 1.5, rng);
    fill_uniform(bias, -0.5, 0.5, rng);
    fill_uniform(mean, -0.1, 0.1, rng);
    fill_uniform(rstd, 0.5, 2, rng);
    same_at_1_and_3_threads<GroupNormForward>(handle.get(), gn(true, 8), {x, w, bias});
    same_at_1_and_3_threads<GroupNormBackward>(handle.get(), gn(true, 8), {dy, x, mean, rstd, w});
#endif
}

TEST_F(X86, GroupNormStridedAndOtherDtypesRunNaive) {
    Checker<GroupNormForward> c(handle.get());
    c.set_param(gn(true, 2)).set_noncontiguous(true).execs({{3, 4, 5}, {4}, {4}});
    Checker<GroupNormBackward> b(handle.get());
    b.set_param(gn(true, 2)).set_range(3, 0.5, 2).set_noncontiguous(true);
    b.execs({{3, 4, 5}, {3, 4, 5}, {3, 2}, {3, 2}, {4}});
    Checker<GroupNormForward> h(handle.get());
    h.set_param(gn(true, 3)).set_dtype(0, dtype::Float16).set_dtype(1, dtype::Float16);
    h.set_dtype(2, dtype::Float16).execs({{2, 6, 5}, {6}, {6}});
    HostTensor x({2, 4, 3}, dtype::Float16);
    EXPECT_EQ(run_and_compare<GroupNormForward>(*handle, gn(false, 2), {x}, {}, 1e-2), "naive");
}
