// Correlation and its gradients on x86. Naive reads every term through strided loads with a
// bounds test; here data1 and data2 are copied once per call into zero-bordered channels-last
// float32 images wide enough for every window and displacement, so a window row of kernel_size
// pixels is one dense run of kernel_size * C floats (correlation_hwy.h), with no tests; the
// forward takes a row of displacements per pass over it.
//
// The gradients gather instead of scattering: data1's pixel (Y, X) meets, for displacement d,
// only data2's pixel (Y + dy, X + dx), through every output whose window covers (Y, X), so its
// gradient is sum_d D_d(Y, X) * slope(data1 (Y, X), data2 (Y + dy, X + dx)) with D_d the sum of
// diff over those outputs, a box read from per-channel prefix sums of diff (in double). data2's
// gradient is the same walk from the other side. Each thread owns whole rows of the gradient.
//
// float32 tensors, any strides; other dtypes run naive. Values are naive's up to float32
// rounding of the per-run sums (naive sums in double).
#include <algorithm>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/correlation_geometry.h"
#include "src/x86/correlation_hwy.h"
#include "src/x86/float32_loop.h"
#include "src/x86/nchw.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

using correlation::Geometry;

// Floor and ceiling of a / b for b > 0 and any sign of a.
int64_t floor_div(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t ceil_div(int64_t a, int64_t b) {
    return -floor_div(-a, b);
}

// A channels-last copy of an NCHW image with a zero border: pixel (y, x) of image n at
// at(n, y, x), for y in [y0, y0 + ph) and x in [x0, x0 + pw).
struct Padded {
    int64_t y0 = 0, x0 = 0, ph = 0, pw = 0, c = 0;
    std::vector<float> buf;

    const float* at(int64_t n, int64_t y, int64_t x) const {
        return buf.data() + ((n * ph + (y - y0)) * pw + (x - x0)) * c;
    }
};

// The border every read needs: the forward's windows with their displacements, and the
// gradients' reads of the other image at a displaced pixel.
Padded padded(const TensorND& t, const Geometry& g) {
    const int64_t reach = g.grid_radius * g.stride2;
    // Along an axis of `len` pixels and `out` outputs: from the first window's first pixel (or a
    // pixel reached back from the image's first) to the last window's last (or from the last).
    auto hi = [&](int64_t out, int64_t len) {
        return std::max({g.centre(out - 1) + g.radius + reach, len - 1 + reach, len - 1});
    };
    Padded p;
    p.y0 = std::min({g.origin - g.radius - reach, -reach, int64_t{0}});
    p.x0 = p.y0;
    p.ph = hi(g.out_h, g.h) - p.y0 + 1;
    p.pw = hi(g.out_w, g.w) - p.x0 + 1;
    p.c = g.c;
    p.buf.assign(static_cast<size_t>(g.n * p.ph * p.pw * p.c), 0.f);
    const Nchw s(t.layout);
    const auto* src = static_cast<const float*>(t.raw_ptr());
    size_t rows = static_cast<size_t>(g.n * g.h);
    parallel_ranges(rows, p.buf.size(), kParallelGrain, [&](size_t b, size_t e) {
        for (size_t u = b; u < e; ++u) {
            auto n = static_cast<int64_t>(u) / g.h, y = static_cast<int64_t>(u) % g.h;
            for (int64_t c = 0; c < g.c; ++c) {
                const float* row =
                        src + s.plane(static_cast<size_t>(n), static_cast<size_t>(c)) + s.at(y, 0);
                float* d = const_cast<float*>(p.at(n, y, 0)) + c;
                for (int64_t x = 0; x < g.w; ++x)
                    d[x * g.c] = row[x * s.s[3]];
            }
        }
    });
    return p;
}

class CorrelationImpl final : public Float32Loop<Correlation> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace) override {
        const TensorND& dst = outputs[0];
        if (dst.layout.is_empty())
            return;
        const Geometry g = correlation::geometry(m_param, inputs[0].layout);
        const Padded a = padded(inputs[0], g), b = padded(inputs[1], g);
        const Nchw dp(dst.layout);
        auto* out = static_cast<float*>(dst.raw_ptr());
        const bool mul = m_param.is_multiply;
        const auto run_len = static_cast<size_t>((2 * g.radius + 1) * g.c);
        const size_t rows = static_cast<size_t>(g.n * g.out_h);
        const size_t work = dst.layout.total_nr_elems() * run_len * (2 * g.radius + 1);
        // One row of displacements (a dy, every dx) a call per window row: the window row of
        // data1 is read once for the row's displacements, whose runs of data2 lie stride2
        // pixels apart in the padded row.
        const auto side = static_cast<size_t>(g.grid_side);
        const auto step = static_cast<size_t>(g.stride2 * g.c);
        parallel_ranges(rows, work, kParallelGrain, [&](size_t lo, size_t hi) {
            std::vector<double> sums(static_cast<size_t>(g.channels()));
            std::vector<float> part(side);
            for (size_t u = lo; u < hi; ++u) {
                auto n = static_cast<int64_t>(u) / g.out_h, y = static_cast<int64_t>(u) % g.out_h;
                for (int64_t x = 0; x < g.out_w; ++x) {
                    int64_t y1 = g.centre(y), x1 = g.centre(x) - g.radius;
                    std::fill(sums.begin(), sums.end(), 0.0);
                    for (size_t r = 0; r < side; ++r) {
                        const auto d0 = static_cast<int64_t>(r * side);
                        double* s = sums.data() + d0;
                        for (int64_t j = -g.radius; j <= g.radius; ++j) {
                            const float* pa = a.at(n, y1 + j, x1);
                            const float* pb = b.at(n, y1 + j + g.dy(d0), x1 + g.dx(d0));
                            if (mul)
                                corr_dot_many_f32(pa, pb, step, side, run_len, part.data());
                            else
                                corr_absdiff_many_f32(pa, pb, step, side, run_len, part.data());
                            for (size_t k = 0; k < side; ++k)
                                s[k] += part[k];
                        }
                    }
                    for (int64_t d = 0; d < g.channels(); ++d)
                        out[dp.plane(static_cast<size_t>(n), static_cast<size_t>(d)) +
                            dp.at(y, x)] =
                                static_cast<float>(sums[static_cast<size_t>(d)] / g.norm);
                }
            }
        });
    }
};

// Per displacement channel, the 2-D prefix sums of one image's diff in double, and the box sum
// D_d(Y1, X1) over the outputs whose window covers data1's pixel (Y1, X1).
struct DiffBoxes {
    const Geometry& g;
    int64_t rows, cols;  // out_h + 1, out_w + 1
    std::vector<double> sums;

    DiffBoxes(const Geometry& geo, const TensorND& diff, int64_t n)
        : g(geo), rows(geo.out_h + 1), cols(geo.out_w + 1) {
        sums.assign(static_cast<size_t>(g.channels() * rows * cols), 0.0);
        const Nchw dp(diff.layout);
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        for (int64_t d = 0; d < g.channels(); ++d) {
            const float* plane = dy + dp.plane(static_cast<size_t>(n), static_cast<size_t>(d));
            double* s = sums.data() + d * rows * cols;
            for (int64_t y = 0; y < g.out_h; ++y)
                for (int64_t x = 0; x < g.out_w; ++x)
                    s[(y + 1) * cols + x + 1] = plane[dp.at(y, x)] + s[y * cols + x + 1] +
                                                s[(y + 1) * cols + x] - s[y * cols + x];
        }
    }

    // The outputs o with |centre(o) - v| <= radius, as [first, last] clipped to [0, len).
    std::pair<int64_t, int64_t> span(int64_t v, int64_t len) const {
        int64_t first = std::max<int64_t>(ceil_div(v - g.radius - g.origin, g.stride1), 0);
        int64_t last = std::min<int64_t>(floor_div(v + g.radius - g.origin, g.stride1), len - 1);
        return {first, last};
    }

    double box(int64_t d, int64_t y1, int64_t x1) const {
        auto [ya, yb] = span(y1, g.out_h);
        auto [xa, xb] = span(x1, g.out_w);
        if (ya > yb || xa > xb)
            return 0.0;
        const double* s = sums.data() + d * rows * cols;
        return s[(yb + 1) * cols + xb + 1] - s[ya * cols + xb + 1] - s[(yb + 1) * cols + xa] +
               s[ya * cols + xa];
    }
};

// The gradient for data1 (Which = 1) or data2 (Which = 2).
template <class Op, int Which>
class CorrelationBackwardImpl final : public Float32Loop<Op> {
public:
    using Float32Loop<Op>::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace) override {
        const TensorND &diff = inputs[0], &grad = outputs[0];
        if (grad.layout.is_empty())
            return;
        const Geometry g = correlation::geometry(this->m_param, inputs[1].layout);
        const Padded a = padded(inputs[1], g), b = padded(inputs[2], g);
        const Nchw gp(grad.layout);
        auto* out = static_cast<float*>(grad.raw_ptr());
        const bool mul = this->m_param.is_multiply;
        const auto cn = static_cast<size_t>(g.c);
        const double inv = 1.0 / g.norm;
        for (int64_t n = 0; n < g.n; ++n) {
            const DiffBoxes boxes(g, diff, n);
            const size_t work = static_cast<size_t>(g.h * g.w * g.channels()) * (cn + 8);
            parallel_ranges(
                    static_cast<size_t>(g.h), work, kParallelGrain, [&](size_t lo, size_t hi) {
                        std::vector<float> acc(static_cast<size_t>(g.w) * cn);
                        for (auto y = static_cast<int64_t>(lo); y < static_cast<int64_t>(hi); ++y) {
                            std::fill(acc.begin(), acc.end(), 0.f);
                            for (int64_t x = 0; x < g.w; ++x) {
                                float* ac = acc.data() + x * g.c;
                                for (int64_t d = 0; d < g.channels(); ++d) {
                                    // Which = 1: (y, x) is data1's pixel; 2: data2's.
                                    int64_t y1 = Which == 1 ? y : y - g.dy(d);
                                    int64_t x1 = Which == 1 ? x : x - g.dx(d);
                                    double box = boxes.box(d, y1, x1);
                                    if (box == 0.0)
                                        continue;
                                    auto alpha = static_cast<float>(box * inv);
                                    const float* pa = a.at(n, y1, x1);
                                    const float* pb = b.at(n, y1 + g.dy(d), x1 + g.dx(d));
                                    if (mul)
                                        corr_axpy_f32(ac, alpha, Which == 1 ? pb : pa, cn);
                                    else if (Which == 1)
                                        corr_sign_acc_f32(ac, alpha, pa, pb, cn);
                                    else  // data2's slope is +1 where data2 is greater
                                        corr_sign_acc_f32(ac, alpha, pb, pa, cn);
                                }
                            }
                            for (int64_t c = 0; c < g.c; ++c) {
                                float* plane = out + gp.plane(static_cast<size_t>(n),
                                                              static_cast<size_t>(c));
                                for (int64_t x = 0; x < g.w; ++x)
                                    plane[gp.at(y, x)] = acc[static_cast<size_t>(x * g.c + c)];
                            }
                        }
                    });
        }
    }
};

using CorrelationBackwardData1Impl = CorrelationBackwardImpl<CorrelationBackwardData1, 1>;
using CorrelationBackwardData2Impl = CorrelationBackwardImpl<CorrelationBackwardData2, 2>;

}  // namespace
NM_REGISTER_X86(Correlation, CorrelationImpl);
NM_REGISTER_X86(CorrelationBackwardData1, CorrelationBackwardData1Impl);
NM_REGISTER_X86(CorrelationBackwardData2, CorrelationBackwardData2Impl);
}  // namespace neomeg::dnn::x86
