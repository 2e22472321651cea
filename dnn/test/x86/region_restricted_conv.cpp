// RegionRestrictedConvolutionForward and its gradients on the x86 handle (columns + float32 GEMM)
// against naive (double sums): depthwise (the use MegEngine makes of it) and grouped and dense
// filters, stride, padding, dilation, int32 and uint8 region ids of few and of many regions,
// padded inputs and outputs, an empty batch, float16 (naive's kernel). The bound is on
// |x86 - naive| / max(1, |naive|) per element; the largest error seen is recorded.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "neomeg/dnn/operators/convolution.h"
#include "x86/vision_loops.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Float32 sums of at most IC/group * FH * FW = 27 products of values within 1 (about 1e-6 worst
// case; the errors seen are below 5e-7).
constexpr double kEps = 5e-6;

template <class Op>
double compare(Handle& h, const param::RegionRestrictedConvolution& p,
               const std::vector<HostTensor>& in, const std::vector<TensorShape>& out = {}) {
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
        auto va = got[i].values(), vb = want[i].values();
        for (size_t j = 0; j < va.size(); ++j)
            err = std::max(err, std::abs(va[j] - vb[j]) / std::max(1.0, std::abs(vb[j])));
    }
    EXPECT_EQ(last_kernel(*op), "im2col+sgemm");
    return err;
}

std::vector<double> ids(size_t n, int regions, std::mt19937& rng) {
    std::uniform_int_distribution<int> u(0, regions - 1);
    std::vector<double> v(n);
    for (double& x : v)
        x = u(rng);
    return v;
}

}  // namespace

TEST_F(X86, RegionRestrictedConvolutionMatchesNaive) {
    std::mt19937 rng(43);
    struct Case {
        TensorShape src;
        size_t oc, fh, fw;
        std::vector<int32_t> stride, padding, dilation;
        uint32_t group;
    };
    const std::vector<Case> cases = {
            {{2, 4, 9, 7}, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 4},  // depthwise
            {{1, 6, 8, 8}, 6, 5, 5, {2, 2}, {2, 2}, {1, 1}, 6},  // depthwise, strided
            {{2, 6, 7, 10}, 4, 3, 2, {1, 2}, {0, 1}, {2, 1}, 2},
            {{1, 3, 6, 5}, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1},
    };
    double worst = 0;
    for (bool padded : {false, true})
        for (DType id_type : {dtype::Int32, dtype::Uint8})
            for (int regions : {2, 5})
                for (const Case& c : cases) {
                    param::RegionRestrictedConvolution p;
                    p.stride = c.stride;
                    p.padding = c.padding;
                    p.dilation = c.dilation;
                    p.group = c.group;
                    auto out_size = [&](size_t in, size_t k, size_t d) {
                        return (in + 2 * c.padding[d] - c.dilation[d] * (k - 1) - 1) / c.stride[d] +
                               1;
                    };
                    size_t oh = out_size(c.src[2], c.fh, 0), ow = out_size(c.src[3], c.fw, 1);
                    TensorShape w{c.oc, c.src[1] / c.group, c.fh, c.fw};
                    TensorShape dst{c.src[0], c.oc, oh, ow};
                    TensorShape rin_s{c.src[0], c.src[2], c.src[3]}, rout_s{c.src[0], oh, ow};
                    HostTensor x = make_tensor(c.src, padded, rng);
                    HostTensor f = make_tensor(w, padded, rng);
                    HostTensor rin =
                            make_tensor(rin_s, padded, rng,
                                        ids(rin_s.total_nr_elems(), regions, rng), 0, 0, id_type);
                    HostTensor rout =
                            make_tensor(rout_s, padded, rng,
                                        ids(rout_s.total_nr_elems(), regions, rng), 0, 0, id_type);
                    HostTensor dy = make_tensor(dst, padded, rng);
                    worst = std::max(worst, compare<RegionRestrictedConvolutionForward>(
                                                    *handle, p, {x, f, rin, rout}));
                    worst = std::max(worst, compare<RegionRestrictedConvolutionBackwardData>(
                                                    *handle, p, {f, dy, rin, rout}, {c.src}));
                    worst = std::max(worst, compare<RegionRestrictedConvolutionBackwardFilter>(
                                                    *handle, p, {x, dy, rin, rout}, {w}));
                }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2e", worst);
    RecordProperty("max_rel_error", buf);
}

TEST_F(X86, RegionRestrictedConvolutionEmptyBatchAndFloat16) {
    std::mt19937 rng(47);
    param::RegionRestrictedConvolution p;
    p.padding = {1, 1};
    p.group = 2;
    HostTensor x({0, 2, 5, 5}, dtype::Float32), f = make_tensor({2, 1, 3, 3}, false, rng);
    HostTensor rin({0, 5, 5}, dtype::Int32), rout({0, 5, 5}, dtype::Int32);
    compare<RegionRestrictedConvolutionForward>(*handle, p, {x, f, rin, rout});
    HostTensor dy({0, 2, 5, 5}, dtype::Float32);
    compare<RegionRestrictedConvolutionBackwardFilter>(*handle, p, {x, dy, rin, rout},
                                                       {{2, 1, 3, 3}});

    HostTensor x16 = make_tensor({1, 2, 5, 5}, false, rng, {}, -1, 1, dtype::Float16);
    HostTensor f16 = make_tensor({2, 1, 3, 3}, false, rng, {}, -1, 1, dtype::Float16);
    HostTensor r1 = make_tensor({1, 5, 5}, false, rng, ids(25, 2, rng), 0, 0, dtype::Int32);
    HostTensor r2 = make_tensor({1, 5, 5}, false, rng, ids(25, 2, rng), 0, 0, dtype::Int32);
    expect_naive_bits<RegionRestrictedConvolutionForward>(*handle, p, {x16, f16, r1, r2}, {},
                                                          "naive");
}
