// DeformableConvForward and its gradients on the x86 handle (columns + float32 GEMM) against
// naive (double sums): groups, deformable groups, stride, padding, dilation, odd sizes, offsets
// sending samples past every edge and far outside, padded inputs and outputs, an empty batch,
// float16 (naive's kernel). The x86 kernels sum the products in float32, naive in double: the
// bound below is on |x86 - naive| / max(1, |naive|) per element, and the largest such error over
// these cases is recorded (max_rel_error) beside it.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "neomeg/dnn/operators/convolution.h"
#include "x86/vision_loops.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct Case {
    TensorShape src;
    size_t oc, fh, fw;
    std::vector<int32_t> stride, padding, dilation;
    uint32_t group, dg;
};

// Float32 sums of at most IC/group * FH * FW = 36 products of values within 1 in magnitude
// (about 1e-6 worst case at 2^-24 each, 1.2e-6 measured); 4x that keeps the test free of noise.
constexpr double kEps = 5e-6;

double max_err(const HostTensor& a, const HostTensor& b) {
    auto va = a.values(), vb = b.values();
    double m = 0;
    for (size_t i = 0; i < va.size(); ++i)
        m = std::max(m, std::abs(va[i] - vb[i]) / std::max(1.0, std::abs(vb[i])));
    return m;
}

template <class Op>
double compare(Handle& h, const param::DeformableConv& p, const std::vector<HostTensor>& in,
               const std::vector<TensorShape>& out = {}) {
    auto op = h.create_operator<Op>();
    op->param() = p;
    auto got = run_op(*op, in, out);
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<Op>();
    ref->param() = p;
    std::vector<HostTensor> dense;
    for (auto& t : in)
        dense.push_back(t.contiguous());
    auto want = run_op(*ref, dense, out);
    double err = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(tensors_near(got[i], want[i], kEps)) << op->param_str() << " output " << i;
        err = std::max(err, max_err(got[i], want[i]));
    }
    EXPECT_EQ(last_kernel(*op), "im2col+sgemm");
    return err;
}

}  // namespace

TEST_F(X86, DeformableConvMatchesNaive) {
    std::mt19937 rng(29);
    const std::vector<Case> cases = {
            {{2, 4, 7, 9}, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 1},
            {{1, 4, 8, 8}, 4, 3, 3, {2, 2}, {1, 1}, {1, 1}, 2, 2},
            {{2, 6, 5, 11}, 4, 3, 2, {1, 2}, {0, 2}, {2, 1}, 2, 3},
            {{1, 3, 1, 1}, 2, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, 1},
            {{1, 2, 6, 5}, 3, 3, 3, {1, 1}, {2, 2}, {1, 1}, 1, 2},
    };
    double worst = 0;
    for (bool padded : {false, true})
        for (const Case& c : cases) {
            param::DeformableConv p;
            p.stride = c.stride;
            p.padding = c.padding;
            p.dilation = c.dilation;
            p.group = c.group;
            auto out_size = [&](size_t in, size_t k, size_t d) {
                return (in + 2 * c.padding[d] - c.dilation[d] * (k - 1) - 1) / c.stride[d] + 1;
            };
            size_t oh = out_size(c.src[2], c.fh, 0), ow = out_size(c.src[3], c.fw, 1);
            size_t k = c.fh * c.fw;
            TensorShape w{c.oc, c.src[1] / c.group, c.fh, c.fw};
            TensorShape off{c.src[0], 2 * c.dg * k, oh, ow}, mask{c.src[0], c.dg * k, oh, ow};
            TensorShape dst{c.src[0], c.oc, oh, ow};
            HostTensor x = make_tensor(c.src, padded, rng), f = make_tensor(w, padded, rng);
            // offsets up to 4 pixels either way, a few sending the sample far outside
            std::vector<double> ov(off.total_nr_elems());
            std::uniform_real_distribution<double> u(-4, 4);
            for (size_t i = 0; i < ov.size(); ++i)
                ov[i] = i % 23 == 5 ? 1e3 : u(rng);
            HostTensor o = make_tensor(off, padded, rng, ov);
            HostTensor m = make_tensor(mask, padded, rng, {}, 0, 1);
            HostTensor dy = make_tensor(dst, padded, rng);
            worst = std::max(worst, compare<DeformableConvForward>(*handle, p, {x, f, o, m}));
            worst = std::max(worst,
                             compare<DeformableConvBackwardData>(*handle, p, {x, f, o, m, dy}));
            worst = std::max(worst,
                             compare<DeformableConvBackwardFilter>(*handle, p, {x, o, m, dy}, {w}));
        }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2e", worst);
    RecordProperty("max_rel_error", buf);
}

TEST_F(X86, DeformableConvEmptyBatchAndFloat16) {
    std::mt19937 rng(31);
    param::DeformableConv p;
    p.padding = {1, 1};
    HostTensor x({0, 2, 5, 5}, dtype::Float32), f = make_tensor({3, 2, 3, 3}, false, rng);
    HostTensor o({0, 18, 5, 5}, dtype::Float32), m({0, 9, 5, 5}, dtype::Float32);
    HostTensor dy({0, 3, 5, 5}, dtype::Float32);
    compare<DeformableConvForward>(*handle, p, {x, f, o, m});
    compare<DeformableConvBackwardData>(*handle, p, {x, f, o, m, dy});
    // No image: the filter's gradient is zero.
    compare<DeformableConvBackwardFilter>(*handle, p, {x, o, m, dy}, {{3, 2, 3, 3}});

    HostTensor x16 = make_tensor({1, 2, 5, 5}, false, rng, {}, -1, 1, dtype::Float16);
    HostTensor f16 = make_tensor({3, 2, 3, 3}, false, rng, {}, -1, 1, dtype::Float16);
    HostTensor o16 = make_tensor({1, 18, 5, 5}, false, rng, {}, -2, 2, dtype::Float16);
    HostTensor m16 = make_tensor({1, 9, 5, 5}, false, rng, {}, 0, 1, dtype::Float16);
    expect_naive_bits<DeformableConvForward>(*handle, p, {x16, f16, o16, m16}, {}, "naive");
}
