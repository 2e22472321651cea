// Correlation and its gradients, in double: the definition of the op. The forward sums each
// output's taps directly; each gradient walks the same (output, displacement, tap, channel)
// terms as the forward and adds every term's partial derivative into a double workspace, so the
// two are each other's adjoint by construction (src/common/correlation_geometry.h places the
// windows).
#include <algorithm>
#include <cmath>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/correlation_geometry.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

using correlation::Geometry;

// data[n, c, y, x] as double, 0 outside the image.
double pixel(const TensorND& t, const Geometry& g, int64_t n, int64_t c, int64_t y, int64_t x) {
    if (y < 0 || y >= g.h || x < 0 || x >= g.w)
        return 0.0;
    size_t idx[4] = {static_cast<size_t>(n), static_cast<size_t>(c), static_cast<size_t>(y),
                     static_cast<size_t>(x)};
    return load_scalar(t, offset_of(t.layout, idx)).f;
}

// Calls f(n, d, y, x, c, (y1, x1), (y2, x2)) for every term of every output element: data1's
// pixel (y1, x1) meets data2's (y2, x2) in channel c.
template <class F>
void for_each_term(const Geometry& g, F&& f) {
    for (int64_t n = 0; n < g.n; ++n)
        for (int64_t d = 0; d < g.channels(); ++d)
            for (int64_t y = 0; y < g.out_h; ++y)
                for (int64_t x = 0; x < g.out_w; ++x)
                    for (int64_t j = -g.radius; j <= g.radius; ++j)
                        for (int64_t i = -g.radius; i <= g.radius; ++i) {
                            int64_t y1 = g.centre(y) + j, x1 = g.centre(x) + i;
                            for (int64_t c = 0; c < g.c; ++c)
                                f(n, d, y, x, c, y1, x1, y1 + g.dy(d), x1 + g.dx(d));
                        }
}

size_t out_index(const Geometry& g, int64_t n, int64_t d, int64_t y, int64_t x) {
    return static_cast<size_t>(((n * g.channels() + d) * g.out_h + y) * g.out_w + x);
}

class CorrelationImpl final : public Correlation {
public:
    using Correlation::Correlation;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &a = inputs[0], &b = inputs[1], &dst = outputs[0];
        const Geometry g = correlation::geometry(m_param, a.layout);
        const bool mul = m_param.is_multiply;
        std::vector<double> sum(dst.layout.total_nr_elems(), 0.0);
        for_each_term(g, [&](int64_t n, int64_t d, int64_t y, int64_t x, int64_t c, int64_t y1,
                             int64_t x1, int64_t y2, int64_t x2) {
            double va = pixel(a, g, n, c, y1, x1), vb = pixel(b, g, n, c, y2, x2);
            sum[out_index(g, n, d, y, x)] += mul ? va * vb : std::abs(va - vb);
        });
        for_each_index(dst.layout, [&](const auto& idx) {
            size_t k = out_index(g, static_cast<int64_t>(idx[0]), static_cast<int64_t>(idx[1]),
                                 static_cast<int64_t>(idx[2]), static_cast<int64_t>(idx[3]));
            store_scalar(dst, offset_of(dst.layout, idx.data()), Scalar::of_float(sum[k] / g.norm));
        });
    }
};

// The gradient for data1 (Which = 1) or data2 (Which = 2).
template <class Base, int Which>
class CorrelationBackwardImpl final : public Base {
public:
    using Base::Base;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &diff = inputs[0], &a = inputs[1], &b = inputs[2], &grad = outputs[0];
        const Geometry g = correlation::geometry(this->m_param, a.layout);
        const bool mul = this->m_param.is_multiply;
        std::vector<double> dy(diff.layout.total_nr_elems());
        for_each_index(diff.layout, [&](const auto& idx) {
            dy[out_index(g, static_cast<int64_t>(idx[0]), static_cast<int64_t>(idx[1]),
                         static_cast<int64_t>(idx[2]), static_cast<int64_t>(idx[3]))] =
                    load_scalar(diff, offset_of(diff.layout, idx.data())).f;
        });
        std::vector<double> acc(grad.layout.total_nr_elems(), 0.0);
        auto at = [&](int64_t n, int64_t c, int64_t y, int64_t x) {
            return static_cast<size_t>(((n * g.c + c) * g.h + y) * g.w + x);
        };
        for_each_term(g, [&](int64_t n, int64_t d, int64_t y, int64_t x, int64_t c, int64_t y1,
                             int64_t x1, int64_t y2, int64_t x2) {
            int64_t ty = Which == 1 ? y1 : y2, tx = Which == 1 ? x1 : x2;
            if (ty < 0 || ty >= g.h || tx < 0 || tx >= g.w)
                return;  // a padding pixel: a constant, no gradient
            double va = pixel(a, g, n, c, y1, x1), vb = pixel(b, g, n, c, y2, x2);
            double slope = mul ? (Which == 1 ? vb : va)
                               : (Which == 1 ? correlation::abs_slope_a(va, vb)
                                             : correlation::abs_slope_b(va, vb));
            acc[at(n, c, ty, tx)] += dy[out_index(g, n, d, y, x)] * slope;
        });
        for_each_index(grad.layout, [&](const auto& idx) {
            size_t k = at(static_cast<int64_t>(idx[0]), static_cast<int64_t>(idx[1]),
                          static_cast<int64_t>(idx[2]), static_cast<int64_t>(idx[3]));
            store_scalar(grad, offset_of(grad.layout, idx.data()),
                         Scalar::of_float(acc[k] / g.norm));
        });
    }
};

using CorrelationBackwardData1Impl = CorrelationBackwardImpl<CorrelationBackwardData1, 1>;
using CorrelationBackwardData2Impl = CorrelationBackwardImpl<CorrelationBackwardData2, 2>;

}  // namespace
NM_REGISTER_NAIVE(Correlation, CorrelationImpl);
NM_REGISTER_NAIVE(CorrelationBackwardData1, CorrelationBackwardData1Impl);
NM_REGISTER_NAIVE(CorrelationBackwardData2, CorrelationBackwardData2Impl);
}  // namespace neomeg::dnn::naive
