#include "src/x86/depthwise_conv.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "src/x86/depthwise_3x3_avx512_hwy.h"
#include "src/x86/depthwise_direct_hwy.h"
#include "src/x86/depthwise_grad_data_hwy.h"
#include "src/x86/depthwise_hwy.h"
#include "src/x86/parallel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

// Where the planes of an (N, C, [H,] W) tensor lie: plane (n, c) starts n * sn + c * sc elements
// in, its rows sr apart, its columns adjacent.
struct Planes {
    ptrdiff_t sn = 0, sc = 0, sr = 0;
};

// A depthwise convolution between x (N, IC, h, w), the input side (src, or backward data's grad)
// and y (N, IC * mult, oh, ow), the output side (dst or diff); 1-D as 2-D with one row.
struct DwGeom {
    size_t n = 0, ic = 0, mult = 0, h = 1, w = 0, oh = 1, ow = 0;
    size_t kh = 1, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
    bool flip = false;
    Planes x, y;
    ptrdiff_t f_oc = 0, f_y = 0, f_x = 0;  // the filter's strides

    size_t taps() const { return kh * kw; }
    DwTaps forward_taps() const { return {kh, kw, sh, sw, dh, dw}; }
};

Planes planes_of(const TensorLayout& l) {
    return {l.stride[0], l.stride[1], l.ndim == 4 ? l.stride[2] : 0};
}

// Unit stride along W where W has more than one element: the loops read and write rows whole.
bool rows_dense(const TensorLayout& l) {
    return l[l.ndim - 1] == 1 || l.stride[l.ndim - 1] == 1;
}

std::optional<DwGeom> dw_geometry(const ConvArgs& a, const TensorLayout& x,
                                  const TensorLayout& filter, const TensorLayout& y) {
    if (x.ndim != 3 && x.ndim != 4)
        return std::nullopt;
    for (const TensorLayout* l : {&x, &filter, &y})
        if (l->ndim != x.ndim || l->dtype != dtype::Float32 || l->is_empty())
            return std::nullopt;
    size_t ic = x[1];
    if (a.group != ic || filter[1] != 1 || filter[0] % ic != 0 || y[1] != filter[0] ||
        y[0] != x[0] || !rows_dense(x) || !rows_dense(y))
        return std::nullopt;
    DwGeom g;
    bool two = x.ndim == 4;
    g.n = x[0];
    g.ic = ic;
    g.mult = filter[0] / ic;
    g.w = x[x.ndim - 1];
    g.ow = y[y.ndim - 1];
    g.kw = filter[filter.ndim - 1];
    size_t last = two ? 1 : 0;
    g.sw = static_cast<size_t>(a.stride[last]);
    g.pw = static_cast<size_t>(a.padding[last]);
    g.dw = static_cast<size_t>(a.dilation[last]);
    if (two) {
        g.h = x[2];
        g.oh = y[2];
        g.kh = filter[2];
        g.sh = static_cast<size_t>(a.stride[0]);
        g.ph = static_cast<size_t>(a.padding[0]);
        g.dh = static_cast<size_t>(a.dilation[0]);
        g.f_y = filter.stride[2];
    }
    g.flip = a.flip;
    g.x = planes_of(x);
    g.y = planes_of(y);
    g.f_oc = filter.stride[0];
    g.f_x = filter.stride[filter.ndim - 1];
    return g;
}

// Per output channel, its taps as the forward loops apply them: tap (ky, kx) reads the input at
// offset (ky * dh, kx * dw) from the window's corner, so the flipped mode reads the filter
// reversed. `reverse` reverses them again (backward data correlates diff with the reversed taps).
std::vector<float> tap_weights(const DwGeom& g, const float* filter, bool reverse) {
    std::vector<float> w(g.ic * g.mult * g.taps());
    bool rev = g.flip != reverse;
    for (size_t oc = 0; oc < g.ic * g.mult; ++oc)
        for (size_t ky = 0; ky < g.kh; ++ky)
            for (size_t kx = 0; kx < g.kw; ++kx) {
                size_t ty = rev ? g.kh - 1 - ky : ky, tx = rev ? g.kw - 1 - kx : kx;
                w[(oc * g.kh + ky) * g.kw + kx] = filter[static_cast<ptrdiff_t>(oc) * g.f_oc +
                                                         static_cast<ptrdiff_t>(ty) * g.f_y +
                                                         static_cast<ptrdiff_t>(tx) * g.f_x];
            }
    return w;
}

// The padded copy of a plane (h x w, rows sr apart): P(r, c) = plane(r - top, c - left) inside
// it and 0 outside, for r < rows, c < cols, its columns split by phase for a stride of sw.
DwPadded pad_plane(const float* src, ptrdiff_t sr, size_t h, size_t w, ptrdiff_t top,
                   ptrdiff_t left, size_t rows, size_t cols, size_t sw, std::vector<float>& buf,
                   const float* ahead = nullptr) {
    size_t wq = (cols + sw - 1) / sw, phase = rows * wq;
    if (buf.size() < sw * phase + kDwSlack)
        buf.resize(sw * phase + kDwSlack);
    float* p = buf.data();
    auto ih = static_cast<ptrdiff_t>(h), iw = static_cast<ptrdiff_t>(w);
    // The columns of P that hold the plane's: [lo, hi).
    auto clamp = [&](ptrdiff_t c) { return std::clamp<ptrdiff_t>(c, 0, ptrdiff_t(cols)); };
    size_t lo = static_cast<size_t>(clamp(left)), hi = static_cast<size_t>(clamp(left + iw));
    for (size_t r = 0; r < rows; ++r) {
        ptrdiff_t y = static_cast<ptrdiff_t>(r) - top;
        if (y < 0 || y >= ih) {
            for (size_t ph = 0; ph < sw; ++ph)
                std::fill_n(p + ph * phase + r * wq, wq, 0.f);
            continue;
        }
        const float* s = src + y * sr;
        if (ahead)
            for (size_t i = 0; i < w; i += 16)
                __builtin_prefetch(ahead + y * sr + static_cast<ptrdiff_t>(i));
        if (sw == 1) {
            float* d = p + r * wq;
            std::fill_n(d, lo, 0.f);
            if (hi > lo)
                std::memcpy(d + lo, s + (static_cast<ptrdiff_t>(lo) - left),
                            (hi - lo) * sizeof(float));
            std::fill_n(d + std::max(lo, hi), cols - std::max(lo, hi), 0.f);
            continue;
        }
        for (size_t ph = 0; ph < sw; ++ph) {
            float* d = p + ph * phase + r * wq;
            for (size_t j = 0; j < wq; ++j) {
                size_t c = j * sw + ph;
                d[j] = c >= lo && c < hi ? s[static_cast<ptrdiff_t>(c) - left] : 0.f;
            }
        }
    }
    std::fill_n(p + sw * phase, kDwSlack, 0.f);
    return {p, wq, phase, sw};
}

// Each thread's buffer for the padded planes, kept between calls.
std::vector<float>& pad_buffer() {
    thread_local std::vector<float> buf;
    return buf;
}

const float* plane(const float* base, const Planes& p, size_t n, size_t c) {
    return base + static_cast<ptrdiff_t>(n) * p.sn + static_cast<ptrdiff_t>(c) * p.sc;
}

float* plane(float* base, const Planes& p, size_t n, size_t c) {
    return base + static_cast<ptrdiff_t>(n) * p.sn + static_cast<ptrdiff_t>(c) * p.sc;
}

// Asks for the lines of a plane that a later step reads (the planes of one channel lie far apart,
// where the hardware prefetchers do not look).
void prefetch_plane(const float* p, ptrdiff_t sr, size_t h, size_t w) {
    for (size_t r = 0; r < h; ++r)
        for (size_t i = 0; i < w; i += 16)
            __builtin_prefetch(p + static_cast<ptrdiff_t>(r) * sr + static_cast<ptrdiff_t>(i));
}

// The forward window's padded copy of x's plane (n, c).
DwPadded forward_padded(const DwGeom& g, const float* x, size_t n, size_t c,
                        const float* ahead = nullptr) {
    size_t rows = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1;
    size_t cols = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
    return pad_plane(plane(x, g.x, n, c), g.x.sr, g.h, g.w, static_cast<ptrdiff_t>(g.ph),
                     static_cast<ptrdiff_t>(g.pw), rows, cols, g.sw, pad_buffer(), ahead);
}

size_t work_of(const DwGeom& g) {
    return g.n * g.ic * g.mult * g.oh * g.ow * g.taps();
}

// Whether the call's input and output likely stay in the core's L2 between calls: up to 2 MiB of
// them (batch 1 of a 64 x 56 x 56 layer is 1.6 MiB). The 3x3 loops choose by it (DwSource::cached):
// 64 x 56 x 56, one thread, batch 1 0.056 -> 0.048 ms with the aligned copy, batch 32 1.98 ->
// 2.20 ms.
bool in_cache(const DwGeom& g) {
    return (g.n * g.ic * g.h * g.w + g.n * g.ic * g.mult * g.oh * g.ow) * sizeof(float) <=
           (size_t(2) << 20);
}

// x's plane (n, c) as the forward's windows read it in place.
DwSource forward_source(const DwGeom& g, const float* x, size_t n, size_t c) {
    auto top = static_cast<ptrdiff_t>(g.ph), left = static_cast<ptrdiff_t>(g.pw);
    return {plane(x, g.x, n, c), g.x.sr, g.h, g.w, top, left, in_cache(g)};
}

void forward(const DwGeom& g, const float* x, const float* filter, float* y) {
    std::vector<float> w = tap_weights(g, filter, false);
    const DwTaps taps = g.forward_taps();
    if (dw_direct_supported(taps)) {
        parallel_ranges(g.n * g.ic, work_of(g), kParallelGrain, [&](size_t b, size_t e) {
            for (size_t u = b; u < e; ++u) {
                size_t n = u / g.ic, c = u % g.ic;
                DwSource s = forward_source(g, x, n, c);
                // A strided window reads more input per output than the hardware prefetchers keep
                // up with from memory: asking for the next plane's lines ahead measured 4.2-5.0
                // -> 3.0-3.4 ms (3x3 stride 2, 128 x 56 x 56, batch 32, one thread); with a stride
                // of 1 it measured no better.
                if (u + 1 < e && !s.cached && (g.sh > 1 || g.sw > 1))
                    s.next = plane(x, g.x, (u + 1) / g.ic, (u + 1) % g.ic);
                for (size_t m = 0; m < g.mult; ++m) {
                    size_t oc = c * g.mult + m;
                    dw_direct_correlate(s, taps, w.data() + oc * g.taps(), plane(y, g.y, n, oc),
                                        g.y.sr, g.oh, g.ow, false);
                    s.next = nullptr;  // asked for once per input plane
                }
            }
        });
        return;
    }
    parallel_ranges(g.n * g.ic, work_of(g), kParallelGrain, [&](size_t b, size_t e) {
        for (size_t u = b; u < e; ++u) {
            size_t n = u / g.ic, c = u % g.ic;
            const float* ahead =
                    u + 1 < e ? plane(x, g.x, (u + 1) / g.ic, (u + 1) % g.ic) : nullptr;
            DwPadded p = forward_padded(g, x, n, c, ahead);
            for (size_t m = 0; m < g.mult; ++m) {
                size_t oc = c * g.mult + m;
                dw_correlate(p, g.forward_taps(), w.data() + oc * g.taps(), plane(y, g.y, n, oc),
                             g.y.sr, g.oh, g.ow, false);
            }
        }
    });
}

// With a stride of 1, x's gradient is diff padded by the window's extent less the padding,
// correlated with the reversed taps, summed over the channel's `mult` outputs.
void backward_data_correlate(const DwGeom& g, const float* filter, const float* dy, float* dx) {
    std::vector<float> w = tap_weights(g, filter, true);
    auto top = static_cast<ptrdiff_t>((g.kh - 1) * g.dh) - static_cast<ptrdiff_t>(g.ph);
    auto left = static_cast<ptrdiff_t>((g.kw - 1) * g.dw) - static_cast<ptrdiff_t>(g.pw);
    size_t rows = g.h + (g.kh - 1) * g.dh, cols = g.w + (g.kw - 1) * g.dw;
    DwTaps taps{g.kh, g.kw, 1, 1, g.dh, g.dw};
    if (dw_direct_supported(taps)) {
        parallel_ranges(g.n * g.ic, work_of(g), kParallelGrain, [&](size_t b, size_t e) {
            for (size_t u = b; u < e; ++u) {
                size_t n = u / g.ic, c = u % g.ic;
                for (size_t m = 0; m < g.mult; ++m) {
                    size_t oc = c * g.mult + m;
                    DwSource s{plane(dy, g.y, n, oc), g.y.sr, g.oh, g.ow, top, left, in_cache(g)};
                    dw_direct_correlate(s, taps, w.data() + oc * g.taps(), plane(dx, g.x, n, c),
                                        g.x.sr, g.h, g.w, m > 0);
                }
            }
        });
        return;
    }
    parallel_ranges(g.n * g.ic, work_of(g), kParallelGrain, [&](size_t b, size_t e) {
        for (size_t u = b; u < e; ++u) {
            size_t n = u / g.ic, c = u % g.ic;
            for (size_t m = 0; m < g.mult; ++m) {
                size_t oc = c * g.mult + m;
                DwPadded p = pad_plane(plane(dy, g.y, n, oc), g.y.sr, g.oh, g.ow, top, left, rows,
                                       cols, 1, pad_buffer());
                dw_correlate(p, taps, w.data() + oc * g.taps(), plane(dx, g.x, n, c), g.x.sr, g.h,
                             g.w, m > 0);
            }
        }
    });
}

// x's plane from the interior of a padded plane (rows x cols, split by phase as pad_plane's), 0
// where the padded plane ends first.
void unpad_plane(const DwGeom& g, const float* p, size_t rows, size_t cols, size_t wq, size_t phase,
                 float* out) {
    for (size_t iy = 0; iy < g.h; ++iy) {
        float* o = out + static_cast<ptrdiff_t>(iy) * g.x.sr;
        size_t r = iy + g.ph;
        if (r >= rows) {
            std::fill_n(o, g.w, 0.f);
            continue;
        }
        // Column ix + pw lies in phase (ix + pw) % sw at (ix + pw) / sw: each phase's columns
        // are every sw-th ix, adjacent in the copy.
        for (size_t ph = 0; ph < g.sw; ++ph) {
            size_t ix = (ph + g.sw - g.pw % g.sw) % g.sw;
            const float* s = p + ph * phase + r * wq + (ix + g.pw) / g.sw;
            for (; ix < g.w; ix += g.sw, ++s)
                o[ix] = ix + g.pw < cols ? *s : 0.f;
        }
    }
}

// With a stride, the forward's transpose: every output's taps add into a zeroed copy of the
// forward's padded plane (split by phase as the forward reads it), whose interior is then x's
// gradient; positions no window reads (a preset larger input) get 0.
void backward_data_scatter(const DwGeom& g, const float* filter, const float* dy, float* dx) {
    std::vector<float> w = tap_weights(g, filter, false);
    size_t rows = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1;
    size_t cols = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
    size_t wq = (cols + g.sw - 1) / g.sw, phase = rows * wq;
    parallel_ranges(g.n * g.ic, work_of(g), kParallelGrain, [&](size_t b, size_t e) {
        std::vector<float>& buf = pad_buffer();
        if (buf.size() < g.sw * phase + kDwSlack)
            buf.resize(g.sw * phase + kDwSlack);
        DwPadded p{buf.data(), wq, phase, g.sw};
        for (size_t u = b; u < e; ++u) {
            size_t n = u / g.ic, c = u % g.ic;
            std::fill_n(buf.data(), g.sw * phase + kDwSlack, 0.f);
            for (size_t m = 0; m < g.mult; ++m) {
                size_t oc = c * g.mult + m;
                dw_scatter(p, g.forward_taps(), w.data() + oc * g.taps(), plane(dy, g.y, n, oc),
                           g.y.sr, g.oh, g.ow);
            }
            unpad_plane(g, buf.data(), rows, cols, wq, phase, plane(dx, g.x, n, c));
        }
    });
}

// With a stride, each input position gathers the (output, tap) pairs that reach it
// (depthwise_grad_data_hwy.h): x's gradient is written once, in vectors.
void backward_data_gather(const DwGeom& g, const float* filter, const float* dy, float* dx) {
    std::vector<float> w = tap_weights(g, filter, false);
    const DwGatherTaps taps = dw_grad_data_gather_taps(g.forward_taps(), g.ph, g.pw, g.mult, g.y.sc,
                                                       g.y.sr, g.oh, g.h);
    parallel_ranges(g.n * g.ic, work_of(g), kParallelGrain, [&](size_t b, size_t e) {
        for (size_t u = b; u < e; ++u) {
            size_t n = u / g.ic, c = u % g.ic;
            dw_grad_data_gather(taps, g.forward_taps(), plane(dy, g.y, n, c * g.mult), g.ow,
                                w.data() + c * g.mult * g.taps(), plane(dx, g.x, n, c), g.x.sr, g.h,
                                g.w);
        }
    });
}

// 3x3, stride 2, one row and column of padding, one output channel per input channel (the
// stride-2 layers of MobileNets) on AVX-512: each pair of input rows from two rows of diff, the
// taps unrolled (depthwise_3x3_avx512_hwy.h); the gather's per-call tap list and per-phase
// loops took 2.4x oneDNN's time in cache.
bool backward_data_s2_3x3(const DwGeom& g, const float* filter, const float* dy, float* dx) {
    if (g.kh != 3 || g.kw != 3 || g.sh != 2 || g.sw != 2 || g.dh != 1 || g.dw != 1 || g.ph != 1 ||
        g.pw != 1 || g.mult != 1 || (g.h + 1) / 2 != g.oh || (g.w + 1) / 2 != g.ow ||
        !dw_s2_grad_data3x3_avx512_supported())
        return false;
    std::vector<float> w = tap_weights(g, filter, false);
    parallel_ranges(g.n * g.ic, work_of(g), kParallelGrain, [&](size_t b, size_t e) {
        for (size_t u = b; u < e; ++u) {
            size_t n = u / g.ic, c = u % g.ic;
            dw_s2_grad_data3x3_avx512(plane(dy, g.y, n, c), g.y.sr, g.oh, g.ow,
                                      w.data() + c * g.taps(), plane(dx, g.x, n, c), g.x.sr, g.h,
                                      g.w);
        }
    });
    return true;
}

void backward_data(const DwGeom& g, const float* filter, const float* dy, float* dx) {
    if (g.sh == 1 && g.sw == 1)
        backward_data_correlate(g, filter, dy, dx);
    else if (backward_data_s2_3x3(g, filter, dy, dx))
        return;
    else if (dw_grad_data_gather_supported(g.forward_taps()))
        backward_data_gather(g, filter, dy, dx);
    else
        backward_data_scatter(g, filter, dy, dx);
}

// Each filter (input channel c's multiplier m, output channel f = c * mult + m) summed over the
// batch in double, the images in order. Threads split the filters, not the input channels: a
// thread owns whole filters, so no two write the same one and the split changes no value, and a
// layer of fewer input channels than threads (LeNet's first, 1 -> 6) still runs on all of them
// (0.43 ms on one of two threads at batch 64 before).
void backward_filter(const DwGeom& g, const float* x, const float* dy, float* df) {
    size_t taps = g.taps();
    const bool direct = dw_direct_filter_grad_supported(g.forward_taps());
    parallel_ranges(g.ic * g.mult, work_of(g), kParallelGrain, [&](size_t b, size_t e) {
        std::vector<double> acc((e - b) * taps, 0.0);
        auto sums = [&](size_t f) { return acc.data() + (f - b) * taps; };
        // Image by image, the filters in memory order: a channel's planes lie an image apart,
        // where the hardware prefetchers do not follow, while consecutive channels stream. Each
        // filter still sums its images in order.
        for (size_t n = 0; n < g.n && direct; ++n)
            for (size_t f = b; f < e; ++f)
                dw_direct_filter_grad(forward_source(g, x, n, f / g.mult), g.forward_taps(),
                                      plane(dy, g.y, n, f), g.y.sr, g.oh, g.ow, sums(f));
        // The input channels whose filters [b, e) holds, each plane padded once per image.
        for (size_t c = b / g.mult; c * g.mult < e && !direct; ++c) {
            size_t fb = std::max(b, c * g.mult), fe = std::min(e, (c + 1) * g.mult);
            for (size_t n = 0; n < g.n; ++n) {
                bool more = n + 1 < g.n;
                DwPadded p = forward_padded(g, x, n, c, more ? plane(x, g.x, n + 1, c) : nullptr);
                for (size_t f = fb; f < fe; ++f) {
                    if (more)
                        prefetch_plane(plane(dy, g.y, n + 1, f), g.y.sr, g.oh, g.ow);
                    dw_filter_grad(p, g.forward_taps(), plane(dy, g.y, n, f), g.y.sr, g.oh, g.ow,
                                   sums(f));
                }
            }
        }
        for (size_t f = b; f < e; ++f)
            for (size_t ky = 0; ky < g.kh; ++ky)
                for (size_t kx = 0; kx < g.kw; ++kx) {
                    size_t ty = g.flip ? g.kh - 1 - ky : ky, tx = g.flip ? g.kw - 1 - kx : kx;
                    df[static_cast<ptrdiff_t>(f) * g.f_oc + static_cast<ptrdiff_t>(ty) * g.f_y +
                       static_cast<ptrdiff_t>(tx) * g.f_x] =
                            static_cast<float>(sums(f)[ky * g.kw + kx]);
                }
    });
}

enum class Pass { kForward, kBackwardData, kBackwardFilter };

// One activation whose rows are not dense, beside a partner whose rows are: a traced graph's
// transposed NHWC batch read in place by a convolution with a plain output. The loops run on a
// contiguous copy of it in the workspace (an input copied in first, an output copied out after):
// one pass over it, as the graph's own copy was. oneDNN's nhwc depthwise kernel with the plain
// partner reordered took 1.3-1.9 ms at one thread for 8x64x56x56, the loops 0.62 plus the copy.
// Two such activations (eager mode's channels-last chains) stay with oneDNN's nhwc kernels, which
// read both in place.
struct Staged {
    size_t operand = 0;  // its place in the call's tensors
    bool output = false;
    TensorLayout dense;
};

// The call's tensors per pass: forward src, filter, dst; backward data filter, diff, grad;
// backward filter src, diff, grad. x is the input side, y the output side (DwGeom).
struct Operands {
    size_t x;
    bool x_output;
    size_t y;
    bool y_output;
};

constexpr Operands operands_of(Pass pass) {
    switch (pass) {
        case Pass::kForward:
            return {0, false, 2, true};
        case Pass::kBackwardData:
            return {2, true, 1, false};
        case Pass::kBackwardFilter:
            return {0, false, 1, false};
    }
    return {};
}

class DepthwisePlan final : public Plan {
public:
    DepthwisePlan(Pass pass, const DwGeom& g, std::optional<Staged> staged)
        : m_pass(pass), m_g(g), m_staged(std::move(staged)) {}
    size_t workspace_in_bytes() const override {
        return m_staged ? m_staged->dense.span_bytes() : 0;
    }
    const char* name() const override { return "depthwise:hwy"; }
    void run(std::span<const TensorND> call, Workspace ws, dnnl::stream&) override {
        TensorND t[] = {call[0], call[1], call[2]};
        if (m_staged) {
            TensorND dense(ws.ptr, m_staged->dense);
            if (!m_staged->output)
                relayout_copy(t[m_staged->operand], dense);
            t[m_staged->operand] = dense;
        }
        auto in = [&](size_t i) { return static_cast<const float*>(t[i].raw_ptr()); };
        auto out = static_cast<float*>(t[2].raw_ptr());
        switch (m_pass) {
            case Pass::kForward:
                forward(m_g, in(0), in(1), out);
                break;
            case Pass::kBackwardData:
                backward_data(m_g, in(0), in(1), out);
                break;
            case Pass::kBackwardFilter:
                backward_filter(m_g, in(0), in(1), out);
                break;
        }
        if (m_staged && m_staged->output)
            relayout_copy(t[m_staged->operand], call[m_staged->operand]);
    }

private:
    Pass m_pass;
    DwGeom m_g;
    std::optional<Staged> m_staged;
};

// The geometry of the loops over x and y as given, or with the one of them whose rows are not
// dense replaced by its contiguous copy (Staged); nullopt where neither has dense rows.
struct StagedGeometry {
    std::optional<DwGeom> g;
    std::optional<Staged> staged;
};

StagedGeometry staged_geometry(Pass pass, const ConvArgs& a, const TensorLayout& x,
                               const TensorLayout& filter, const TensorLayout& y) {
    const bool x_dense = rows_dense(x), y_dense = rows_dense(y);
    if (x_dense && y_dense)
        return {dw_geometry(a, x, filter, y), std::nullopt};
    if (!x_dense && !y_dense)
        return {};
    const Operands o = operands_of(pass);
    Staged s{x_dense ? o.y : o.x, x_dense ? o.y_output : o.x_output, x_dense ? y : x};
    s.dense.init_contiguous_stride();
    auto g = x_dense ? dw_geometry(a, x, filter, s.dense) : dw_geometry(a, s.dense, filter, y);
    return {g, s};
}

std::unique_ptr<Plan> plan_of(Pass pass, const StagedGeometry& sg) {
    if (!sg.g)
        return nullptr;
    return std::make_unique<DepthwisePlan>(pass, *sg.g, sg.staged);
}

}  // namespace

std::unique_ptr<Plan> depthwise_forward_plan(const ConvArgs& args, const TensorLayout& src,
                                             const TensorLayout& filter, const TensorLayout& dst) {
    return plan_of(Pass::kForward, staged_geometry(Pass::kForward, args, src, filter, dst));
}

std::unique_ptr<Plan> depthwise_backward_data_plan(const ConvArgs& args, const TensorLayout& filter,
                                                   const TensorLayout& diff,
                                                   const TensorLayout& grad) {
    auto sg = staged_geometry(Pass::kBackwardData, args, grad, filter, diff);
    const std::optional<DwGeom>& g = sg.g;
    // With a stride of 1 the correlation needs grad's size to follow from diff's; the scatter
    // takes any (a preset larger input).
    if (g && g->sh == 1 && g->sw == 1 &&
        (g->h + 2 * g->ph != g->oh + (g->kh - 1) * g->dh ||
         g->w + 2 * g->pw != g->ow + (g->kw - 1) * g->dw))
        return nullptr;
    return plan_of(Pass::kBackwardData, sg);
}

std::unique_ptr<Plan> depthwise_backward_filter_plan(const ConvArgs& args, const TensorLayout& src,
                                                     const TensorLayout& diff,
                                                     const TensorLayout& grad) {
    return plan_of(Pass::kBackwardFilter,
                   staged_geometry(Pass::kBackwardFilter, args, src, grad, diff));
}

}  // namespace neomeg::dnn::x86
