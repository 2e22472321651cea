#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Padding::Mode;

param::Padding pad_param(Mode mode, std::vector<int32_t> front, std::vector<int32_t> back,
                         float value = 0) {
    param::Padding p;
    p.mode = mode;
    p.value = value;
    p.front_offsets = std::move(front);
    p.back_offsets = std::move(back);
    return p;
}

HostTensor pad(const HostTensor& src, const param::Padding& p) {
    auto h = Handle::make_naive();
    auto op = make_op<Padding>(h.get(), p);
    auto outs = run_op(*op, {src});
    return std::move(outs[0]);
}

HostTensor pad_backward(const HostTensor& diff, const param::Padding& p) {
    auto h = Handle::make_naive();
    auto op = make_op<PaddingBackward>(h.get(), p);
    auto outs = run_op(*op, {diff});
    return std::move(outs[0]);
}

// Source index of padded position j (relative to src's start) by bouncing off the ends until it
// lands inside, a different formulation from the kernel's modular one.
long bounce(long j, long n) {
    if (n == 1)
        return 0;
    while (j < 0 || j >= n)
        j = j < 0 ? -j : 2 * (n - 1) - j;
    return j;
}

// numpy.pad written as plain loops over a 3-D tensor.
std::vector<double> reference_pad(const HostTensor& src, const param::Padding& p) {
    auto sv = src.values();
    long n[3], o[3];
    for (int d = 0; d < 3; ++d) {
        n[d] = static_cast<long>(src.shape()[d]);
        o[d] = n[d] + p.front_offsets[d] + p.back_offsets[d];
    }
    std::vector<double> out;
    for (long a = 0; a < o[0]; ++a)
        for (long b = 0; b < o[1]; ++b)
            for (long c = 0; c < o[2]; ++c) {
                long pos[3] = {a - p.front_offsets[0], b - p.front_offsets[1],
                               c - p.front_offsets[2]};
                bool border = false;
                for (int d = 0; d < 3; ++d) {
                    if (pos[d] >= 0 && pos[d] < n[d])
                        continue;
                    border = true;
                    if (p.mode == Mode::REPLICATE)
                        pos[d] = pos[d] < 0 ? 0 : n[d] - 1;
                    else if (p.mode == Mode::REFLECT)
                        pos[d] = bounce(pos[d], n[d]);
                }
                if (border && p.mode == Mode::CONSTANT)
                    out.push_back(src.dtype().is_bool() ? p.value != 0 : p.value);
                else
                    out.push_back(sv[(pos[0] * n[1] + pos[1]) * n[2] + pos[2]]);
            }
    return out;
}

}  // namespace

TEST(Padding, HandComputedLikeNumpy) {
    auto v = HostTensor::from({3}, {1, 2, 3});
    EXPECT_EQ(pad(v, pad_param(Mode::REFLECT, {5}, {5})).values(),
              (std::vector<double>{2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2}));
    EXPECT_EQ(pad(v, pad_param(Mode::REPLICATE, {4}, {2})).values(),
              (std::vector<double>{1, 1, 1, 1, 1, 2, 3, 3, 3}));
    EXPECT_EQ(pad(v, pad_param(Mode::CONSTANT, {1}, {2}, 9)).values(),
              (std::vector<double>{9, 1, 2, 3, 9, 9}));
    EXPECT_EQ(pad(HostTensor::from({1}, {4}), pad_param(Mode::REFLECT, {2}, {2})).values(),
              (std::vector<double>{4, 4, 4, 4, 4}));
    auto m = HostTensor::from({2, 3}, {0, 1, 2, 3, 4, 5});
    auto r = pad(m, pad_param(Mode::REFLECT, {1, 2}, {0, 1}));
    EXPECT_EQ(r.shape().to_string(), "{3,6}");
    EXPECT_EQ(r.values(),
              (std::vector<double>{5, 4, 3, 4, 5, 4, 2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4}));
    // the constant is converted to the tensor's dtype
    auto i = pad(HostTensor::from({1}, {7}, dtype::Int8),
                 pad_param(Mode::CONSTANT, {1}, {0}, -2.7f));
    EXPECT_EQ(i.values(), (std::vector<double>{-2, 7}));
    auto b =
            pad(HostTensor::from({1}, {0}, dtype::Bool), pad_param(Mode::CONSTANT, {1}, {1}, 0.5f));
    EXPECT_EQ(b.values(), (std::vector<double>{1, 0, 1}));
}

TEST(Padding, EveryModeAndDtypeMatchesPlainLoops) {
    std::mt19937 rng(17);
    for (DType dt : all_dtypes())
        for (Mode mode : {Mode::CONSTANT, Mode::REFLECT, Mode::REPLICATE})
            for (auto& [f, b] : std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>>{
                         {{0, 0, 0}, {0, 0, 0}}, {{1, 0, 2}, {2, 3, 0}}, {{4, 1, 7}, {0, 6, 5}}}) {
                HostTensor src({2, 3, 5}, dt);
                fill_uniform(src, 0, 100, rng);
                auto p = pad_param(mode, f, b, 3);
                auto got = pad(src, p);
                ASSERT_EQ(got.values(), reference_pad(src, p))
                        << dt.name() << " " << to_string(mode) << " " << param::to_string(p);
            }
}

TEST(Padding, EdgeShapesAndStridedInputs) {
    auto h = Handle::make_naive();
    // an empty dim may be padded with a constant, and left alone in the other modes
    EXPECT_EQ(pad(HostTensor::from({0, 2}, {}), pad_param(Mode::CONSTANT, {1, 0}, {1, 0}, 4))
                      .values(),
              std::vector<double>(4, 4));
    EXPECT_EQ(pad(HostTensor::from({0, 2}, {}), pad_param(Mode::REFLECT, {0, 3}, {0, 1}))
                      .shape()
                      .to_string(),
              "{0,6}");
    for (Mode mode : {Mode::CONSTANT, Mode::REFLECT, Mode::REPLICATE}) {
        Checker<Padding> c(h.get());
        c.set_param(pad_param(mode, {1, 3}, {2, 0}, 1.5f)).set_noncontiguous(true);
        c.execs({{3, 4}}).execs({{1, 1}}).execs({{13, 7}});
        c.exec_layouts({TensorLayout({4, 3}, {0, 1}, dtype::Float32)});
        c.exec_layouts({TensorLayout({4, 3}, dtype::Float32).dimshuffle({1, 0})});
        c.exec_layouts({TensorLayout({3, 4}, {-4, -1}, dtype::Float32)});
        c.set_param(pad_param(mode, {2, 5}, {3, 0})).set_noncontiguous(false);
        c.set_dtype(0, dtype::Float16).execs({{128, 300}});
    }
}

TEST(Padding, WritesIntoAStridedOutput) {
    auto h = Handle::make_naive();
    auto op = make_op<Padding>(h.get(), pad_param(Mode::REPLICATE, {1}, {1}));
    std::vector<HostTensor> dst;
    dst.emplace_back(TensorLayout({4}, {-2}, dtype::Float32));
    exec_into(*op, {HostTensor::from({2}, {5, 6})}, dst);
    EXPECT_EQ(dst[0].values(), (std::vector<double>{5, 5, 6, 6}));
}

TEST(Padding, BadParamsAreClearErrors) {
    auto h = Handle::make_naive();
    HostTensor src({2, 3}, dtype::Float32), empty({0, 3}, dtype::Float32);
    auto op = make_op<Padding>(h.get(), pad_param(Mode::CONSTANT, {1}, {1}));
    expect_error<ParamError>([&] { run_op(*op, {src}); },
                             {"Padding(mode=CONSTANT", "front_offsets=[1]", "{2(3),3(1)}"});
    op->param() = pad_param(Mode::CONSTANT, {1, -1}, {0, 0});
    expect_error<ParamError>([&] { run_op(*op, {src}); }, {"front_offsets=[1,-1]", "negative"});
    op->param() = pad_param(Mode::REFLECT, {1, 0}, {0, 0});
    expect_error<ShapeError>([&] { run_op(*op, {empty}); },
                             {"Padding(mode=REFLECT", "empty dim 0", "{0(3),3(1)}"});
    auto back = make_op<PaddingBackward>(h.get(), pad_param(Mode::CONSTANT, {2, 0}, {1, 0}));
    expect_error<ShapeError>([&] { run_op(*back, {src}); },
                             {"PaddingBackward(mode=CONSTANT", "{2(3),3(1)}", "dim 0"});
    HostTensor ints({5, 3}, dtype::Int32);
    expect_error<DTypeError>([&] { run_op(*back, {ints}); }, {"PaddingBackward(", "int32"});
}

TEST(PaddingBackward, HandComputed) {
    auto ones = HostTensor::from({6}, std::vector<double>(6, 1));
    // padded [c b a b c b]: a once, b three times, c twice
    EXPECT_EQ(pad_backward(ones, pad_param(Mode::REFLECT, {2}, {1})).values(),
              (std::vector<double>{1, 3, 2}));
    // padded [a a a b c c]
    EXPECT_EQ(pad_backward(ones, pad_param(Mode::REPLICATE, {2}, {1})).values(),
              (std::vector<double>{3, 1, 2}));
    auto d = HostTensor::from({6}, {1, 2, 3, 4, 5, 6});
    EXPECT_EQ(pad_backward(d, pad_param(Mode::CONSTANT, {2}, {1})).values(),
              (std::vector<double>{3, 4, 5}));
    EXPECT_EQ(pad_backward(HostTensor::from({4}, {1, 2, 3, 4}), pad_param(Mode::REFLECT, {3}, {0}))
                      .values(),
              (std::vector<double>{10}));
}

TEST(PaddingBackward, MatchesFiniteDifferencesOfForward) {
    std::mt19937 rng(19);
    for (Mode mode : {Mode::CONSTANT, Mode::REFLECT, Mode::REPLICATE}) {
        auto p = pad_param(mode, {1, 3, 0}, {2, 1, 4}, 0.5f);
        HostTensor x({2, 3, 2}, dtype::Float32);
        fill_uniform(x, -1, 1, rng);
        HostTensor dy(TensorShape{5, 7, 6}, dtype::Float32);
        fill_uniform(dy, -1, 1, rng);
        auto num = numeric_grad([&](const std::vector<HostTensor>& in) { return pad(in[0], p); },
                                {x}, 0, dy);
        auto got = pad_backward(dy, p);
        EXPECT_TRUE(tensors_near(got, num, 1e-3)) << to_string(mode);
    }
}

TEST(PaddingBackward, LowPrecisionAndStridedDiff) {
    auto h = Handle::make_naive();
    for (Mode mode : {Mode::CONSTANT, Mode::REFLECT, Mode::REPLICATE}) {
        auto p = pad_param(mode, {3, 1}, {2, 4});
        Checker<PaddingBackward> c(h.get());
        c.set_param(p).set_noncontiguous(true).execs({{8, 9}}).execs({{6, 6}});
        c.exec_layouts({TensorLayout({9, 8}, dtype::Float32).dimshuffle({1, 0})});
        c.exec_layouts({TensorLayout({8, 9}, {0, 1}, dtype::Float32)});
        c.exec_layouts({TensorLayout({8, 9}, {-9, 1}, dtype::Float32)});
        // low-precision diffs sum in double and round once, so they stay within their dtype's
        // tolerance of the float32 result
        std::mt19937 rng(23);
        HostTensor d32({40, 37}, dtype::Float32);
        fill_uniform(d32, -1, 1, rng);
        auto g32 = pad_backward(d32, p);
        for (DType dt : {dtype::Float16, dtype::BFloat16}) {
            auto g = pad_backward(HostTensor::from({40, 37}, d32.values(), dt), p);
            auto ref = HostTensor::from(g32.shape(), g32.values(), dt);
            EXPECT_TRUE(tensors_near(g, ref, default_epsilon(dt))) << dt.name();
        }
    }
    // grad may be a strided view
    auto op = make_op<PaddingBackward>(h.get(), pad_param(Mode::REPLICATE, {1, 0}, {0, 1}));
    std::vector<HostTensor> grad;
    grad.emplace_back(TensorLayout({2, 2}, {1, -2}, dtype::Float32));
    exec_into(*op, {HostTensor::from({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}, grad);
    // padded rows [r0, r0, r1] and columns [c0, c1, c1]
    EXPECT_EQ(grad[0].values(), (std::vector<double>{5, 16, 7, 17}));
    // nothing is left of a diff that is all border
    auto p = pad_param(Mode::CONSTANT, {2}, {1});
    EXPECT_EQ(pad_backward(HostTensor::from({3}, {1, 2, 3}), p).shape().to_string(), "{0}");
}
