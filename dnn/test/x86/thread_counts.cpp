// The x86 kernels that split their work across OpenMP threads, each run at 1, 2 and 3 threads
// (omp_threads.h) on the same inputs, sized past three threads' grain (parallel.h: 2^16 units of
// work a thread) so that each count splits them differently.
//
// Exact (the same bits at any thread count): kernels whose split leaves each output element's
// arithmetic to one thread, in an order that does not depend on the split: Reduce over rows or
// columns (each row's or column block's sum on one thread), Softmax and LogSoftmax (a row or a
// block of columns a thread), BatchNorm (a channel's passes on one thread, in double), our MAX
// pooling loops (forward, and the backward of windows that tile the plane), Remap and
// WarpPerspective (the gradients naive's bits, the forward a float32 formula per point), TopK (a
// line a thread; unique keys), Cumsum (a row a thread) and Elemwise with broadcast operands (one
// element's formula). Where they sum, their inputs carry pairs of +-2^44 spikes (values()), so a
// split that changed the order of a sum changes the bits (Softmax's float32 sums of uniform
// values show their order as they are).
//
// Within a tolerance: Reduce of rows too long for one thread (fewer rows than threads: chunks,
// one a thread, whose partial sums combine), Dot (a partial sum a thread), the LSTM (its batch's
// rows split across threads, one sgemm of a thread's rows a step, and products over all rows
// threaded inside oneDNN: on Zen 4 the forward gave the same bits at 1, 2 and 3 threads and the
// backward's dbias did not, but sgemm's order is oneDNN's choice per CPU), and oneDNN's kernels,
// which promise no order (convolution forward and filter gradient, AVERAGE pooling, MAX pooling's
// backward with overlapping windows).
//
// Each run must be the x86 kernel's (not naive's), and the one-thread run is held to naive within
// a tolerance where naive sums in the kernel's order or the inputs have no spikes: the bits of
// every kernel against naive are their own suites' business.
#include <cmath>
#include <cstring>
#include <functional>

#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/operators/linalg.h"
#include "neomeg/dnn/operators/norm.h"
#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/reduce.h"
#include "neomeg/dnn/operators/rnn.h"
#include "neomeg/dnn/operators/vision.h"
#include "x86/omp_threads.h"
#include "x86/vision_loops.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// One kernel's run on some inputs: its outputs and the kernel that ran.
struct Case {
    std::string name;
    bool exact;     // the same bits at every thread count
    double eps;     // against the one-thread run where not exact, and against naive
    bool vs_naive;  // the one-thread run held to naive (not where naive's order of a sum differs
                    // and the spikes make the order show)
    std::function<std::pair<std::vector<HostTensor>, std::string>(Handle&)> run;
    std::function<std::vector<HostTensor>()> naive;
};

template <class Op>
Case make_case(std::string name, bool exact, double eps, const typename Op::Param& p,
               std::vector<HostTensor> in, std::vector<TensorShape> out = {},
               bool vs_naive = true) {
    Case c{std::move(name), exact, eps, vs_naive, nullptr, nullptr};
    c.run = [p, in, out](Handle& h) {
        auto op = h.create_operator<Op>();
        op->param() = p;
        auto got = run_op(*op, in, out);
        return std::pair{std::move(got), last_kernel(*op)};
    };
    c.naive = [p, in, out] {
        auto op = Handle::make_naive()->create_operator<Op>();
        op->param() = p;
        std::vector<HostTensor> dense;
        for (auto& t : in)
            dense.push_back(t.contiguous());
        return run_op(*op, dense, out);
    };
    return c;
}

// Spikes +2^44 at the flat positions i % period == 0 and -2^44 at i % period == period / 2, among
// uniform values in [lo, hi) (none where period is 0). A sum that passes a spike keeps the terms
// after it to 2^-8 (double) or not at all (float32) until its pair takes it back, and the result,
// small again where the pairs are whole (rows of a multiple of the period), shows where the sum
// was split or how its terms were grouped.
constexpr size_t kSpikes = 64;

HostTensor values(const TensorShape& s, std::mt19937& rng, size_t period, double lo = -1,
                  double hi = 1) {
    HostTensor t = make_tensor(s, false, rng, {}, lo, hi);
    if (!period)
        return t;
    auto v = t.values();
    for (size_t i = 0; i < v.size(); ++i)
        if (i % period == 0 || i % period == period / 2)
            v[i] = (i % period ? -1 : 1) * 0x1p44;
    t.set_values(v);
    return t;
}

// A channel's statistics: src's mean and a positive inverse standard deviation.
HostTensor positive(const TensorShape& s, std::mt19937& rng) {
    return values(s, rng, 0, 0.5, 2);
}

param::Reduce reduce(param::Reduce::Mode m, int32_t axis) {
    param::Reduce p;
    p.mode = m;
    p.axis = axis;
    return p;
}

param::Pooling pooling(param::Pooling::Mode m, int32_t window, int32_t stride, int32_t pad) {
    param::Pooling p;
    p.mode = m;
    p.window = {window, window};
    p.stride = {stride, stride};
    p.padding = {pad, pad};
    return p;
}

param::Elemwise elemwise(param::Elemwise::Mode m) {
    param::Elemwise p;
    p.mode = m;
    return p;
}

// MAX pooling's forward and backward on src, and the same for the other pooling cases.
void add_pooling(std::vector<Case>& cases, const std::string& name, bool exact_fwd, bool exact_bwd,
                 const param::Pooling& p, const TensorShape& src, std::mt19937& rng) {
    HostTensor x = values(src, rng, 0);
    auto naive = Handle::make_naive()->create_operator<PoolingForward>();
    naive->param() = p;
    HostTensor y = run_op(*naive, {x})[0];
    HostTensor dy = values(y.shape(), rng, exact_bwd ? kSpikes : 0);
    cases.push_back(make_case<PoolingForward>(name + "_fwd", exact_fwd, 1e-6, p, {x}));
    cases.push_back(make_case<PoolingBackward>(name + "_bwd", exact_bwd, 1e-5, p, {x, y, dy}));
}

std::vector<Case> make_cases() {
    using RM = param::Reduce::Mode;
    using PM = param::Pooling::Mode;
    using EM = param::Elemwise::Mode;
    std::mt19937 rng(61);
    std::vector<Case> cases;

    // Reduce: 48 rows of 8192, each row's sum on one thread; columns of a (6, 1000, 96) view in
    // blocks; four rows of 300000 (as many rows as threads or more: still by rows); one row of
    // 300000, chunks a thread from two threads on.
    cases.push_back(make_case<Reduce>("reduce_rows", true, 1e-5, reduce(RM::SUM, 1),
                                      {values({48, 8192}, rng, kSpikes)}, {}, false));
    cases.push_back(make_case<Reduce>("reduce_columns", true, 1e-5, reduce(RM::SUM, 1),
                                      {values({6, 1000, 96}, rng, 96 * kSpikes)}, {}, false));
    cases.push_back(make_case<Reduce>("reduce_long_rows", true, 1e-5, reduce(RM::MEAN, 1),
                                      {values({4, 299968}, rng, kSpikes)}, {}, false));
    cases.push_back(make_case<Reduce>("reduce_one_long_row", false, 1e-5, reduce(RM::SUM, 0),
                                      {values({300000}, rng, 0)}));
    cases.push_back(make_case<Dot>("dot", false, 1e-5, {},
                                   {values({300000}, rng, 0), values({300000}, rng, 0)}));

    // LSTM: the recurrence splits the batch's rows across threads (16 rows: 16, 8 + 8, 6 + 6 + 4).
    {
        const double w = 1 / std::sqrt(128.0);
        param::LSTM p;
        std::vector<HostTensor> in = {
                values({35, 16, 64}, rng, 0, -1, 1), values({16, 128}, rng, 0, -1, 1),
                values({16, 128}, rng, 0, -1, 1),    values({512, 64}, rng, 0, -w, w),
                values({512, 128}, rng, 0, -w, w),   values({512}, rng, 0, -w, w)};
        cases.push_back(make_case<LSTMForward>("lstm_forward", false, 1e-5, p, in));
        cases.push_back(make_case<LSTMBackward>(
                "lstm_backward", false, 1e-4, p,
                {in[0], in[3], in[4], values({35, 16, 7 * 128}, rng, 0, 0, 1),
                 values({35, 16, 128}, rng, 0, -1, 1), values({16, 128}, rng, 0, -1, 1),
                 values({16, 128}, rng, 0, -1, 1)}));
    }

    // Softmax along rows and along a middle axis (blocks of columns), its backward, log-softmax.
    param::Softmax rows, cols;
    cols.axis = 1;
    cases.push_back(make_case<SoftmaxForward>("softmax_rows", true, 1e-5, rows,
                                              {values({256, 1000}, rng, 0, -8, 8)}));
    cases.push_back(make_case<SoftmaxForward>("softmax_columns", true, 1e-5, cols,
                                              {values({4, 300, 200}, rng, 0, -8, 8)}));
    cases.push_back(make_case<LogSoftmaxForward>("log_softmax_rows", true, 1e-5, rows,
                                                 {values({256, 1000}, rng, 0, -8, 8)}));
    cases.push_back(make_case<SoftmaxBackward>(
            "softmax_backward_rows", true, 1e-5, rows,
            {values({256, 1000}, rng, 0, 0, 0.01), values({256, 1000}, rng, 0)}));

    // BatchNorm in training, forward and backward: 24 channels of 8 x 40 x 40.
    {
        const TensorShape s{8, 24, 40, 40}, pc{1, 24, 1, 1};
        param::BatchNorm p;
        cases.push_back(make_case<BatchNormForward>(
                "batch_norm_fwd", true, 1e-4, p,
                {values(s, rng, kSpikes), values(pc, rng, 0), values(pc, rng, 0),
                 values(pc, rng, 0), positive(pc, rng)},
                {}, false));
        cases.push_back(make_case<BatchNormBackward>(
                "batch_norm_bwd", true, 1e-4, p,
                {values(s, rng, kSpikes), values(s, rng, kSpikes), values(pc, rng, 0),
                 values(pc, rng, 0), positive(pc, rng)},
                {}, false));
    }

    // Pooling: our MAX loops (forward, the tiling 2x2 backward), oneDNN's AVERAGE and MAX
    // backward with overlapping windows.
    add_pooling(cases, "max_pool_2x2", true, true, pooling(PM::MAX, 2, 2, 0), {8, 32, 40, 40}, rng);
    add_pooling(cases, "max_pool_3x3s2", true, false, pooling(PM::MAX, 3, 2, 1), {8, 32, 40, 40},
                rng);
    add_pooling(cases, "average_pool_3x3s2", false, false, pooling(PM::AVERAGE, 3, 2, 1),
                {8, 32, 40, 40}, rng);

    // Remap: three images (each image's loops split at two threads, whole images at three) and
    // four (whole images at two threads).
    for (size_t batch : {3, 4}) {
        param::Remap p;
        p.border_type = param::Remap::BorderMode::REFLECT;
        const TensorShape src{batch, 16, 24, 20}, ms{batch, 40, 40, 2}, dst{batch, 16, 40, 40};
        HostTensor x = values(src, rng, 0);
        HostTensor m = values(ms, rng, 0, -3, 25);
        HostTensor dy = values(dst, rng, kSpikes);
        const std::string b = "_b" + std::to_string(batch);
        cases.push_back(make_case<Remap>("remap_fwd" + b, true, 1e-5, p, {x, m}));
        cases.push_back(
                make_case<RemapBackwardData>("remap_bwd_data" + b, true, 1e-5, p, {m, dy}, {src}));
        cases.push_back(
                make_case<RemapBackwardMat>("remap_bwd_mat" + b, true, 1e-5, p, {x, m, dy}));
    }

    // WarpPerspective: three outputs (two of image 1), 40 x 40 each.
    {
        param::WarpPerspective p;
        p.bmode = param::WarpPerspective::BorderMode::CONSTANT;
        p.border_val = 0.25f;
        p.out_h = p.out_w = 40;
        const TensorShape src{2, 16, 24, 20};
        HostTensor x = values(src, rng, 0);
        HostTensor mat =
                HostTensor::from({3, 3, 3}, {0.5, 0.1,  -1,  0.05, 0.6, -2,   0,    0, 1,  //
                                             0.8, -0.6, 2.5, 0.6,  0.8, -1.5, 0,    0, 1,  //
                                             0.6, 0.1,  0.1, 0.1,  0.6, 0.3,  0.01, 0, 1});
        HostTensor idx = HostTensor::from({3}, {1, 0, 1}, dtype::Int32);
        HostTensor dy = values({3, 16, 40, 40}, rng, kSpikes);
        cases.push_back(make_case<WarpPerspective>("warp_fwd", true, 1e-5, p, {x, mat, idx}));
        cases.push_back(make_case<WarpPerspectiveBackwardData>("warp_bwd_data", true, 1e-5, p,
                                                               {mat, idx, dy}, {src}));
        cases.push_back(make_case<WarpPerspectiveBackwardMat>("warp_bwd_mat", true, 1e-5, p,
                                                              {x, mat, idx, dy}));
    }

    // TopK: the 10 largest of 256 lines of 4096, sorted.
    {
        param::TopK p;
        p.mode = param::TopK::Mode::VALUE_IDX_SORTED;
        p.k = -10;
        cases.push_back(make_case<TopK>("topk", true, 0, p, {values({256, 4096}, rng, kSpikes)}));
    }

    // Cumsum along rows of 4096 and along the middle axis of (16, 512, 48).
    {
        param::Cumsum p;
        p.axis = 1;
        cases.push_back(make_case<Cumsum>("cumsum_rows", true, 1e-5, p,
                                          {values({64, 4096}, rng, kSpikes)}));
        cases.push_back(make_case<Cumsum>("cumsum_middle", true, 1e-5, p,
                                          {values({16, 512, 48}, rng, kSpikes)}));
    }

    // Convolution through oneDNN: forward and filter gradient.
    {
        param::Convolution p;
        p.padding = {1, 1};
        const TensorShape src{4, 32, 28, 28}, filter{32, 32, 3, 3};
        HostTensor x = values(src, rng, 0), w = values(filter, rng, 0, -0.2, 0.2);
        HostTensor dy = values({4, 32, 28, 28}, rng, 0);
        cases.push_back(make_case<ConvolutionForward>("conv_fwd", false, 1e-4, p, {x, w}));
        cases.push_back(make_case<ConvolutionBackwardFilter>("conv_bwd_filter", false, 1e-4, p,
                                                             {x, dy}, {filter}));
    }

    // Elemwise with broadcast operands: per channel, per row and per column, a scalar.
    cases.push_back(make_case<Elemwise>(
            "add_per_channel", true, 1e-6, elemwise(EM::ADD),
            {values({16, 64, 24, 24}, rng, kSpikes), values({1, 64, 1, 1}, rng, kSpikes)}));
    cases.push_back(make_case<Elemwise>("fma3_row_column", true, 1e-6, elemwise(EM::FUSE_MUL_ADD3),
                                        {values({64, 4096}, rng, 0), values({1, 4096}, rng, 0),
                                         values({64, 1}, rng, kSpikes)}));
    cases.push_back(
            make_case<Elemwise>("true_div_scalar", true, 1e-6, elemwise(EM::TRUE_DIV),
                                {values({300000}, rng, kSpikes), HostTensor::from({1}, {3.0})}));
    // POW by 3 (four vectors a step, blended where one holds |a| >= 2^50): bases whose cubes
    // overflow, with l a of either sign, spread so that some steps hold one and each thread
    // count's boundaries cut the steps differently.
    HostTensor cube_base = values({300001}, rng, 0, -30, 30);
    auto bases = cube_base.values();
    for (size_t i = 0; i < bases.size(); i += 4099)
        bases[i] = (i % 2 ? -1 : 1) * 0x1.001002p+51;
    cube_base.set_values(bases);
    cases.push_back(make_case<Elemwise>("pow_cube", true, 0, elemwise(EM::POW),
                                        {cube_base, HostTensor::from({1}, {3.0})}));
    return cases;
}

const std::vector<Case>& cases() {
    static const std::vector<Case> all = make_cases();
    return all;
}

// The same bits (NaN payloads and zeros' signs included), naming the first element that differs.
::testing::AssertionResult same_bits(const HostTensor& a, const HostTensor& b) {
    if (a.shape().total_nr_elems() != b.shape().total_nr_elems() || a.dtype() != b.dtype())
        return ::testing::AssertionFailure() << "shapes or dtypes differ";
    const HostTensor ca = a.contiguous(), cb = b.contiguous();
    const size_t n = ca.shape().total_nr_elems(), size = ca.dtype().size();
    const auto* pa = static_cast<const std::byte*>(ca.nd().raw_ptr());
    const auto* pb = static_cast<const std::byte*>(cb.nd().raw_ptr());
    for (size_t i = 0; i < n; ++i)
        if (std::memcmp(pa + i * size, pb + i * size, size) != 0)
            return ::testing::AssertionFailure()
                   << "element " << i << ": " << ca.values()[i] << " vs " << cb.values()[i];
    return ::testing::AssertionSuccess();
}

class X86ThreadCounts : public X86, public ::testing::WithParamInterface<size_t> {};

}  // namespace

TEST_F(X86, ScopedOmpThreadsSetsAndRestores) {
    const int before = omp_get_max_threads();
    {
        ScopedOmpThreads three(3);
        EXPECT_EQ(omp_get_max_threads(), 3);
        {
            ScopedOmpThreads one(1);
            EXPECT_EQ(omp_get_max_threads(), 1);
        }
        EXPECT_EQ(omp_get_max_threads(), 3);
    }
    EXPECT_EQ(omp_get_max_threads(), before);
}

TEST_P(X86ThreadCounts, AgreeAcrossThreadCounts) {
    const Case& c = cases()[GetParam()];
    std::vector<HostTensor> one;
    for (int threads : {1, 2, 3}) {
        ScopedOmpThreads scope(threads);
        auto [got, kernel] = c.run(*handle);
        EXPECT_NE(kernel, "naive") << c.name << " at " << threads << " threads";
        if (threads == 1) {
            one = got;
            if (!c.vs_naive)
                continue;
            auto want = c.naive();
            ASSERT_EQ(got.size(), want.size());
            for (size_t i = 0; i < got.size(); ++i)
                EXPECT_TRUE(tensors_near(got[i], want[i], c.eps)) << c.name << " output " << i;
            continue;
        }
        ASSERT_EQ(got.size(), one.size());
        for (size_t i = 0; i < got.size(); ++i) {
            if (c.exact)
                EXPECT_TRUE(same_bits(got[i], one[i]))
                        << c.name << " output " << i << " at " << threads << " threads";
            else
                EXPECT_TRUE(tensors_near(got[i], one[i], c.eps))
                        << c.name << " output " << i << " at " << threads << " threads";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Kernels, X86ThreadCounts, ::testing::Range(size_t{0}, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& param) {
                             return cases()[param.param].name;
                         });
