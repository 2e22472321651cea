// bfloat16 convolutions with short output rows as im2col + one matrix product
// (src/x86/conv_im2col_lowp.h). The rule is checked on shapes (ResNet-18's and the cases it
// declines), never on what a CPU ran; every pass matches naive, within bfloat16's tolerance, on
// the layouts the rule takes: channels-last, row-major and broadcast data, a row-major or OHWI
// filter, a row-major or OHWI filter gradient, outputs filled with garbage first, strides that do
// not divide the input, uneven kernels and padding, 1x1 outputs, both modes.
#include <random>

#include "naive/convolution.h"
#include "neomeg/dnn/channels_last.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/conv_im2col_lowp.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using x86::ConvPass;

namespace {

const DType kBf16 = dtype::BFloat16;

TensorLayout nhwc(const TensorShape& s) {
    return channels_last_layout(s, kBf16);
}

TensorLayout plain(const TensorShape& s) {
    return TensorLayout(s, kBf16);
}

// One value repeated over the shape: the gradient of a sum.
TensorLayout broadcast(const TensorShape& s) {
    return TensorLayout(s, std::vector<ptrdiff_t>(s.ndim, 0), kBf16);
}

// The rule's answer for one pass of src * filter (roles as conv_geometry takes them).
bool chosen(ConvPass pass, const ConvCase& k, const TensorLayout& src, const TensorLayout& dst) {
    TensorLayout filter(k.filter, src.dtype);
    auto g = x86::conv_geometry(ConvArgs::of(k.p), src, filter, dst);
    EXPECT_TRUE(g.has_value());
    return g && x86::im2col_lowp_chosen(pass, *g, src, filter, dst);
}

std::vector<bool> passes(const ConvCase& k, DType dt = kBf16, bool channels_last = true) {
    TensorShape d = conv_dst_shape(k);
    TensorLayout src = channels_last ? channels_last_layout(k.src, dt) : TensorLayout(k.src, dt);
    TensorLayout dst = channels_last ? channels_last_layout(d, dt) : TensorLayout(d, dt);
    return {chosen(ConvPass::forward, k, src, dst), chosen(ConvPass::backward_data, k, src, dst),
            chosen(ConvPass::backward_filter, k, src, dst)};
}

ConvCase resnet(size_t ic, size_t oc, size_t hw, size_t stride) {
    return {{32, ic, hw, hw},
            {oc, ic, 3, 3},
            conv_param({int(stride), int(stride)}, {1, 1}, {1, 1})};
}

// Runs a fresh x86 operator on `inputs` into an output of layout `out` (garbage first) and
// compares it with naive's on contiguous copies.
template <class Op>
void check(Handle& handle, const param::Convolution& p, const std::vector<HostTensor>& inputs,
           const TensorLayout& out) {
    auto ref = Handle::make_naive()->create_operator<Op>();
    ref->param() = p;
    std::vector<HostTensor> dense;
    for (const auto& t : inputs)
        dense.push_back(t.contiguous());
    auto want = run_op(*ref, dense, {out});
    auto op = handle.create_operator<Op>();
    op->param() = p;
    HostTensor got(out);  // nothing of it may survive
    got.set_values(std::vector<double>(out.total_nr_elems(), 1e30));
    std::vector<TensorLayout> in_layouts, out_layouts{got.layout()};
    std::vector<TensorND> in_nds;
    for (const auto& t : inputs) {
        in_layouts.push_back(t.layout());
        in_nds.push_back(t.nd());
    }
    std::vector<std::byte> ws(op->get_workspace_in_bytes(in_layouts, out_layouts));
    const TensorND out_nds[] = {got.nd()};
    op->exec(in_nds, out_nds, {ws.data(), ws.size()});
    EXPECT_TRUE(tensors_near(got, want[0], default_epsilon(kBf16)))
            << op->param_str() << " into " << out.to_string() << " (" << last_kernel(*op) << ")";
}

std::vector<ConvCase> cases() {
    return {
            {{2, 16, 4, 4}, {32, 16, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{2, 32, 8, 8}, {16, 32, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})},
            // sizes the stride does not divide, a non-square image
            {{3, 16, 7, 5}, {24, 16, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})},
            // an uneven kernel, padding along one axis only
            {{2, 16, 6, 4}, {16, 16, 2, 3}, conv_param({1, 1}, {0, 1}, {1, 1})},
            // stride 3 with padding 2: taps that read no input at all
            {{2, 16, 8, 8}, {16, 16, 3, 3}, conv_param({3, 3}, {2, 2}, {1, 1})},
            // 2x2 and 1x1 outputs
            {{2, 16, 3, 3}, {32, 16, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})},
            {{2, 16, 2, 2}, {32, 16, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})},
            // an 8-wide output: the filter gradient only
            {{2, 16, 8, 8}, {16, 16, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
    };
}

}  // namespace

TEST(X86Im2colRule, ResNet18Shapes) {
    // fwd, bwd data, bwd filter; measured in docs/x86-backend-log.md, "Short output rows".
    EXPECT_EQ(passes(resnet(512, 512, 4, 1)), (std::vector<bool>{true, true, true}));
    EXPECT_EQ(passes(resnet(256, 512, 8, 2)), (std::vector<bool>{true, true, true}));
    EXPECT_EQ(passes(resnet(256, 256, 8, 1)), (std::vector<bool>{false, false, true}));
    EXPECT_EQ(passes(resnet(128, 256, 16, 2)), (std::vector<bool>{false, true, true}));
    EXPECT_EQ(passes(resnet(64, 128, 32, 2)), (std::vector<bool>{false, false, true}));
    EXPECT_EQ(passes(resnet(128, 128, 16, 1)), (std::vector<bool>{false, false, false}));
    EXPECT_EQ(passes(resnet(64, 64, 32, 1)), (std::vector<bool>{false, false, false}));
}

TEST(X86Im2colRule, DeclinedCases) {
    const std::vector<bool> none{false, false, false};
    const ConvCase k = resnet(512, 512, 4, 1);
    EXPECT_EQ(passes(k, dtype::Float32), none);
    EXPECT_EQ(passes(k, dtype::Float16), none);
    // row-major data (a traced graph's) is copied channels-last and back
    EXPECT_EQ(passes(k, kBf16, false), (std::vector<bool>{true, true, true}));
    ConvCase flipped = k;
    flipped.p.mode = param::Convolution::Mode::CONVOLUTION;
    EXPECT_EQ(passes(flipped), none);
    ConvCase dilated = k;
    dilated.p.dilation = {2, 2};
    dilated.p.padding = {2, 2};
    EXPECT_EQ(passes(dilated), none);
    ConvCase grouped{{32, 512, 4, 4}, {512, 256, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 2)};
    EXPECT_EQ(passes(grouped), none);
    EXPECT_EQ(passes({{32, 512, 4, 4}, {512, 512, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}),
              none);                                                // 1x1: conv_pointwise_lowp.h's
    EXPECT_EQ(passes({{32, 8, 4, 4}, {512, 8, 3, 3}, k.p}), none);  // few input channels
    EXPECT_EQ(passes({{32, 512, 4, 4}, {8, 512, 3, 3}, k.p}), none);  // few output channels
}

TEST_F(X86, Im2colBFloat16ForwardMatchesNaive) {
    std::mt19937 rng(3);
    for (const ConvCase& k : conv_both_modes(cases())) {
        HostTensor src = random_tensor(nhwc(k.src), rng);
        for (const TensorLayout& filter : {plain(k.filter), nhwc(k.filter)})
            check<ConvolutionForward>(*handle, k.p, {src, random_tensor(filter, rng)},
                                      nhwc(conv_dst_shape(k)));
        // row-major data: copied channels-last and back
        check<ConvolutionForward>(*handle, k.p, {src, random_tensor(plain(k.filter), rng)},
                                  plain(conv_dst_shape(k)));
        check<ConvolutionForward>(
                *handle, k.p,
                {random_tensor(plain(k.src), rng), random_tensor(plain(k.filter), rng)},
                plain(conv_dst_shape(k)));
    }
}

TEST_F(X86, Im2colBFloat16BackwardDataMatchesNaive) {
    std::mt19937 rng(5);
    for (const ConvCase& k : conv_both_modes(cases())) {
        HostTensor diff = random_tensor(nhwc(conv_dst_shape(k)), rng);
        for (const TensorLayout& filter : {plain(k.filter), nhwc(k.filter)})
            check<ConvolutionBackwardData>(*handle, k.p, {random_tensor(filter, rng), diff},
                                           nhwc(k.src));
        check<ConvolutionBackwardData>(
                *handle, k.p,
                {random_tensor(plain(k.filter), rng), random_tensor(plain(conv_dst_shape(k)), rng)},
                plain(k.src));
        check<ConvolutionBackwardData>(*handle, k.p,
                                       {random_tensor(plain(k.filter), rng),
                                        random_tensor(broadcast(conv_dst_shape(k)), rng)},
                                       nhwc(k.src));
    }
}

TEST_F(X86, Im2colBFloat16BackwardFilterMatchesNaive) {
    std::mt19937 rng(7);
    for (const ConvCase& k : conv_both_modes(cases())) {
        HostTensor src = random_tensor(nhwc(k.src), rng),
                   diff = random_tensor(nhwc(conv_dst_shape(k)), rng);
        for (const TensorLayout& grad : {plain(k.filter), nhwc(k.filter)})
            check<ConvolutionBackwardFilter>(*handle, k.p, {src, diff}, grad);
        check<ConvolutionBackwardFilter>(
                *handle, k.p,
                {random_tensor(plain(k.src), rng), random_tensor(plain(conv_dst_shape(k)), rng)},
                plain(k.filter));
        check<ConvolutionBackwardFilter>(*handle, k.p,
                                         {src, random_tensor(broadcast(conv_dst_shape(k)), rng)},
                                         plain(k.filter));
    }
}
