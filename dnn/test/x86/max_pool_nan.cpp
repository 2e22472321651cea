// MAX pooling with NaNs on the x86 handle against naive, which propagates them (a window holding
// a NaN has a NaN maximum, and its first NaN gets the window's gradient): forward and backward on
// plain, row-padded and channels-last tensors (float32 and bfloat16; float16 on plain ones) and the
// forward on channel-blocked ones, 1-D to 3-D, windows that overlap, pad and tile, rows of several
// vectors and odd widths, with a few NaNs scattered and with whole windows of NaN; infinities
// beside them.
#include <limits>
#include <string>

#include "naive/channel_blocked.h"
#include "neomeg/dnn/operators/pooling.h"
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
