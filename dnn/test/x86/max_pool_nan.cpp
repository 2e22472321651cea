// MAX pooling with NaNs on the x86 handle against naive, which propagates them (a window holding
// a NaN has a NaN maximum, and its first NaN gets the window's gradient): forward and backward on
// plain, row-padded and channels-last tensors (float32 and bfloat16; float16 on plain ones) and the
// forward on channel-blocked ones, 1-D to 3-D, windows that overlap, pad and tile, rows of several
// vectors and odd widths, with a few NaNs scattered and with whole windows of NaN; infinities
// beside them.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "naive/channel_blocked.h"
#include "neomeg/dnn/operators/pooling.h"
#include "x86/highway_targets.h"
#include "x86/pooling_case.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Case = PoolCase;

std::vector<Case> cases() {
    return {
            {{2, 3, 7, 7}, {2, 2}, {2, 2}, {0, 0}},
            {{2, 3, 9, 9}, {3, 3}, {2, 2}, {1, 1}},
            {{1, 4, 13, 71}, {3, 3}, {1, 1}, {1, 1}},
            {{1, 2, 6, 75}, {2, 3}, {2, 2}, {0, 1}},
            {{1, 2, 5, 40}, {3, 3}, {3, 3}, {1, 1}},  // stride 3: the scalar loop
            {{2, 3, 35}, {3}, {2}, {1}},
            {{1, 2, 5, 6, 33}, {2, 3, 2}, {2, 1, 2}, {1, 1, 0}},
    };
}

// Random values with NaNs at every `every`-th element (from `first`) and infinities beside some.
std::vector<double> with_nans(const TensorShape& s, size_t first, size_t every, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> v(s.total_nr_elems());
    for (double& x : v)
        x = u(rng);
    const double nan = std::numeric_limits<double>::quiet_NaN(),
                 inf = std::numeric_limits<double>::infinity();
    for (size_t i = first; i < v.size(); i += every) {
        v[i] = nan;
        if (i + 1 < v.size() && i % 3 == 0)
            v[i + 1] = inf;
    }
    return v;
}

// `values` (in NC... order) in a layout whose channels are adjacent: N, spatial..., C in memory.
HostTensor channels_last(const TensorShape& s, const std::vector<double>& values,
                         DType dtype = dtype::Float32) {
    TensorShape mem = s;
    std::vector<size_t> perm{0};
    for (size_t i = 2; i < s.ndim; ++i) {
        mem[i - 1] = s[i];
        perm.push_back(i);
    }
    mem[s.ndim - 1] = s[1];
    // Axis order of the view: N, C, spatial... from memory's N, spatial..., C.
    std::vector<size_t> view{0, s.ndim - 1};
    for (size_t i = 1; i + 1 < s.ndim; ++i)
        view.push_back(i);
    HostTensor t(TensorLayout(mem, dtype).dimshuffle(view));
    t.set_values(values);
    return t;
}

// The layouts the forward and backward are run on: contiguous, rows padded, channels-last.
std::vector<HostTensor> layouts_of(const TensorShape& s, const std::vector<double>& values,
                                   DType dtype = dtype::Float32) {
    std::vector<HostTensor> out;
    out.push_back(HostTensor::from(s, values, dtype));
    HostTensor padded(padded_layout(TensorLayout(s, dtype)));
    padded.set_values(values);
    out.push_back(std::move(padded));
    out.push_back(channels_last(s, values, dtype));
    return out;
}

// The forward and backward of MAX pooling on x against naive (dst as naive's forward gives it,
// diff random in x's dtype); both must run an x86 kernel.
void check_forward_backward(Handle& handle, const Case& k, const HostTensor& x, double eps,
                            const std::string& what) {
    const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
    EXPECT_NE(run_and_compare<PoolingForward>(handle, p, {x}), "naive") << what;
    auto fwd = Handle::make_naive()->create_operator<PoolingForward>();
    fwd->param() = p;
    HostTensor y = run_op(*fwd, {x.contiguous()})[0];
    std::mt19937 rng(9);
    HostTensor dy =
            HostTensor::from(dst_shape(k), random_tensor(dst_shape(k), rng).values(), x.dtype());
    EXPECT_NE(run_and_compare<PoolingBackward>(handle, p, {x, y, dy}, {}, eps), "naive") << what;
}

}  // namespace

TEST_F(X86, MaxPoolingPropagatesNaN) {
    for (const Case& k : cases())
        for (size_t every : {size_t(7), size_t(97), size_t(1)})  // several, few, all NaN
            for (HostTensor& x : layouts_of(k.src, with_nans(k.src, 3, every, 5))) {
                EXPECT_NE(run_and_compare<PoolingForward>(
                                  *handle, pool_param(param::Pooling::Mode::MAX, k), {x}),
                          "naive")
                        << k.src.to_string() << " every " << every;
                std::mt19937 rng(9);
                TensorShape d = dst_shape(k);
                // dst as the forward gives it (a NaN where its window holds one), diff random.
                auto fwd = Handle::make_naive()->create_operator<PoolingForward>();
                fwd->param() = pool_param(param::Pooling::Mode::MAX, k);
                HostTensor y = run_op(*fwd, {x.contiguous()})[0];
                HostTensor dy = random_tensor(d, rng);
                EXPECT_NE(run_and_compare<PoolingBackward>(
                                  *handle, pool_param(param::Pooling::Mode::MAX, k), {x, y, dy}),
                          "naive")
                        << k.src.to_string() << " every " << every;
            }
}

// float16 runs the float32 plans between conversions: the same rule.
TEST_F(X86, MaxPoolingFloat16PropagatesNaN) {
    Case k{{2, 3, 9, 37}, {3, 3}, {2, 2}, {1, 1}};
    HostTensor x = HostTensor::from(k.src, with_nans(k.src, 2, 11, 3), dtype::Float16);
    EXPECT_NE(
            run_and_compare<PoolingForward>(*handle, pool_param(param::Pooling::Mode::MAX, k), {x}),
            "naive");
    auto fwd = Handle::make_naive()->create_operator<PoolingForward>();
    fwd->param() = pool_param(param::Pooling::Mode::MAX, k);
    HostTensor y = run_op(*fwd, {x})[0];
    std::mt19937 rng(4);
    HostTensor dy = HostTensor::from(dst_shape(k), random_tensor(dst_shape(k), rng).values(),
                                     dtype::Float16);
    EXPECT_NE(run_and_compare<PoolingBackward>(*handle, pool_param(param::Pooling::Mode::MAX, k),
                                               {x, y, dy}, {}, 1e-2),
              "naive");
}

TEST_F(X86, MaxPoolingBlockedPropagatesNaN) {
    for (size_t block : {size_t(8), size_t(16)})
        for (size_t c : {size_t(3), size_t(16), size_t(20)}) {
            Case k{{2, c, 9, 37}, {3, 3}, {2, 2}, {1, 1}};
            HostTensor plain = HostTensor::from(k.src, with_nans(k.src, 5, 13, 7), dtype::Float32);
            EXPECT_NE(run_and_compare<PoolingBlocked>(*handle,
                                                      pool_param(param::Pooling::Mode::MAX, k),
                                                      {block_ref(plain, block)}),
                      "naive");
        }
}

// Edge shapes beside cases(): a 1x1 plane, a window as large as the plane, widths of one and of a
// prime past several vectors, channel counts that leave a partial vector on channels-last views,
// 1-D of length 1, 2x2 windows that tile a plane with a leftover column (the tiled backward).
std::vector<Case> edge_cases() {
    return {
            {{1, 1, 1, 1}, {1, 1}, {1, 1}, {0, 0}},    {{2, 3, 4, 5}, {4, 5}, {1, 1}, {0, 0}},
            {{1, 17, 7, 1}, {3, 1}, {2, 1}, {1, 0}},   {{1, 33, 5, 97}, {2, 2}, {2, 2}, {0, 0}},
            {{3, 17, 5, 3}, {3, 3}, {1, 1}, {1, 1}},   {{2, 5, 1}, {1}, {1}, {0}},
            {{1, 2, 64, 131}, {3, 3}, {2, 2}, {1, 1}},
    };
}

// bfloat16 keeps naive's rule on every ISA: the forward in our loops (compared as float32), the
// backward's oneDNN kernel checked for NaNs as float32's is (or, below AVX-512, the float32 plans
// between conversions). With NaNs scattered, whole windows of them, and none (ties and maxima as
// naive picks them).
TEST_F(X86, MaxPoolingBFloat16PropagatesNaN) {
    std::vector<Case> all = cases();
    for (const Case& k : edge_cases())
        all.push_back(k);
    for (const Case& k : all)
        for (size_t every : {size_t(7), size_t(97), size_t(1), size_t(0)}) {
            std::vector<double> v = every ? with_nans(k.src, 3, every, 5)
                                          : with_nans(k.src, 0, k.src.total_nr_elems() + 1, 5);
            for (HostTensor& x : layouts_of(k.src, v, dtype::BFloat16))
                check_forward_backward(*handle, k, x, 1e-2,
                                       k.src.to_string() + " every " + std::to_string(every) +
                                               " strides " + x.layout().to_string());
        }
}

// Ties in bfloat16 (few distinct values): the first maximum of each window gets the gradient, as
// naive picks it.
TEST_F(X86, MaxPoolingBFloat16Ties) {
    for (const Case& k : {Case{{2, 3, 9, 37}, {3, 3}, {2, 2}, {1, 1}},
                          Case{{2, 16, 8, 8}, {2, 2}, {2, 2}, {0, 0}}}) {
        std::vector<double> v(k.src.total_nr_elems());
        for (size_t i = 0; i < v.size(); ++i)
            v[i] = double(i * 7 % 3);
        for (HostTensor& x : layouts_of(k.src, v, dtype::BFloat16))
            check_forward_backward(*handle, k, x, 1e-2, x.layout().to_string());
    }
}

TEST_F(X86, MaxPoolingBlockedBFloat16PropagatesNaN) {
    for (size_t block : {size_t(8), size_t(16)})
        for (size_t c : {size_t(3), size_t(16), size_t(20)})
            for (const Case& k : {Case{{2, c, 9, 37}, {3, 3}, {2, 2}, {1, 1}},
                                  Case{{1, c, 4, 6}, {2, 2}, {2, 2}, {0, 0}},
                                  Case{{1, c, 3, 4, 5}, {2, 3, 2}, {1, 2, 2}, {1, 1, 0}}}) {
                HostTensor plain =
                        HostTensor::from(k.src, with_nans(k.src, 5, 13, 7), dtype::BFloat16);
                EXPECT_NE(run_and_compare<PoolingBlocked>(*handle,
                                                          pool_param(param::Pooling::Mode::MAX, k),
                                                          {block_ref(plain, block)}),
                          "naive")
                        << k.src.to_string() << " block " << block;
            }
}

namespace {

// A quiet NaN whose payload (bits bfloat16 keeps too) tells which one a window's maximum is.
double nan_with_payload(unsigned k, bool negative) {
    uint64_t bits = 0x7FF8000000000000ull | (uint64_t(k % 63 + 1) << 45);
    if (negative)
        bits |= 0x8000000000000000ull;
    double v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
}

// Values with many ties between -0 and +0 (the first maximum's sign must be naive's), NaNs of
// distinct payloads at the vector boundaries of the innermost memory axis (lanes 0, 7, 8, 15, 16,
// 17, 31, 32, 33 and the last) when `nans`, and a few infinities.
std::vector<double> boundary_values(const TensorShape& logical, size_t inner, bool nans,
                                    uint32_t seed) {
    std::mt19937 rng(seed);
    const double choices[] = {
            -0.0, 0.0, -1.0, -0.0, 0.0, 0.5, -std::numeric_limits<double>::infinity()};
    std::vector<double> v(logical.total_nr_elems());
    for (double& x : v)
        x = choices[rng() % 7];
    if (nans) {
        const size_t marks[] = {0, 7, 8, 15, 16, 17, 31, 32, 33, inner - 1};
        unsigned k = 0;
        // Positions in memory order: i counts along the innermost memory axis (`inner` long).
        for (size_t base = 0; base < v.size(); base += inner * 5)
            for (size_t m : marks)
                if (m < inner && base + m < v.size() && rng() % 3 == 0)
                    v[base + m] = nan_with_payload(k++, rng() % 2);
    }
    return v;
}

// got and want hold the same bits (after widening to double, which keeps a zero's sign and a
// NaN's payload).
void expect_same_bits(const HostTensor& got, const HostTensor& want, const std::string& what) {
    std::vector<double> a = got.values(), b = want.values();
    ASSERT_EQ(a.size(), b.size()) << what;
    size_t bad = 0, first = a.size();
    for (size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0 && bad++ == 0)
            first = i;
    EXPECT_EQ(bad, 0u) << what << ": first at " << first << " got " << a[first] << " want "
                       << b[first];
}

// Runs op on `in` into a dst of `dst_layout` (as given, strides included) and returns it.
HostTensor exec_into(OperatorBase& op, const HostTensor& in, const TensorLayout& dst_layout) {
    HostTensor out(dst_layout);
    std::vector<TensorLayout> in_l{in.layout()}, out_l{out.layout()};
    std::vector<std::byte> ws(op.get_workspace_in_bytes(in_l, out_l));
    TensorND i = in.nd(), o = out.nd();
    op.exec({&i, 1}, {&o, 1}, {ws.data(), ws.size()});
    return out;
}

// The dst of `s` in the memory order of a channels-last view (as channels_last makes src).
TensorLayout channels_last_layout(const TensorShape& s, DType dtype) {
    TensorShape mem = s;
    for (size_t i = 2; i < s.ndim; ++i)
        mem[i - 1] = s[i];
    mem[s.ndim - 1] = s[1];
    std::vector<size_t> view{0, s.ndim - 1};
    for (size_t i = 1; i + 1 < s.ndim; ++i)
        view.push_back(i);
    return TensorLayout(mem, dtype).dimshuffle(view);
}

}  // namespace

// The forward's vector loops bit for bit against naive at each Highway target: plain rows (widths
// of one, odd and prime, outputs one short of, at and past a vector, the last block overlapping
// the one before), channels-last and blocked positions (channel counts of one, a partial vector,
// whole ones and one past), windows that tile, overlap and pad, float32 and bfloat16; -0 and +0
// tied in most windows and NaNs of distinct payloads on the vectors' boundaries.
TEST_F(X86, MaxPoolingForwardBitExactAtVectorEdges) {
#ifdef NEOMEG_WITH_DNNL
    struct Window {
        std::vector<int32_t> k, s, p;
    };
    const Window windows[] = {{{2, 2}, {2, 2}, {0, 0}},
                              {{3, 3}, {2, 2}, {1, 1}},
                              {{3, 3}, {1, 1}, {1, 1}},
                              {{2, 3}, {1, 2}, {0, 1}},
                              {{1, 1}, {1, 1}, {0, 0}}};
    auto naive = Handle::make_naive();
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        for (DType dt : {DType(dtype::Float32), DType(dtype::BFloat16)})
            for (const Window& win : windows)
                for (size_t w : {size_t(1), size_t(5), size_t(31), size_t(33), size_t(37),
                                 size_t(57), size_t(67)}) {
                    if (size_t(win.k[1]) > w + 2 * size_t(win.p[1]))
                        continue;
                    const param::Pooling p =
                            pool_param(param::Pooling::Mode::MAX, Case{{}, win.k, win.s, win.p});
                    auto ours = handle->create_operator<PoolingForward>();
                    ours->param() = p;
                    auto ref = naive->create_operator<PoolingForward>();
                    ref->param() = p;
                    for (bool nans : {false, true}) {
                        const std::string what =
                                "target " + std::to_string(target) + " " + dt.name() + " w " +
                                std::to_string(w) + " k " + std::to_string(win.k[0]) + "x" +
                                std::to_string(win.k[1]) + " nans " + std::to_string(nans);
                        // Plain rows: NaNs at the row's vector boundaries.
                        const TensorShape plain{2, 3, 7, w};
                        HostTensor x = HostTensor::from(
                                plain, boundary_values(plain, w, nans, uint32_t(w)), dt);
                        const TensorShape d = dst_shape(Case{plain, win.k, win.s, win.p});
                        expect_same_bits(exec_into(*ours, x, TensorLayout(d, dt)),
                                         run_op(*ref, {x})[0], what + " plain");
                        EXPECT_EQ(last_kernel(*ours), "loop:max_pool") << what;
                        // Channels-last: NaNs at the channel vectors' boundaries.
                        // bfloat16 on AVX-512 reads runs of 32, 16 and 8 lanes, then lane by
                        // lane: 24 is one of 16 and one of 8, 57 one of each and one more.
                        for (size_t c : {size_t(1), size_t(15), size_t(17), size_t(24), size_t(33),
                                         size_t(57), size_t(64), size_t(65)}) {
                            const TensorShape cl{2, c, 5, w};
                            const std::vector<double> v =
                                    boundary_values(cl, c, nans, uint32_t(c * 131 + w));
                            // The values in memory order (N, H, W, C) are v; NC HW order for
                            // naive.
                            std::vector<double> logical(v.size());
                            for (size_t n = 0; n < 2; ++n)
                                for (size_t y = 0; y < 5; ++y)
                                    for (size_t xx = 0; xx < w; ++xx)
                                        for (size_t ch = 0; ch < c; ++ch)
                                            logical[((n * c + ch) * 5 + y) * w + xx] =
                                                    v[((n * 5 + y) * w + xx) * c + ch];
                            HostTensor xc = channels_last(cl, logical, dt);
                            const TensorShape dc = dst_shape(Case{cl, win.k, win.s, win.p});
                            expect_same_bits(exec_into(*ours, xc, channels_last_layout(dc, dt)),
                                             run_op(*ref, {xc.contiguous()})[0],
                                             what + " channels-last c " + std::to_string(c));
                            EXPECT_EQ(last_kernel(*ours), "loop:max_pool") << what;
                            ++runs;
                        }
                        ++runs;
                    }
                }
        // Blocked: the block's lanes (8 or 16) and channels that leave a partial block, rows of
        // odd and even width, one image and two; without NaNs (the vector loops' results, -0 tied
        // with +0) and with them (naive's rule where a NaN was read).
        for (DType dt : {DType(dtype::Float32), DType(dtype::BFloat16)})
            for (size_t block : {size_t(8), size_t(16)})
                for (size_t c : {size_t(5), size_t(16), size_t(33)})
                    for (const TensorShape& shape :
                         {TensorShape{2, c, 6, 37}, TensorShape{1, c, 7, 8}})
                        for (bool nans : {false, true})
                            for (const Window& win : windows) {
                                const Case k{shape, win.k, win.s, win.p};
                                const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
                                HostTensor plain = HostTensor::from(
                                        k.src,
                                        boundary_values(k.src, shape[3], nans,
                                                        uint32_t(c + block + shape[3])),
                                        dt);
                                HostTensor xb = block_ref(plain, block);
                                auto ours = handle->create_operator<PoolingBlocked>();
                                ours->param() = p;
                                auto ref = naive->create_operator<PoolingBlocked>();
                                ref->param() = p;
                                expect_same_bits(run_op(*ours, {xb})[0], run_op(*ref, {xb})[0],
                                                 std::string("target ") + std::to_string(target) +
                                                         " blocked " + dt.name() + " block " +
                                                         std::to_string(block) + " c " +
                                                         std::to_string(c) + " " +
                                                         shape.to_string() + " k " +
                                                         std::to_string(win.k[0]) + "x" +
                                                         std::to_string(win.k[1]) + " s " +
                                                         std::to_string(win.s[1]) + " nans " +
                                                         std::to_string(nans));
                                ++runs;
                            }
    });
    EXPECT_GE(ran, 1u);  // an ISA cap leaves fewer targets
    EXPECT_GT(runs, 0u);
#endif
}

// One NaN in a tensor otherwise free of them, at each position in turn (and a lane that moves with
// it), on channels-last and blocked memory: the vector loops must see a NaN wherever it is read (a
// 3x3/2 window's column shared with the next position, a run's first or last lane), or their
// maxima (which drop it) would stand. Bit for bit against naive at each Highway target.
TEST_F(X86, MaxPoolingForwardSeesEveryNaN) {
#ifdef NEOMEG_WITH_DNNL
    struct Window {
        std::vector<int32_t> k, s, p;
    };
    const Window windows[] = {{{3, 3}, {2, 2}, {1, 1}},
                              {{3, 3}, {2, 2}, {0, 0}},
                              {{2, 2}, {2, 2}, {0, 0}},
                              {{3, 3}, {1, 1}, {1, 1}}};
    const size_t h = 5, w = 9;
    auto naive = Handle::make_naive();
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        for (DType dt : {DType(dtype::Float32), DType(dtype::BFloat16)})
            for (const Window& win : windows) {
                const param::Pooling p =
                        pool_param(param::Pooling::Mode::MAX, Case{{}, win.k, win.s, win.p});
                auto ours = handle->create_operator<PoolingForward>();
                ours->param() = p;
                auto ours_blocked = handle->create_operator<PoolingBlocked>();
                ours_blocked->param() = p;
                auto ref = naive->create_operator<PoolingForward>();
                ref->param() = p;
                auto ref_blocked = naive->create_operator<PoolingBlocked>();
                ref_blocked->param() = p;
                // Channels-last: one run of 16 or 8 lanes, or runs of 32, 16 and 8 and one more;
                // 64 and 97 (bfloat16 on AVX-512 reads 3x3/2 windows' 64 lanes in one pass, then
                // 32 and 1). Blocked: a block of 16 or 8.
                for (size_t c : {size_t(8), size_t(16), size_t(57), size_t(64), size_t(97)})
                    for (size_t at = 0; at < h * w; ++at) {
                        const TensorShape shape{1, c, h, w};
                        std::vector<double> v =
                                boundary_values(shape, w, false, uint32_t(c * 7 + at));
                        const size_t lane = (at * 5) % c;
                        v[lane * h * w + at] = nan_with_payload(unsigned(at), at % 2);
                        const std::string what =
                                "target " + std::to_string(target) + " " + dt.name() + " k " +
                                std::to_string(win.k[0]) + " s " + std::to_string(win.s[0]) +
                                " p " + std::to_string(win.p[0]) + " c " + std::to_string(c) +
                                " NaN at " + std::to_string(at) + " lane " + std::to_string(lane);
                        HostTensor xc = channels_last(shape, v, dt);
                        const TensorShape dc = dst_shape(Case{shape, win.k, win.s, win.p});
                        expect_same_bits(exec_into(*ours, xc, channels_last_layout(dc, dt)),
                                         run_op(*ref, {xc.contiguous()})[0],
                                         what + " channels-last");
                        ++runs;
                        if (c != 8 && c != 16)
                            continue;
                        HostTensor xb = block_ref(HostTensor::from(shape, v, dt), c);
                        expect_same_bits(run_op(*ours_blocked, {xb})[0],
                                         run_op(*ref_blocked, {xb})[0], what + " blocked");
                        ++runs;
                    }
            }
    });
    EXPECT_GE(ran, 1u);
    EXPECT_GT(runs, 0u);
#endif
}

// Plain rows, one NaN at each column of one row in turn (float32 and bfloat16, each Highway
// target, bit for bit against naive): rows of even width (whose last block's last column only its
// own check sees) and odd, over one to three blocks of outputs, the last overlapping the one
// before; windows 3x3/2 with and without padding (bfloat16 3x3/2 blocks inside the row read
// 32-bit pairs of columns) and 2x2.
TEST_F(X86, MaxPoolingForwardRowsSeeANaNInEveryColumn) {
#ifdef NEOMEG_WITH_DNNL
    struct Window {
        std::vector<int32_t> k, s, p;
    };
    const Window windows[] = {
            {{3, 3}, {2, 2}, {1, 1}}, {{3, 3}, {2, 2}, {0, 0}}, {{2, 2}, {2, 2}, {0, 0}}};
    const size_t h = 5;
    auto naive = Handle::make_naive();
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        for (DType dt : {DType(dtype::Float32), DType(dtype::BFloat16)})
            for (const Window& win : windows) {
                const param::Pooling p =
                        pool_param(param::Pooling::Mode::MAX, Case{{}, win.k, win.s, win.p});
                auto ours = handle->create_operator<PoolingForward>();
                ours->param() = p;
                auto ref = naive->create_operator<PoolingForward>();
                ref->param() = p;
                for (size_t w : {size_t(34), size_t(35), size_t(56), size_t(57), size_t(64),
                                 size_t(66), size_t(67)})
                    for (size_t x = 0; x < w; ++x) {
                        const TensorShape shape{1, 1, h, w};
                        std::vector<double> v =
                                boundary_values(shape, w, false, uint32_t(w * 7 + x));
                        v[2 * w + x] = nan_with_payload(unsigned(x), x % 2);
                        const std::string what =
                                "target " + std::to_string(target) + " " + dt.name() + " k " +
                                std::to_string(win.k[0]) + " p " + std::to_string(win.p[0]) +
                                " w " + std::to_string(w) + " NaN at column " + std::to_string(x);
                        HostTensor x_in = HostTensor::from(shape, v, dt);
                        const TensorShape d = dst_shape(Case{shape, win.k, win.s, win.p});
                        expect_same_bits(exec_into(*ours, x_in, TensorLayout(d, dt)),
                                         run_op(*ref, {x_in})[0], what);
                        ++runs;
                    }
            }
    });
    EXPECT_GE(ran, 1u);
    EXPECT_GT(runs, 0u);
#endif
}

// One NaN near the end of a dst large enough for the backward's NaN check to split across threads
// (chunks of 16 K values): whichever chunk holds it must send the call to naive's rule, or
// oneDNN's backward (which skips NaNs) gives the window's gradient to its largest number.
TEST_F(X86, MaxPoolingBackwardFindsANaNInAnyChunk) {
    for (DType dt : {DType(dtype::BFloat16), DType(dtype::Float32)}) {
        // Windows our loops do not take on these layouts: oneDNN's backward behind the check.
        const Case k{{1, 64, 130, 130}, {3, 3}, {1, 1}, {1, 1}};
        // Channel 63, row 128, column 100: late in dst's memory in both layouts.
        const size_t at = (63 * 130 + 128) * 130 + 100;
        std::vector<double> v = with_nans(k.src, at, k.src.total_nr_elems(), 5);
        HostTensor x = dt == dtype::BFloat16 ? channels_last(k.src, v, dt)
                                             : HostTensor::from(k.src, v, dt);
        const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
        auto fwd = Handle::make_naive()->create_operator<PoolingForward>();
        fwd->param() = p;
        HostTensor y = run_op(*fwd, {x.contiguous()})[0];
        std::mt19937 rng(9);
        HostTensor dy = HostTensor::from(dst_shape(k), random_tensor(dst_shape(k), rng).values(),
                                         x.dtype());
        const std::string kernel =
                run_and_compare<PoolingBackward>(*handle, p, {x, y, dy}, {}, 1e-2);
        EXPECT_EQ(kernel.rfind("onednn", 0), 0u) << dt.name() << " ran " << kernel;
    }
}

// bfloat16 blocks of 16 lanes (nChw16c, or 16 channels last) are compared as 16-bit integers:
// bit for bit against naive at each Highway target on data whose integer maxima stand (no NaN, no
// -0 tied with +0: every sign and magnitude class, windows all negative), on windows that tie -0
// and +0 without a positive value (naive keeps the first zero), and with one NaN of either sign.
TEST_F(X86, MaxPoolingBFloat16BlocksOf16AsIntegers) {
#ifdef NEOMEG_WITH_DNNL
    struct Window {
        std::vector<int32_t> k, s, p;
    };
    const Window windows[] = {{{2, 2}, {2, 2}, {0, 0}},
                              {{3, 3}, {1, 1}, {1, 1}},
                              {{2, 3}, {1, 2}, {0, 1}},
                              {{3, 3}, {2, 2}, {1, 1}}};
    const double inf = std::numeric_limits<double>::infinity();
    const double denormal = std::ldexp(1.0, -133);  // bfloat16 keeps it
    const std::vector<double> mixed{-inf, -3.5, -1, -0.5, -denormal, 0.0,    denormal,
                                    0.25, 1,    3,  inf,  3.3e38,    -3.3e38};
    const std::vector<double> negative{-0.0, -inf, -3.5, -1, -0.5, -denormal, -3.3e38};
    std::vector<double> zeros = negative;
    zeros.push_back(0.0);
    zeros.push_back(-0.0);
    zeros.push_back(0.0);
    struct Data {
        const char* name;
        const std::vector<double>* pool;
        int nan;  // 0: none, 1: one positive NaN, -1: one negative NaN
    };
    const Data data[] = {{"mixed", &mixed, 0},
                         {"negative", &negative, 0},
                         {"zeros", &zeros, 0},
                         {"mixed, NaN", &mixed, 1},
                         {"mixed, -NaN", &mixed, -1}};
    auto naive = Handle::make_naive();
    const DType dt = dtype::BFloat16;
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        for (const Window& win : windows) {
            const param::Pooling p =
                    pool_param(param::Pooling::Mode::MAX, Case{{}, win.k, win.s, win.p});
            auto ours = handle->create_operator<PoolingForward>();
            ours->param() = p;
            auto ours_blocked = handle->create_operator<PoolingBlocked>();
            ours_blocked->param() = p;
            auto ref = naive->create_operator<PoolingForward>();
            ref->param() = p;
            auto ref_blocked = naive->create_operator<PoolingBlocked>();
            ref_blocked->param() = p;
            for (const Data& dd : data)
                for (size_t c : {size_t(16), size_t(32)})
                    for (uint32_t seed = 0; seed < 3; ++seed) {
                        const TensorShape shape{2, c, 6, 11};
                        std::mt19937 rng(seed * 31 + uint32_t(c));
                        std::vector<double> v(shape.total_nr_elems());
                        for (double& x : v)
                            x = (*dd.pool)[rng() % dd.pool->size()];
                        if (dd.nan != 0)
                            v[rng() % v.size()] = nan_with_payload(seed, dd.nan < 0);
                        const std::string what =
                                "target " + std::to_string(target) + " k " +
                                std::to_string(win.k[0]) + "x" + std::to_string(win.k[1]) + " s " +
                                std::to_string(win.s[1]) + " " + dd.name + " c " +
                                std::to_string(c) + " seed " + std::to_string(seed);
                        HostTensor xb = block_ref(HostTensor::from(shape, v, dt), 16);
                        expect_same_bits(run_op(*ours_blocked, {xb})[0],
                                         run_op(*ref_blocked, {xb})[0], what + " blocked");
                        ++runs;
                        if (c != 16)
                            continue;
                        HostTensor xc = channels_last(shape, v, dt);
                        const TensorShape dc = dst_shape(Case{shape, win.k, win.s, win.p});
                        expect_same_bits(exec_into(*ours, xc, channels_last_layout(dc, dt)),
                                         run_op(*ref, {xc.contiguous()})[0],
                                         what + " channels-last");
                        EXPECT_EQ(last_kernel(*ours), "loop:max_pool") << what;
                        ++runs;
                    }
        }
    });
    EXPECT_GE(ran, 1u);
    EXPECT_GT(runs, 0u);
#endif
}
