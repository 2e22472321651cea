// The blocked training ops on the x86 handle against naive: ConvolutionBackwardDataBlocked and
// ConvolutionBackwardFilterBlocked (oneDNN on blocked memory), BatchNormForwardBlocked,
// BatchNormBackwardBlocked and their relu fusions (our loops), blocks of 8 and 16, channel counts
// that fill their last block and that do not, strides 1 and 2, both BatchNorm modes, running
// statistics updated in place. Outputs start as NaN, so a kernel that leaves the padding channels
// unwritten fails.
#include <tuple>

#include "naive/channel_blocked.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/norm.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::BatchNorm::FwdMode;

// Runs `op` into NaN-filled outputs (presets: output shapes, or empty).
std::vector<HostTensor> run_into_nan(OperatorBase& op, const std::vector<HostTensor>& in,
                                     const std::vector<TensorShape>& presets = {}) {
    std::vector<TensorLayout> in_l;
    std::vector<TensorND> in_nd;
    for (const HostTensor& t : in) {
        in_l.push_back(t.layout());
        in_nd.push_back(t.nd());
    }
    std::vector<TensorLayout> out_l(op.num_outputs());
    for (size_t i = 0; i < presets.size(); ++i)
        static_cast<TensorShape&>(out_l[i]) = presets[i];
    op.deduce_layout(in_l, out_l);
    std::vector<HostTensor> out;
    std::vector<TensorND> out_nd;
    for (const TensorLayout& l : out_l) {
        out.emplace_back(l);
        out.back().set_values(std::vector<double>(l.total_nr_elems(), std::nan("")));
    }
    for (HostTensor& t : out)
        out_nd.push_back(t.nd());
    std::vector<std::byte> ws(op.get_workspace_in_bytes(in_l, out_l));
    op.exec(in_nd, out_nd, {ws.data(), ws.size()});
    return out;
}

// The x86 op against naive; returns the kernel the x86 op ran.
template <class Op>
std::string check(Handle& handle, const typename Op::Param& p, const std::vector<HostTensor>& in,
                  const std::vector<TensorShape>& presets = {}, double eps = 1e-4) {
    auto op = handle.create_operator<Op>();
    op->param() = p;
    auto got = run_into_nan(*op, in, presets);
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<Op>();
    ref->param() = p;
    auto want = run_into_nan(*ref, in, presets);
    EXPECT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size() && i < want.size(); ++i)
        EXPECT_TRUE(tensors_near(got[i], want[i], eps)) << op->param_str() << " output " << i;
    return last_kernel(*op);
}

TensorShape blocked(TensorShape s, size_t block) {
    s.ndim += 1;
    s[s.ndim - 1] = block;
    s[1] = (s[1] + block - 1) / block;
    return s;
}

param::Convolution conv_param(int stride, int pad) {
    param::Convolution p;
    p.stride = {stride, stride};
    p.padding = {pad, pad};
    return p;
}

constexpr size_t kBlocks[] = {8, 16};

}  // namespace

TEST_F(X86, ConvolutionBackwardBlockedMatchesNaive) {
    std::mt19937 rng(21);
    for (size_t block : kBlocks)
        for (auto [ic, oc] : {std::pair<size_t, size_t>{16, 32}, {20, 16}, {32, 20}})
            for (int stride : {1, 2})
                for (size_t k : {1u, 3u}) {
                    const int pad = k == 3 ? 1 : 0;
                    TensorShape src_s{2, ic, 9, 9};
                    const size_t out = (9 + 2 * pad - k) / stride + 1;
                    auto src = block_ref(random_tensor(src_s, rng), block);
                    auto diff = block_ref(random_tensor({2, oc, out, out}, rng), block);
                    auto filter = random_tensor({oc, ic, k, k}, rng);
                    auto p = conv_param(stride, pad);
                    EXPECT_TRUE(check<ConvolutionBackwardDataBlocked>(*handle, p, {filter, diff},
                                                                      {blocked(src_s, block)})
                                        .starts_with("onednn:"));
                    EXPECT_TRUE(check<ConvolutionBackwardFilterBlocked>(*handle, p, {src, diff},
                                                                        {filter.shape()})
                                        .starts_with("onednn:"));
                }
}

// Depthwise and grouped backward convolutions (the groups the graph's layout pass blocks).
TEST_F(X86, GroupedConvolutionBackwardBlockedMatchesNaive) {
    std::mt19937 rng(25);
    for (size_t block : kBlocks)
        for (auto [c_in, c_out, group] :
             {std::tuple<size_t, size_t, uint32_t>{20, 20, 20}, {32, 32, 32}, {32, 64, 2}})
            for (int stride : {1, 2}) {
                TensorShape src_s{2, c_in, 9, 9};
                const size_t out = (9 + 2 - 3) / stride + 1;
                auto src = block_ref(random_tensor(src_s, rng), block);
                auto diff = block_ref(random_tensor({2, c_out, out, out}, rng), block);
                auto filter = random_tensor({c_out, c_in / group, 3, 3}, rng);
                auto p = conv_param(stride, 1);
                p.group = group;
                EXPECT_TRUE(check<ConvolutionBackwardDataBlocked>(*handle, p, {filter, diff},
                                                                  {blocked(src_s, block)})
                                    .starts_with("onednn:"));
                EXPECT_TRUE(check<ConvolutionBackwardFilterBlocked>(*handle, p, {src, diff},
                                                                    {filter.shape()})
                                    .starts_with("onednn:"));
            }
}

// The depthwise filter gradient on blocked tensors (oneDNN's jit_dw where it takes the shape)
// against naive: channel counts 3, 13, 17 and 32 in blocks of 8 and 16,
// 1-D and 2-D, square and oblong kernels, strides, paddings reaching past the taps, dilation,
// both modes (CONVOLUTION's filter reversed), batch 1 and 3. Outputs start as NaN.
TEST_F(X86, DepthwiseFilterGradientBlockedMatchesNaive) {
    std::mt19937 rng(27);
    struct Case {
        size_t c;
        std::vector<size_t> in, k;
        std::vector<int32_t> stride, pad, dil;
    };
    const Case cases[] = {{3, {9, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
                          {13, {10, 7}, {5, 3}, {2, 1}, {2, 0}, {1, 2}},
                          {17, {11}, {3}, {2}, {1}, {1}},
                          {32, {7, 9}, {1, 3}, {1, 2}, {0, 2}, {1, 1}},
                          {13, {6, 6}, {3, 3}, {1, 1}, {2, 2}, {2, 2}}};
    using CMode = param::Convolution::Mode;
    for (size_t block : kBlocks)
        for (const Case& k : cases)
            for (CMode mode : {CMode::CROSS_CORRELATION, CMode::CONVOLUTION})
                for (size_t n : {1u, 3u}) {
                    param::Convolution p;
                    p.mode = mode;
                    p.stride = k.stride;
                    p.padding = k.pad;
                    p.dilation = k.dil;
                    p.group = static_cast<uint32_t>(k.c);
                    TensorShape src_s{n, k.c}, diff_s{n, k.c}, filter_s{k.c, 1};
                    for (size_t d = 0; d < k.in.size(); ++d) {
                        const size_t span = (k.k[d] - 1) * size_t(k.dil[d]) + 1;
                        src_s[src_s.ndim++] = k.in[d];
                        diff_s[diff_s.ndim++] =
                                (k.in[d] + 2 * size_t(k.pad[d]) - span) / size_t(k.stride[d]) + 1;
                        filter_s[filter_s.ndim++] = k.k[d];
                    }
                    SCOPED_TRACE(src_s.to_string() + " filter " + filter_s.to_string() + " block " +
                                 std::to_string(block));
                    auto src = block_ref(random_tensor(src_s, rng), block);
                    auto diff = block_ref(random_tensor(diff_s, rng), block);
                    EXPECT_NE(check<ConvolutionBackwardFilterBlocked>(*handle, p, {src, diff},
                                                                      {filter_s}),
                              "naive");
                }
}

TEST_F(X86, BatchNormBlockedMatchesNaive) {
    std::mt19937 rng(22);
    for (size_t block : kBlocks)
        for (size_t c : {16u, 20u, 64u})
            for (Mode mode : {Mode::TRAINING, Mode::INFERENCE})
                for (TensorShape pc : {TensorShape{1, c, 1, 1}, TensorShape{c}}) {
                    param::BatchNorm p;
                    p.fwd_mode = mode;
                    p.momentum = 0.7f;
                    // An offset mean: the variance must not come from cancelling large sums.
                    auto x = block_ref(random_tensor({4, c, 6, 5}, rng, dtype::Float32, 9.0, 11.0),
                                       block);
                    auto scale = random_tensor(pc, rng), bias = random_tensor(pc, rng);
                    auto rm = random_tensor(pc, rng),
                         rv = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
                    EXPECT_EQ(check<BatchNormForwardBlocked>(*handle, p, {x, scale, bias, rm, rv}),
                              "blocked");
                    auto dy = block_ref(random_tensor({4, c, 6, 5}, rng), block);
                    auto mean = random_tensor(pc, rng, dtype::Float32, 9.0, 11.0);
                    auto inv = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
                    EXPECT_EQ(
                            check<BatchNormBackwardBlocked>(*handle, p, {dy, x, scale, mean, inv}),
                            "blocked");
                }
}

// The relu fusions: the relu and its mask inside our loops. The mask is a relu'd tensor, zero
// at about half its elements.
TEST_F(X86, BatchNormReluBlockedMatchesNaive) {
    std::mt19937 rng(24);
    for (size_t block : kBlocks)
        for (size_t c : {16u, 20u})
            for (Mode mode : {Mode::TRAINING, Mode::INFERENCE}) {
                param::BatchNorm p;
                p.fwd_mode = mode;
                const TensorShape pc{1, c, 1, 1}, shape{3, c, 5, 6};
                auto x = block_ref(random_tensor(shape, rng, dtype::Float32, -1.0, 3.0), block);
                auto scale = random_tensor(pc, rng), bias = random_tensor(pc, rng);
                auto rm = random_tensor(pc, rng, dtype::Float32, 0.0, 2.0),
                     rv = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
                EXPECT_EQ(check<BatchNormReluForwardBlocked>(*handle, p, {x, scale, bias, rm, rv}),
                          "blocked");
                auto dy = block_ref(random_tensor(shape, rng), block);
                std::vector<double> mask = random_tensor(shape, rng).values();
                for (double& v : mask)
                    v = std::max(v, 0.0);
                auto mask_t = block_ref(HostTensor::from(shape, mask, dtype::Float32), block);
                auto mean = random_tensor(pc, rng),
                     inv = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
                EXPECT_EQ(check<BatchNormReluBackwardBlocked>(*handle, p,
                                                              {dy, x, scale, mean, inv, mask_t}),
                          "blocked");
            }
}

// 1-D and 3-D tensors (oneDNN's nCw8c/16c and nCdhw8c/16c): the convolution forward and both
// backward ops, and BatchNorm with and without the relu, on a channel count that does not fill
// its last block.
TEST_F(X86, OneAndThreeDimensionalBlockedOpsMatchNaive) {
    std::mt19937 rng(26);
    const size_t ic = 12, oc = 20;
    for (size_t spatial : {1u, 3u})
        for (size_t block : kBlocks) {
            TensorShape src_s{2, ic}, dst_s{2, oc}, w_s{oc, ic}, pc{1, oc};
            const size_t sizes[] = {4, 5, 6};
            for (size_t d = 0; d < spatial; ++d) {
                src_s[2 + d] = dst_s[2 + d] = sizes[3 - spatial + d];
                w_s[2 + d] = 3;
                pc[2 + d] = 1;
            }
            src_s.ndim = dst_s.ndim = w_s.ndim = pc.ndim = 2 + spatial;
            param::Convolution cp;
            cp.stride = cp.dilation = std::vector<int32_t>(spatial, 1);
            cp.padding = std::vector<int32_t>(spatial, 1);
            auto src = block_ref(random_tensor(src_s, rng), block);
            auto w = random_tensor(w_s, rng);
            auto bias = random_tensor(pc, rng);
            auto z = block_ref(random_tensor(dst_s, rng), block);
            EXPECT_TRUE(check<ConvBiasBlocked>(
                                *handle,
                                blocked_conv_param(cp, param::ConvBias::NonlineMode::RELU, block),
                                {src, w, bias, z})
                                .starts_with("onednn:"));
            auto diff = block_ref(random_tensor(dst_s, rng), block);
            EXPECT_TRUE(check<ConvolutionBackwardDataBlocked>(*handle, cp, {w, diff},
                                                              {blocked(src_s, block)})
                                .starts_with("onednn:"));
            EXPECT_TRUE(check<ConvolutionBackwardFilterBlocked>(*handle, cp, {src, diff}, {w_s})
                                .starts_with("onednn:"));
            param::BatchNorm p;
            auto x = block_ref(random_tensor(dst_s, rng), block);
            auto scale = random_tensor(pc, rng), shift = random_tensor(pc, rng);
            auto rm = random_tensor(pc, rng), rv = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
            EXPECT_EQ(check<BatchNormForwardBlocked>(*handle, p, {x, scale, shift, rm, rv}),
                      "blocked");
            EXPECT_EQ(check<BatchNormReluForwardBlocked>(*handle, p, {x, scale, shift, rm, rv}),
                      "blocked");
            // z as the relu's output: its signs mask diff.
            auto mean = random_tensor(pc, rng),
                 inv = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
            EXPECT_EQ(
                    check<BatchNormReluBackwardBlocked>(*handle, p, {diff, x, scale, mean, inv, z}),
                    "blocked");
        }
}

TEST_F(X86, BatchNormBlockedUpdatesRunningStatisticsInPlace) {
    std::mt19937 rng(23);
    const size_t c = 20;
    param::BatchNorm p;
    p.momentum = 0.5f;
    auto x = block_ref(random_tensor({3, c, 4, 4}, rng), 16);
    auto scale = random_tensor({1, c, 1, 1}, rng), bias = random_tensor({1, c, 1, 1}, rng);
    auto rm = random_tensor({1, c, 1, 1}, rng),
         rv = random_tensor({1, c, 1, 1}, rng, dtype::Float32, 0.5, 2.0);
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<BatchNormForwardBlocked>();
    ref->param() = p;
    auto want = run_op(*ref, {x, scale, bias, rm, rv});
    auto op = handle->create_operator<BatchNormForwardBlocked>();
    op->param() = p;
    // running_mean_out and running_var_out are the inputs' own memory.
    HostTensor dst(x.layout()), mean(rm.layout()), inv(rm.layout());
    TensorND in[] = {x.nd(), scale.nd(), bias.nd(), rm.nd(), rv.nd()};
    TensorND out[] = {dst.nd(), mean.nd(), inv.nd(), rm.nd(), rv.nd()};
    op->exec(in, out, {});
    EXPECT_TRUE(tensors_near(dst, want[0], 1e-4));
    EXPECT_TRUE(tensors_near(rm, want[3], 1e-5));
    EXPECT_TRUE(tensors_near(rv, want[4], 1e-5));
}

TEST_F(X86, BatchNormBlockedOtherBlocksGoToNaive) {
    std::mt19937 rng(24);
    param::BatchNorm p;
    auto x = block_ref(random_tensor({2, 6, 3, 3}, rng), 4);
    auto pc = random_tensor({1, 6, 1, 1}, rng, dtype::Float32, 0.5, 2.0);
    EXPECT_EQ(check<BatchNormForwardBlocked>(*handle, p, {x, pc, pc, pc, pc}), "naive");
}

// The residual add + relu fusions: the add, relu and mask inside our loops, on 2-D and 3-D
// tensors. The mask is a relu'd tensor, zero at about half its elements; the masked sum is an
// output of its own.
TEST_F(X86, BatchNormAddReluBlockedMatchesNaive) {
    std::mt19937 rng(27);
    for (size_t block : kBlocks)
        for (size_t c : {16u, 20u})
            for (Mode mode : {Mode::TRAINING, Mode::INFERENCE})
                for (const TensorShape& shape :
                     {TensorShape{3, c, 5, 6}, TensorShape{2, c, 3, 4, 2}}) {
                    param::BatchNorm p;
                    p.fwd_mode = mode;
                    TensorShape pc = shape;
                    for (size_t d = 0; d < pc.ndim; ++d)
                        pc[d] = d == 1 ? c : 1;
                    auto x = block_ref(random_tensor(shape, rng, dtype::Float32, -1.0, 3.0), block);
                    auto z = block_ref(random_tensor(shape, rng), block);
                    auto scale = random_tensor(pc, rng), bias = random_tensor(pc, rng);
                    auto rm = random_tensor(pc, rng, dtype::Float32, 0.0, 2.0),
                         rv = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
                    EXPECT_EQ(check<BatchNormAddReluForwardBlocked>(*handle, p,
                                                                    {x, scale, bias, rm, rv, z}),
                              "blocked");
                    auto dy = block_ref(random_tensor(shape, rng), block);
                    auto da = block_ref(random_tensor(shape, rng), block);
                    std::vector<double> mask = random_tensor(shape, rng).values();
                    for (double& v : mask)
                        v = std::max(v, 0.0);
                    auto mask_t = block_ref(HostTensor::from(shape, mask, dtype::Float32), block);
                    auto mean = random_tensor(pc, rng),
                         inv = random_tensor(pc, rng, dtype::Float32, 0.5, 2.0);
                    EXPECT_EQ(check<BatchNormAddReluBackwardBlocked>(
                                      *handle, p, {dy, da, x, scale, mean, inv, mask_t}),
                              "blocked");
                }
}
