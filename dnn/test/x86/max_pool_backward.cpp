// MAX pooling's backward on tensors whose channels are adjacent (channels-last views, and
// channel-blocked tensors seen as planes as eager mode runs them) against naive: our loop
// (max_pool_lanes_backward_hwy.h: tiling windows, 3x3/2 pad 1) bit for bit at each Highway target,
// the windows it leaves to oneDNN (overlapping, padded, skipping elements, asymmetric) within
// float32's rounding; 1-D to 3-D,
// channel counts that leave partial vectors, one image, positions with gaps; values with ties
// between -0 and +0 and between equal maxima, NaNs (naive's rule: the first NaN wins) and
// infinities, gradients of -0 (naive gives +0) and ones whose sums are exact in float32.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "neomeg/dnn/channel_blocked_rules.h"
#include "neomeg/dnn/operators/pooling.h"
#include "x86/highway_targets.h"
#include "x86/omp_threads.h"
#include "x86/pooling_case.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

constexpr const char* kLanesLoop = "loop:max_pool_backward_lanes";

// src's values: mostly ties (-0 with +0, equal maxima), -infinity (windows of nothing else, to
// which oneDNN's kernels give no gradient where naive gives the first element: the oneDNN path's
// wrapper then runs naive's rule, max_pool_plan.h), and some NaNs and infinities when `nans`.
std::vector<double> tied_values(size_t n, bool nans, std::mt19937& rng) {
    const double inf = std::numeric_limits<double>::infinity();
    const double choices[] = {-0.0, 0.0, -1.0, 0.5, 0.5, -0.0, 0.25, -inf, inf, 0.0};
    std::vector<double> v(n);
    for (double& x : v)
        x = choices[rng() % (nans ? 10 : 8)];
    if (nans)
        for (size_t i = rng() % 7; i < n; i += 5 + rng() % 11)
            v[i] = std::numeric_limits<double>::quiet_NaN();
    return v;
}

// Gradients whose sums over any four are exact in float32 (so naive's double sum rounds to the
// same bits), -0 among them.
std::vector<double> exact_grads(size_t n, std::mt19937& rng) {
    std::vector<double> v(n);
    for (double& x : v) {
        const int k = static_cast<int>(rng() % 33) - 16;
        x = k == 0 ? -0.0 : k * 0.125;
    }
    return v;
}

// A channels-last layout of logical shape s (memory N, spatial..., C), the positions `gap`
// elements apart beyond the channels.
TensorLayout channels_last(const TensorShape& s, size_t gap = 0, DType dt = dtype::Float32) {
    TensorLayout l(s, dt);
    ptrdiff_t stride = static_cast<ptrdiff_t>(s[1] + gap);
    l.stride[1] = 1;
    for (size_t i = s.ndim - 1; i >= 2; --i) {
        l.stride[i] = stride;
        stride *= static_cast<ptrdiff_t>(s[i]);
    }
    l.stride[0] = stride;
    return l;
}

HostTensor with_values(const TensorLayout& l, const std::vector<double>& v) {
    HostTensor t(l);
    t.set_values(v);
    return t;
}

void expect_same_bits(const HostTensor& got, const HostTensor& want, const std::string& what) {
    std::vector<double> a = got.values(), b = want.values();
    ASSERT_EQ(a.size(), b.size()) << what;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0 && bad++ == 0)
            first = i;
    EXPECT_EQ(bad, 0u) << what << ": first at " << first << " got " << a[first] << " want "
                       << b[first];
}

// The x86 operator's grad into `grad_layout` from src, dst (naive's forward), diff of the given
// layouts, and naive's grad on contiguous copies; returns the kernel the x86 operator ran.
// line_aligned: grad (dense, non-negative strides) written at a 64-byte boundary (HostTensor's
// storage is 16 bytes into a line), then copied into got.
std::string run_both(Handle& handle, const param::Pooling& p, const HostTensor& x,
                     const HostTensor& dy, const TensorLayout& grad_layout, HostTensor& got,
                     HostTensor& want, bool line_aligned = false) {
    auto naive = Handle::make_naive();
    auto fwd = naive->create_operator<PoolingForward>();
    fwd->param() = p;
    HostTensor y = run_op(*fwd, {x.contiguous()})[0];
    auto ref = naive->create_operator<PoolingBackward>();
    ref->param() = p;
    want = run_op(*ref, {x.contiguous(), y, dy.contiguous()})[0];
    auto op = handle.create_operator<PoolingBackward>();
    op->param() = p;
    got = HostTensor(grad_layout);
    std::vector<TensorLayout> in_l{x.layout(), y.layout(), dy.layout()}, out_l{grad_layout};
    std::vector<std::byte> ws(op->get_workspace_in_bytes(in_l, out_l));
    TensorND in[] = {x.nd(), y.nd(), dy.nd()}, out = got.nd();
    const size_t bytes = grad_layout.span_bytes();
    std::vector<std::byte> aligned(line_aligned ? bytes + 64 : 0);
    if (line_aligned) {
        void* base = aligned.data();
        size_t room = aligned.size();
        out = TensorND{std::align(64, bytes, base, room), grad_layout};
    }
    op->exec(in, {&out, 1}, {ws.data(), ws.size()});
    if (line_aligned)
        std::memcpy(got.nd().raw_ptr(), out.raw_ptr(), bytes);
    return last_kernel(*op);
}

struct Window {
    std::vector<int32_t> k, s, p;
};

// Whether our loop takes the window (2-D, or 1-D and 3-D ones seen as 2-D with axes of 1): one
// that tiles the plane, or 3x3/2 pad 1; the others run oneDNN behind the NaN check.
bool loop_takes(std::vector<int32_t> k, std::vector<int32_t> s, std::vector<int32_t> p) {
    while (k.size() < 3) {
        k.insert(k.begin(), 1);
        s.insert(s.begin(), 1);
        p.insert(p.begin(), 0);
    }
    if (k[0] != 1 || s[0] != 1 || p[0] != 0)
        return false;
    const bool tiles = k[1] == s[1] && k[2] == s[2] && p[1] == 0 && p[2] == 0;
    const bool stem = k[1] == 3 && k[2] == 3 && s[1] == 2 && s[2] == 2 && p[1] == 1 && p[2] == 1;
    return tiles || stem;
}

// got against naive's want: bit for bit where our loop ran, within float32's rounding elsewhere.
void expect_matches(const std::string& kernel, bool ours, const HostTensor& got,
                    const HostTensor& want, const std::string& what) {
    if (ours) {
        EXPECT_EQ(kernel, kLanesLoop) << what;
        expect_same_bits(got, want, what);
    } else {
        EXPECT_NE(kernel, "naive") << what;
        EXPECT_NE(kernel, kLanesLoop) << what;
        EXPECT_TRUE(tensors_near(got, want, 1e-6)) << what;
    }
}

}  // namespace

// Every window shape on channels-last views of several channel counts and sizes, at each Highway
// target, bit for bit: the winners (ties, NaNs, padding) and the sums (exact gradients).
TEST_F(X86, MaxPoolingLanesBackwardBitExact) {
#ifdef NEOMEG_WITH_DNNL
    const Window windows[] = {
            {{2, 2}, {2, 2}, {0, 0}}, {{3, 3}, {2, 2}, {1, 1}}, {{3, 2}, {3, 2}, {0, 0}},
            {{1, 1}, {1, 1}, {0, 0}}, {{3, 3}, {1, 1}, {1, 1}}, {{5, 5}, {3, 3}, {2, 2}},
            {{2, 3}, {1, 2}, {0, 1}}, {{2, 2}, {3, 3}, {1, 0}}, {{3, 1}, {2, 1}, {1, 0}}};
    const TensorShape planes[] = {{7, 9}, {1, 6}, {5, 1}, {11, 13}, {2, 2}};
    size_t runs = 0, ran_targets = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        std::mt19937 rng(static_cast<uint32_t>(target % 1000));
        for (const Window& w : windows)
            for (const TensorShape& hw : planes)
                for (size_t c : {size_t(2), size_t(3), size_t(8), size_t(15), size_t(16),
                                 size_t(17), size_t(33), size_t(64)})
                    for (bool nans : {false, true}) {
                        if (size_t(w.k[0]) > hw[0] + 2 * size_t(w.p[0]) ||
                            size_t(w.k[1]) > hw[1] + 2 * size_t(w.p[1]))
                            continue;
                        const size_t n = c % 2 ? 1 : 2;
                        const PoolCase k{{n, c, hw[0], hw[1]}, w.k, w.s, w.p};
                        const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
                        const TensorShape d = dst_shape(k);
                        const size_t gap = c == 3 ? 2 : 0;
                        const bool ours = loop_takes(w.k, w.s, w.p);
                        // oneDNN's kernels do not change with Highway's target: once, and a
                        // few channel counts (each shape creates its primitives: slow).
                        if (!ours && (ran_targets > 0 || (c != 3 && c != 17)))
                            continue;
                        HostTensor x = with_values(channels_last(k.src, gap),
                                                   tied_values(k.src.total_nr_elems(), nans, rng));
                        HostTensor dy = with_values(channels_last(d, gap),
                                                    exact_grads(d.total_nr_elems(), rng));
                        HostTensor got, want;
                        const std::string kernel =
                                run_both(*handle, p, x, dy, channels_last(k.src, gap), got, want);
                        const std::string what =
                                "target " + std::to_string(target) + " window " +
                                std::to_string(w.k[0]) + "x" + std::to_string(w.k[1]) + "/" +
                                std::to_string(w.s[0]) + "x" + std::to_string(w.s[1]) + " pad " +
                                std::to_string(w.p[0]) + "," + std::to_string(w.p[1]) + " " +
                                k.src.to_string() + (nans ? " nans" : "");
                        expect_matches(kernel, ours, got, want, what);
                        ++runs;
                    }
        ++ran_targets;
    });
    EXPECT_GE(ran, 1u);  // an ISA cap leaves fewer targets
    EXPECT_GT(runs, 0u);
#endif
}

// 1-D and 3-D (windows of depth 1: slices apart) channels-last, and random gradients (sums that
// round): within float32's rounding of naive's double sums.
TEST_F(X86, MaxPoolingLanesBackwardOtherRanks) {
    std::mt19937 rng(11);
    const PoolCase cases[] = {{{2, 5, 37}, {3}, {2}, {1}},
                              {{1, 17, 9}, {2}, {2}, {0}},
                              {{2, 16, 4, 8, 9}, {1, 2, 2}, {1, 2, 2}, {0, 0, 0}},
                              {{2, 16, 3, 7, 9}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}},
                              {{1, 20, 56, 56}, {3, 3}, {2, 2}, {1, 1}}};
    for (const PoolCase& k : cases)
        for (bool nans : {false, true}) {
            const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
            const TensorShape d = dst_shape(k);
            std::vector<double> g(d.total_nr_elems());
            std::uniform_real_distribution<double> u(-1, 1);
            for (double& v : g)
                v = u(rng);
            std::vector<double> xv(k.src.total_nr_elems());
            for (double& v : xv)
                v = u(rng);
            if (nans)
                xv[xv.size() / 3] = std::numeric_limits<double>::quiet_NaN();
            HostTensor x = with_values(channels_last(k.src), xv);
            HostTensor dy = with_values(channels_last(d), g);
            HostTensor got, want;
            const std::string kernel = run_both(*handle, p, x, dy, channels_last(k.src), got, want);
            if (loop_takes(k.window, k.stride, k.padding)) {
                EXPECT_EQ(kernel, kLanesLoop) << k.src.to_string();
            }
            EXPECT_TRUE(tensors_near(got, want, 1e-6)) << k.src.to_string();
        }
}

// Eager mode's route: blocked tensors seen as planes (channel_blocked::blocks_as_planes), the
// planes' padding channels included.
TEST_F(X86, MaxPoolingLanesBackwardOnBlocksAsPlanes) {
    std::mt19937 rng(3);
    for (size_t block : {size_t(8), size_t(16)})
        for (const PoolCase& k : {PoolCase{{2, 20, 9, 11}, {3, 3}, {2, 2}, {1, 1}},
                                  PoolCase{{1, 16, 8, 8}, {2, 2}, {2, 2}, {0, 0}}}) {
            const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
            const size_t cb = (k.src[1] + block - 1) / block;
            auto planes = [&](const TensorShape& s) {
                TensorShape b{s[0], cb, s[2], s[3], block};
                return channel_blocked::blocks_as_planes(TensorLayout(b, dtype::Float32));
            };
            const TensorLayout xl = planes(k.src), dl = planes(dst_shape(k));
            HostTensor x = with_values(xl, tied_values(xl.total_nr_elems(), true, rng));
            HostTensor dy = with_values(dl, exact_grads(dl.total_nr_elems(), rng));
            HostTensor got, want;
            EXPECT_EQ(run_both(*handle, p, x, dy, xl, got, want), kLanesLoop);
            expect_same_bits(got, want, k.src.to_string() + " block " + std::to_string(block));
        }
}

// 3x3/2 pad 1 windows inside the plane, on whole vectors, test no tap for NaN: the elements each
// owns are summed, and a NaN anywhere (or +inf with -inf) sends the plane to a rerun that tests
// every window. A NaN alone in a plane of finite values, where an inner window owns it, where an
// edge window owns it but inner ones read it (row 1, column 1), and in a channel of the partial
// vector; +inf and -inf in one plane; none (the untested windows' winners, ties included). Blocks
// of 8 and 16 seen as planes (the lanes a whole vector or two at each target) and 17 and 40
// channels-last lanes, at each Highway target, bit for bit.
TEST_F(X86, MaxPoolingLanesBackwardNaNOnlyInsideThePlane) {
#ifdef NEOMEG_WITH_DNNL
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    struct Spot {
        size_t y, x;
        double v;
    };
    // (y, x) of a 9x12 plane: owned by window (2, 2) (inner), by window row 0 and read by window
    // row 1, by window column 0 and read by window column 1; the last two: +inf and -inf.
    const std::vector<std::vector<Spot>> spots = {
            {}, {{5, 4, nan}}, {{1, 5, nan}}, {{4, 1, nan}}, {{3, 3, inf}, {6, 7, -inf}}};
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        std::mt19937 rng(static_cast<uint32_t>(target % 1000) + 9);
        for (size_t layout = 0; layout < 4; ++layout)
            for (const auto& put : spots) {
                const size_t block = layout == 0 ? 8 : layout == 1 ? 16 : 0;
                const size_t c = layout == 2 ? 17 : layout == 3 ? 40 : 2 * block;
                const PoolCase k{{2, c, 9, 12}, {3, 3}, {2, 2}, {1, 1}};
                const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
                const TensorShape d = dst_shape(k);
                auto make = [&](const TensorShape& s) {
                    if (!block)
                        return channels_last(s);
                    TensorShape b{s[0], s[1] / block, s[2], s[3], block};
                    return channel_blocked::blocks_as_planes(TensorLayout(b, dtype::Float32));
                };
                const TensorLayout xl = make(k.src), dl = make(d);
                // Finite values with ties (-0 and +0, equal maxima): each window's winner by the
                // untested compares.
                const double choices[] = {-0.0, 0.0, -1.0, 0.5, 0.5, 0.25, -2.0, 1.5};
                std::vector<double> xv(xl.total_nr_elems());
                for (double& v : xv)
                    v = choices[rng() % 8];
                // Logical (n, lanes, H, W) of the plane layout; the spots in the middle channel
                // of the first plane (a whole vector but for blocks of 8 at AVX-512) and the
                // last of the last (the partial vector of 17 and 40 lanes at AVX-512).
                const size_t lanes = xl[1], H = xl[2], W = xl[3];
                for (const Spot& s : put) {
                    xv[(lanes / 2) * H * W + s.y * W + s.x] = s.v;
                    xv[((xl[0] - 1) * lanes + lanes - 1) * H * W + s.y * W + s.x] = s.v;
                }
                HostTensor x = with_values(xl, xv);
                HostTensor dy = with_values(dl, exact_grads(dl.total_nr_elems(), rng));
                HostTensor got, want;
                const std::string what = "target " + std::to_string(target) + " lanes " +
                                         std::to_string(lanes) + (block ? " blocked" : "") +
                                         " spots " + std::to_string(put.size()) +
                                         (put.empty() ? ""
                                                      : " at " + std::to_string(put[0].y) + "," +
                                                                std::to_string(put[0].x));
                EXPECT_EQ(run_both(*handle, p, x, dy, xl, got, want), kLanesLoop) << what;
                expect_same_bits(got, want, what);
                ++runs;
            }
    });
    EXPECT_GE(ran, 1u);  // an ISA cap leaves fewer targets
    EXPECT_GT(runs, 0u);
#endif
}

namespace {

constexpr const char* kRowsLoop = "loop:max_pool_backward_rows";

// A plain NCHW layout of shape s whose rows are `gap` elements apart beyond their W (0:
// contiguous).
TensorLayout padded_rows(const TensorShape& s, size_t gap) {
    TensorLayout l(s, dtype::Float32);
    l.stride[3] = 1;
    l.stride[2] = static_cast<ptrdiff_t>(s[3] + gap);
    l.stride[1] = l.stride[2] * static_cast<ptrdiff_t>(s[2]);
    l.stride[0] = l.stride[1] * static_cast<ptrdiff_t>(s[1]);
    return l;
}

// src's values, most of them -inf: windows of nothing else, whose gradient naive gives to their
// first element that is not padding.
std::vector<double> mostly_minus_inf(size_t n, std::mt19937& rng) {
    std::vector<double> v(n, -std::numeric_limits<double>::infinity());
    for (double& x : v)
        if (rng() % 5 == 0)
            x = rng() % 2 ? -0.0 : 0.0;
    return v;
}

// Gradients for 16-bit sums that round: 1 + 2^-8 lies halfway between two bfloat16 values
// (nearest even: 1), 1 + 3 * 2^-8 too (up), and a NaN now and then (a quiet NaN); any four add
// exactly in float32 and in naive's double.
std::vector<double> rounding_grads(size_t n, std::mt19937& rng) {
    const double choices[] = {1.0, 0x1p-8, 3 * 0x1p-8, 0x1p-9, -1.0, 0.5, -0x1p-8, -0.0};
    std::vector<double> v(n);
    for (double& x : v)
        x = rng() % 41 == 0 ? std::numeric_limits<double>::quiet_NaN() : choices[rng() % 8];
    return v;
}

}  // namespace

// 3x3/2 pad 1 on plain NCHW planes (max_pool_rows_backward_hwy.h) at each Highway target, bit for
// bit: widths around each vector width (the vectors whole, cut at either end, the column past the
// last window's; 530: edge steps past those whose masks the loop makes once per call), heights 1
// to 8, rows with gaps between them; ties between -0 and +0 and between equal maxima, NaNs,
// infinities, windows of -inf alone.
TEST_F(X86, MaxPoolingRowsBackwardBitExact) {
#ifdef NEOMEG_WITH_DNNL
    const size_t widths[] = {1,  2,  3,  4,  5,  7,  8,  9,  15, 16, 17,  31, 32,
                             33, 34, 35, 56, 57, 64, 65, 66, 67, 97, 130, 530};
    const size_t heights[] = {1, 2, 3, 5, 8};
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        std::mt19937 rng(static_cast<uint32_t>(target % 1000) + 5);
        for (size_t w : widths)
            for (size_t h : heights)
                for (int values = 0; values < 3; ++values) {
                    const size_t gap = (w + h) % 3 == 0 ? 3 : 0;
                    const PoolCase k{{1, 2, h, w}, {3, 3}, {2, 2}, {1, 1}};
                    const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
                    const TensorShape d = dst_shape(k);
                    const size_t n = k.src.total_nr_elems();
                    HostTensor x = with_values(padded_rows(k.src, gap),
                                               values == 2 ? mostly_minus_inf(n, rng)
                                                           : tied_values(n, values == 1, rng));
                    HostTensor dy = with_values(padded_rows(d, gap % 2),
                                                exact_grads(d.total_nr_elems(), rng));
                    HostTensor got, want;
                    const std::string kernel =
                            run_both(*handle, p, x, dy, padded_rows(k.src, gap), got, want);
                    const std::string what = "target " + std::to_string(target) + " " +
                                             k.src.to_string() + " gap " + std::to_string(gap) +
                                             " values " + std::to_string(values);
                    // A contiguous 1x1 plane has its channels adjacent too: the lanes loop.
                    if (h * w != 1 || gap != 0) {
                        EXPECT_EQ(kernel, kRowsLoop) << what;
                    }
                    expect_same_bits(got, want, what);
                    ++runs;
                }
    });
    EXPECT_GE(ran, 1u);  // an ISA cap leaves fewer targets
    EXPECT_GT(runs, 0u);
#endif
}

// float32 planes with no NaN and not both infinities, which the strips' untested pass computes
// and no plane reruns (the NaN-rich planes of MaxPoolingRowsBackwardBitExact rerun): every width
// 1 to 70 and wider ones (strips whole, cut, the odd column past the last window's), heights
// around the bands of window rows the strips walk (8 a band: 15-18, 33, 34) and small ones, rows
// with gaps; ties between -0 and +0 and equal maxima, windows of -inf alone, +inf without -inf.
TEST_F(X86, MaxPoolingRowsBackwardFinitePlanesInStrips) {
#ifdef NEOMEG_WITH_DNNL
    std::vector<size_t> widths;
    for (size_t w = 1; w <= 70; ++w)
        widths.push_back(w);
    for (size_t w : {97, 130, 530})
        widths.push_back(w);
    const size_t heights[] = {1, 2, 3, 4, 16, 17, 18, 34};
    const double inf = std::numeric_limits<double>::infinity();
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        std::mt19937 rng(static_cast<uint32_t>(target % 1000) + 37);
        for (size_t w : widths)
            for (size_t h : heights)
                for (int values = 0; values < 3; ++values) {
                    if (w > 130 && h > 4)
                        continue;
                    const size_t gap = (w + h) % 3 == 0 ? 5 : 0;
                    const PoolCase k{{1, 2, h, w}, {3, 3}, {2, 2}, {1, 1}};
                    const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
                    const TensorShape d = dst_shape(k);
                    const size_t n = k.src.total_nr_elems();
                    std::vector<double> xv;
                    if (values == 2) {
                        xv = mostly_minus_inf(n, rng);
                    } else {
                        const double choices[] = {-0.0, 0.0, -1.0, 0.5, 0.5, 0.25, -2.0, inf};
                        xv.resize(n);
                        for (double& v : xv)
                            v = choices[rng() % (values == 1 ? 8 : 7)];
                    }
                    HostTensor x = with_values(padded_rows(k.src, gap), xv);
                    HostTensor dy = with_values(padded_rows(d, gap % 2),
                                                exact_grads(d.total_nr_elems(), rng));
                    HostTensor got, want;
                    const std::string kernel =
                            run_both(*handle, p, x, dy, padded_rows(k.src, gap), got, want);
                    const std::string what = "target " + std::to_string(target) + " " +
                                             k.src.to_string() + " gap " + std::to_string(gap) +
                                             " values " + std::to_string(values);
                    if (h * w != 1 || gap != 0) {
                        EXPECT_EQ(kernel, kRowsLoop) << what;
                    }
                    expect_same_bits(got, want, what);
                    ++runs;
                }
    });
    EXPECT_GE(ran, 1u);  // an ISA cap leaves fewer targets
    EXPECT_GT(runs, 0u);
#endif
}

// The benchmark's shape, several images and channels across threads, and random gradients (sums
// that round): within float32's rounding of naive's double sums; a NaN in one plane.
TEST_F(X86, MaxPoolingRowsBackwardRandom) {
    std::mt19937 rng(13);
    for (const TensorShape& s : {TensorShape{2, 5, 56, 56}, TensorShape{3, 4, 29, 37}})
        for (bool nans : {false, true}) {
            const PoolCase k{s, {3, 3}, {2, 2}, {1, 1}};
            const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
            const TensorShape d = dst_shape(k);
            std::uniform_real_distribution<double> u(-1, 1);
            std::vector<double> g(d.total_nr_elems()), xv(s.total_nr_elems());
            for (double& v : g)
                v = u(rng);
            for (double& v : xv)
                v = u(rng);
            if (nans)
                xv[xv.size() / 3] = std::numeric_limits<double>::quiet_NaN();
            HostTensor x = with_values(TensorLayout(s, dtype::Float32), xv);
            HostTensor dy = with_values(TensorLayout(d, dtype::Float32), g);
            HostTensor got, want;
            EXPECT_EQ(run_both(*handle, p, x, dy, TensorLayout(s, dtype::Float32), got, want),
                      kRowsLoop);
            EXPECT_TRUE(tensors_near(got, want, 1e-6)) << s.to_string();
        }
}

// bfloat16 and float16 planes at each Highway target, bit for bit with naive (the gradients' sums
// are exact in either dtype, or for bfloat16 halfway between two values and NaN), NaNs and ties
// among the values: bfloat16 runs the row loop on its bits (staged rows read as pairs of
// columns), float16 (no oneDNN kernel) the float32 row loop between conversions.
TEST_F(X86, MaxPoolingRowsBackwardSixteenBit) {
#ifdef NEOMEG_WITH_DNNL
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        std::mt19937 rng(static_cast<uint32_t>(target % 1000) + 9);
        for (DType dt : {DType(dtype::BFloat16), DType(dtype::Float16)})
            for (const TensorShape& s :
                 {TensorShape{2, 3, 9, 17}, TensorShape{1, 2, 56, 56}, TensorShape{1, 1, 1, 33},
                  TensorShape{1, 2, 5, 1}, TensorShape{1, 1, 4, 2}, TensorShape{1, 1, 7, 31},
                  TensorShape{1, 1, 6, 64}, TensorShape{1, 1, 3, 65}, TensorShape{1, 1, 5, 130}})
                for (int values = 0; values < 4; ++values) {
                    const PoolCase k{s, {3, 3}, {2, 2}, {1, 1}};
                    const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
                    const TensorShape d = dst_shape(k);
                    const size_t n = s.total_nr_elems();
                    HostTensor x = with_values(TensorLayout(s, dt),
                                               values == 2 ? mostly_minus_inf(n, rng)
                                                           : tied_values(n, values == 1, rng));
                    // values 3: the tied values again, with gradients whose sums round.
                    HostTensor dy = with_values(TensorLayout(d, dt),
                                                values == 3 && dt == dtype::BFloat16
                                                        ? rounding_grads(d.total_nr_elems(), rng)
                                                        : exact_grads(d.total_nr_elems(), rng));
                    // A NaN with a payload: naive's conversion (Eigen) gives 0x7FC0 for any NaN.
                    if (values == 3 && dt == dtype::BFloat16) {
                        auto* bits = static_cast<uint16_t*>(dy.nd().raw_ptr());
                        for (size_t i = 5; i < d.total_nr_elems(); i += 37)
                            bits[i] = 0x7FA5;
                    }
                    HostTensor got, want;
                    const std::string kernel =
                            run_both(*handle, p, x, dy, TensorLayout(s, dt), got, want);
                    const std::string what = "target " + std::to_string(target) + " " + dt.name() +
                                             " " + s.to_string() + " values " +
                                             std::to_string(values);
                    if (dt == dtype::BFloat16) {
                        EXPECT_EQ(kernel, kRowsLoop) << what;
                    } else if (!kernel.starts_with("onednn:")) {
                        EXPECT_EQ(kernel, "loop:f32:max_pool_backward_rows") << what;
                    }
                    expect_same_bits(got, want, what);
                    ++runs;
                }
    });
    EXPECT_GE(ran, 1u);
    EXPECT_GT(runs, 0u);
#endif
}

// The rows loop tests no step for NaN: each adds the elements whose window it alone holds, and a
// NaN among them (or +inf with -inf) sends the plane to a rerun that tests every step. One NaN
// at each position of a plane of finite values (ties among them), then +inf and -inf, float32
// and bfloat16, at each Highway target, bit for bit: a NaN in any row or column, padding's
// neighbours and a cut vector's lanes included, must reach naive's rule.
TEST_F(X86, MaxPoolingRowsBackwardOneNaNInAFinitePlane) {
#ifdef NEOMEG_WITH_DNNL
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        std::mt19937 rng(static_cast<uint32_t>(target % 1000) + 21);
        for (DType dt : {DType(dtype::Float32), DType(dtype::BFloat16)})
            for (const TensorShape& s : {TensorShape{1, 2, 7, 9}, TensorShape{1, 1, 6, 34}}) {
                const PoolCase k{s, {3, 3}, {2, 2}, {1, 1}};
                const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
                const TensorShape d = dst_shape(k);
                const size_t n = s.total_nr_elems(), plane = s[2] * s[3];
                const double choices[] = {-0.0, 0.0, -1.0, 0.5, 0.5, 0.25, -2.0, 1.5};
                // at == n: +inf and -inf in the last plane; otherwise a NaN at `at`.
                for (size_t at = n - plane; at <= n; ++at) {
                    std::vector<double> xv(n);
                    for (double& v : xv)
                        v = choices[rng() % 8];
                    if (at < n) {
                        xv[at] = nan;
                    } else {
                        xv[n - plane + 3] = inf;
                        xv[n - 2] = -inf;
                    }
                    HostTensor x = with_values(TensorLayout(s, dt), xv);
                    HostTensor dy =
                            with_values(TensorLayout(d, dt), exact_grads(d.total_nr_elems(), rng));
                    HostTensor got, want;
                    const std::string what = "target " + std::to_string(target) + " " + dt.name() +
                                             " " + s.to_string() + " at " + std::to_string(at);
                    EXPECT_EQ(run_both(*handle, p, x, dy, TensorLayout(s, dt), got, want),
                              kRowsLoop)
                            << what;
                    expect_same_bits(got, want, what);
                    ++runs;
                }
            }
    });
    EXPECT_GE(ran, 1u);
    EXPECT_GT(runs, 0u);
#endif
}

// Runs of planes as one call (max_pool_plan.cpp: where the planes lie evenly spaced in src, diff
// and grad, a thread's run of them goes to the kernel as its depth slices) and planes one at a
// time where they do not: several images and channels, one channel (images as the planes),
// channels 1-4 of 6, 3-D windows of depth 1 over dense depth slices and over slices with gaps, at
// one and three threads (runs that start inside an image), tensors in the caches (strips down
// whole planes) and past them (bands of window rows), each Highway target, bit for bit against
// naive: finite values (the strips) and NaN-rich ones (planes rerun inside a run).
TEST_F(X86, MaxPoolingRowsBackwardRunsOfPlanes) {
#ifdef NEOMEG_WITH_DNNL
    struct Case {
        TensorShape src;
        std::vector<ptrdiff_t> strides;  // src's and grad's; empty: contiguous
    };
    const Case cases[] = {
            {{4, 4, 56, 56}, {}},
            {{5, 1, 7, 12}, {}},
            {{3, 4, 9, 13}, {6 * 117, 117, 13, 1}},
            {{2, 3, 4, 7, 9}, {}},
            {{2, 3, 4, 7, 9}, {3 * 300 + 11, 300, 70, 10, 1}},
            // Past the 4 MB the plan counts as cached: the strips walk bands of window rows
            // (38 window rows: four bands of 8 and one of 6), even and odd widths.
            {{2, 48, 75, 70}, {}},
            {{1, 96, 75, 71}, {}},
    };
    auto layout = [](const TensorShape& s, const std::vector<ptrdiff_t>& strides) {
        TensorLayout l(s, dtype::Float32);
        for (size_t i = 0; i < strides.size(); ++i)
            l.stride[i] = strides[i];
        return l;
    };
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        std::mt19937 rng(static_cast<uint32_t>(target % 1000) + 43);
        for (int threads : {1, 3}) {
            ScopedOmpThreads scope(threads);
            for (const Case& c : cases)
                for (bool nans : {false, true}) {
                    const bool deep = c.src.ndim == 5;
                    const PoolCase k{
                            c.src,
                            deep ? std::vector<int32_t>{1, 3, 3} : std::vector<int32_t>{3, 3},
                            deep ? std::vector<int32_t>{1, 2, 2} : std::vector<int32_t>{2, 2},
                            deep ? std::vector<int32_t>{0, 1, 1} : std::vector<int32_t>{1, 1}};
                    const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
                    const TensorShape d = dst_shape(k);
                    const size_t n = c.src.total_nr_elems();
                    std::vector<double> xv = tied_values(n, nans, rng);
                    if (!nans)
                        for (double& v : xv)
                            v = std::isinf(v) ? 1.5 : v;  // no +inf with -inf: no rerun
                    HostTensor x = with_values(layout(c.src, c.strides), xv);
                    HostTensor dy = with_values(TensorLayout(d, dtype::Float32),
                                                exact_grads(d.total_nr_elems(), rng));
                    HostTensor got, want;
                    const std::string kernel =
                            run_both(*handle, p, x, dy, layout(c.src, c.strides), got, want);
                    const std::string what = "target " + std::to_string(target) + " threads " +
                                             std::to_string(threads) + " " + c.src.to_string() +
                                             (c.strides.empty() ? "" : " strided") +
                                             (nans ? " nans" : "");
                    EXPECT_EQ(kernel, kRowsLoop) << what;
                    expect_same_bits(got, want, what);
                    ++runs;
                }
        }
    });
    EXPECT_GE(ran, 1u);
    EXPECT_GT(runs, 0u);
#endif
}

namespace {

// Where logical element i (row-major over l's shape) lies in l's memory, in elements.
ptrdiff_t memory_offset(const TensorLayout& l, size_t i) {
    ptrdiff_t off = 0;
    for (size_t a = l.ndim; a-- > 0;) {
        off += static_cast<ptrdiff_t>(i % l[a]) * l.stride[a];
        i /= l[a];
    }
    return off;
}

// bfloat16 src values for the lanes loop: ties (-0 with +0, equal maxima), infinities, windows
// of -inf alone, and with `nans` NaNs of either sign.
std::vector<double> tied_bf16_values(size_t n, bool nans, std::mt19937& rng) {
    std::vector<double> v = tied_values(n, false, rng);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (nans)
        for (size_t i = rng() % 7; i < n; i += 5 + rng() % 11)
            v[i] = rng() % 2 ? nan : -nan;
    return v;
}

}  // namespace

// bfloat16 3x3/2 pad 1 on channels-last views and blocks seen as planes (the lanes loop on
// 32-bit pairs of lanes: even lanes by a shift, odd ones by a mask) at each Highway target, bit
// for bit against naive: channel counts around a chunk of pairs (16 lanes at AVX2, 32 at AVX-512,
// 8 at EMU128; odd ones split a pair) and of half one (blocks of 16 at AVX-512), planes of odd
// and even heights and widths, one image or two, positions with gaps; tied values, NaNs of either
// sign, infinities, windows of -inf alone; gradients of -0, sums that round to bfloat16 (halfway
// between two values) and NaN gradients with a payload.
TEST_F(X86, MaxPoolingLanesBackwardBFloat16BitExact) {
#ifdef NEOMEG_WITH_DNNL
    const TensorShape planes[] = {{7, 9}, {8, 8}, {1, 6}, {5, 1}, {2, 2}, {6, 11}};
    const size_t channels[] = {2, 3, 8, 15, 16, 17, 31, 32, 33, 64, 65};
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        std::mt19937 rng(static_cast<uint32_t>(target % 1000) + 31);
        // layout: 0 channels-last, 1 with gaps, 2 blocks of 16 seen as planes, 3 blocks of 8.
        for (int layout = 0; layout < 4; ++layout)
            for (const TensorShape& hw : planes)
                for (size_t c : channels)
                    for (int values = 0; values < 4; ++values) {
                        const size_t block = layout == 2 ? 16 : layout == 3 ? 8 : 0;
                        if (block && (c % block != 0 || c > 32))
                            continue;
                        const size_t n = c % 2 ? 1 : 2, gap = layout == 1 ? 3 : 0;
                        const PoolCase k{{n, c, hw[0], hw[1]}, {3, 3}, {2, 2}, {1, 1}};
                        const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
                        auto make = [&](const TensorShape& s) {
                            if (!block)
                                return channels_last(s, gap, dtype::BFloat16);
                            TensorShape b{s[0], s[1] / block, s[2], s[3], block};
                            return channel_blocked::blocks_as_planes(
                                    TensorLayout(b, dtype::BFloat16));
                        };
                        const TensorLayout xl = make(k.src), dl = make(dst_shape(k));
                        // values: 0 finite src, exact sums; 1 NaNs in src; 2 NaNs in both, sums
                        // that round; 3 sums that round, no NaN (the pass that tests none).
                        const bool src_nans = values == 1 || values == 2;
                        HostTensor x = with_values(
                                xl, tied_bf16_values(xl.total_nr_elems(), src_nans, rng));
                        std::vector<double> g = values >= 2
                                                        ? rounding_grads(dl.total_nr_elems(), rng)
                                                        : exact_grads(dl.total_nr_elems(), rng);
                        if (values == 3)
                            for (double& v : g)
                                v = std::isnan(v) ? 1.0 : v;
                        HostTensor dy = with_values(dl, g);
                        // NaN gradients with a payload (naive's conversion gives 0x7FC0), of
                        // one sign per channel: two NaNs of opposite signs in one sum give
                        // either sign (the order of an add's operands, the compiler's choice).
                        if (values == 2) {
                            auto* bits = static_cast<uint16_t*>(dy.nd().raw_ptr());
                            const size_t plane = dl[2] * dl[3];
                            for (size_t i = 0; i < dl.total_nr_elems(); ++i) {
                                uint16_t& b = bits[memory_offset(dl, i)];
                                const auto sign =
                                        static_cast<uint16_t>((i / plane) % dl[1] % 2 ? 0x8000 : 0);
                                if (i % 29 == 3 || (b & 0x7FFF) > 0x7F80)
                                    b = static_cast<uint16_t>((i % 29 == 3 ? 0x7FA5 : 0x7FC0) |
                                                              sign);
                            }
                        }
                        HostTensor got, want;
                        const std::string what = "target " + std::to_string(target) + " layout " +
                                                 std::to_string(layout) + " " + k.src.to_string() +
                                                 " values " + std::to_string(values);
                        EXPECT_EQ(run_both(*handle, p, x, dy, xl, got, want), kLanesLoop) << what;
                        expect_same_bits(got, want, what);
                        ++runs;
                    }
    });
    EXPECT_GE(ran, 1u);  // an ISA cap leaves fewer targets
    EXPECT_GT(runs, 0u);
#endif
}

// The bfloat16 lanes loop's inner windows test no tap for NaN (the owned elements' sum, then a
// rerun of the plane): one NaN at every position of a plane of finite tied values, in an even
// and an odd lane of a pair, in a whole chunk and the partial one, then +inf with -inf; each
// bit for bit against naive at each Highway target.
TEST_F(X86, MaxPoolingLanesBackwardBFloat16NaNAtEveryPosition) {
#ifdef NEOMEG_WITH_DNNL
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        std::mt19937 rng(static_cast<uint32_t>(target % 1000) + 41);
        for (size_t c : {size_t(33), size_t(64)})
            for (const TensorShape& hw : {TensorShape{7, 9}, TensorShape{6, 8}}) {
                const PoolCase k{{1, c, hw[0], hw[1]}, {3, 3}, {2, 2}, {1, 1}};
                const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
                const TensorLayout xl = channels_last(k.src, 0, dtype::BFloat16),
                                   dl = channels_last(dst_shape(k), 0, dtype::BFloat16);
                const double choices[] = {-0.0, 0.0, -1.0, 0.5, 0.5, 0.25, -2.0, 1.5};
                const size_t plane = hw[0] * hw[1];
                // at == plane: +inf and -inf; otherwise a NaN at position `at` (y * W + x).
                for (size_t at = 0; at <= plane; ++at) {
                    std::vector<double> xv(xl.total_nr_elems());
                    for (double& v : xv)
                        v = choices[rng() % 8];
                    // Logical (1, c, H, W): channels 5 (odd lane of a whole chunk), 20 (even)
                    // and c - 1 (the last: the partial chunk for 33).
                    for (size_t ch : {size_t(5), size_t(20), c - 1}) {
                        if (at < plane) {
                            xv[ch * plane + at] = ch % 2 ? -nan : nan;
                        } else {
                            xv[ch * plane + 4] = inf;
                            xv[ch * plane + plane - 3] = -inf;
                        }
                    }
                    HostTensor x = with_values(xl, xv);
                    HostTensor dy = with_values(dl, exact_grads(dl.total_nr_elems(), rng));
                    HostTensor got, want;
                    const std::string what = "target " + std::to_string(target) + " " +
                                             k.src.to_string() + " at " + std::to_string(at);
                    EXPECT_EQ(run_both(*handle, p, x, dy, xl, got, want), kLanesLoop) << what;
                    expect_same_bits(got, want, what);
                    ++runs;
                }
            }
    });
    EXPECT_GE(ran, 1u);
    EXPECT_GT(runs, 0u);
#endif
}

// A bfloat16 grad of 8 MiB or more is stored around the caches (non-temporal stores of whole
// aligned lines: a chunk of lanes that fills them, 32 at AVX-512); bit for bit against naive at
// each Highway target, with and without NaNs (the plane's rerun stores again), on a line-aligned
// grad and on HostTensor's (not aligned: plain stores, without NaNs).
TEST_F(X86, MaxPoolingLanesBackwardBFloat16PastTheCaches) {
#ifdef NEOMEG_WITH_DNNL
    size_t runs = 0;
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t target) {
        std::mt19937 rng(static_cast<uint32_t>(target % 1000) + 51);
        const PoolCase k{{1, 64, 257, 262}, {3, 3}, {2, 2}, {1, 1}};  // 8.6 MB of grad
        const param::Pooling p = pool_param(param::Pooling::Mode::MAX, k);
        const TensorLayout xl = channels_last(k.src, 0, dtype::BFloat16),
                           dl = channels_last(dst_shape(k), 0, dtype::BFloat16);
        ASSERT_GE(xl.span_bytes(), size_t(8) << 20);
        // (NaNs, line-aligned grad): the streamed pass, its rerun, plain stores.
        for (auto [nans, aligned] : {std::pair{false, true}, {true, true}, {false, false}}) {
            HostTensor x = with_values(xl, tied_bf16_values(xl.total_nr_elems(), nans, rng));
            HostTensor dy = with_values(dl, exact_grads(dl.total_nr_elems(), rng));
            HostTensor got, want;
            const std::string what = "target " + std::to_string(target) + (nans ? " nans" : "") +
                                     (aligned ? " aligned" : "");
            EXPECT_EQ(run_both(*handle, p, x, dy, xl, got, want, aligned), kLanesLoop) << what;
            expect_same_bits(got, want, what);
            ++runs;
        }
    });
    EXPECT_GE(ran, 1u);
    EXPECT_GT(runs, 0u);
#endif
}
