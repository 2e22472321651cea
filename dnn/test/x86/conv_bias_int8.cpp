// Quantized ConvBias on the x86 handle (our exact int16-pair GEMM, conv_bias_int8.h) against
// naive's exact double sums: QuantizedS8 and Quantized8Asymm src (zero points 0, 37, 128, 255),
// random and extreme values (every element -128 or 127, whose pairs overflow int16, and uint8 255
// against -128), 1-D to 3-D, groups, stride, padding, dilation, both modes, kernels up to 3x3x512,
// bias absent, per channel, per image and channel, and near int32's ends (saturating adds), RELU,
// padded inputs and outputs, a kernel too large for an exact int32 sum and the largest that is
// not, and a filter changed between calls (untracked, and tracked by the weight cache's storage
// version). The cases reach each source of B (the image, wide rows of the padded image, runs
// gathered from it, im2col), filter rows and output positions that are not multiples of the
// GEMM's tile, K over several blocks of the sum, and rows split into parts sharing one packed B.
// The dnn.x86.isa.* entries rerun these with oneDNN and Highway capped at AVX2.
#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/weight_cache.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Nonline = param::ConvBias::NonlineMode;

const DType kFilter = DType::quantized_s8(0.25f);
const DType kBias = DType::quantized_s32(0.125f);  // src scale 0.5 x filter scale 0.25

std::vector<DType> srcs() {
    return {DType::quantized_s8(0.5f), DType::quantized_8asymm(0.5f, 0),
            DType::quantized_8asymm(0.5f, 37), DType::quantized_8asymm(0.5f, 128),
            DType::quantized_8asymm(0.5f, 255)};
}

std::vector<ConvCase> cases() {
    return {
            {{1, 1, 1, 1}, {1, 1, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 3, 7, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{3, 2, 11, 13}, {7, 2, 3, 2}, conv_param({2, 3}, {1, 0}, {1, 1}, 1, true)},
            {{2, 6, 8, 8}, {9, 2, 3, 3}, conv_param({1, 1}, {1, 1}, {2, 1}, 3)},
            {{2, 8, 9, 9}, {8, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 8)},
            {{1, 3, 17, 19}, {13, 3, 7, 7}, conv_param({2, 2}, {3, 3}, {1, 1})},
            {{5, 16, 13, 13}, {32, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 16, 12, 12}, {17, 16, 1, 1}, conv_param({2, 2}, {0, 0}, {1, 1})},
            {{3, 4, 23}, {6, 2, 5}, conv_param({1}, {2}, {3}, 2)},
            {{2, 4, 5, 7, 6},
             {6, 4, 3, 3, 2},
             conv_param({2, 1, 2}, {1, 1, 0}, {1, 1, 1}, 1, true)},
            // An odd K over two of the GEMM's blocks of the sum (57 x 3 x 3 = 513).
            {{1, 57, 6, 6}, {40, 57, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            // A ResNet-18 stage-4 kernel (3x3x512: K = 4608) on a small image.
            {{1, 512, 5, 5}, {19, 512, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            // Rows split between threads (few tiles), in parts that do not divide them.
            {{1, 64, 7, 7}, {150, 64, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            // B's rows straight from the padded image ("wide" rows): tiles that end inside an
            // output row, 13 filter rows (two row blocks, the second cut), convolution mode,
            // padding wider than the kernel's reach, dilation, and 2 blocks of the sum.
            {{1, 4, 40, 45}, {13, 4, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{2, 4, 9, 10}, {6, 4, 3, 2}, conv_param({1, 1}, {1, 0}, {1, 2}, 1, true)},
            {{1, 3, 6, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {3, 2}, {1, 1})},
            {{1, 60, 20, 21}, {7, 60, 3, 3}, conv_param({1, 1}, {1, 1}, {2, 2})},
            // Rows gathered from the padded image (many filter rows): 196 columns (12 strips and
            // 4 columns), 130 rows (not a multiple of 6); K = 1539 in 4 blocks of the sum.
            {{1, 4, 14, 14}, {130, 4, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{1, 171, 5, 5}, {130, 171, 3, 3}, conv_param({1, 1}, {0, 0}, {1, 1})},
            // Gathered in groups; a 1x1 kernel whose B is the image itself: 100 columns (6 strips
            // and 4 columns), 9 rows, odd K.
            {{1, 12, 8, 8}, {390, 4, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 3)},
            {{2, 33, 10, 10}, {9, 33, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            // A last strip of one vector's columns or fewer (18 columns), and a strip of 9.
            {{1, 5, 3, 6}, {7, 5, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{1, 5, 3, 3}, {7, 5, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
    };
}

TensorShape channel_shape(const TensorShape& dst) {
    TensorShape b = dst;
    for (size_t i = 0; i < b.ndim; ++i)
        if (i != 1)
            b[i] = 1;
    return b;
}

Checker<ConvBias> checker(Handle* h, DType src, const param::Convolution& p, Nonline act) {
    Checker<ConvBias> c(h);
    c.set_param(conv_bias_param(p, act)).set_dtype(0, src).set_dtype(1, kFilter);
    c.set_dtype(2, kBias).set_dtype(3, kBias).set_epsilon(0);
    const bool asymm = src.enumv() == DTypeEnum::Quantized8Asymm;
    c.set_range(0, asymm ? 0 : -128, asymm ? 256 : 128).set_range(1, -128, 128);
    c.set_range(2, -100000, 100000);
    return c;
}

}  // namespace

TEST_F(X86, QuantizedConvBiasMatchesNaive) {
    for (const ConvCase& k : cases())
        for (DType src : srcs())
            for (Nonline act : {Nonline::IDENTITY, Nonline::RELU}) {
                TensorShape dst = conv_dst_shape(k), none{};
                TensorShape per_image = channel_shape(dst);
                per_image[0] = dst[0];
                auto c = checker(handle.get(), src, k.p, act);
                c.execs({k.src, k.filter, channel_shape(dst), none});
                c.execs({k.src, k.filter, none, none});
                c.execs({k.src, k.filter, per_image, none});
                c.execs({k.src, k.filter, TensorShape(std::vector<size_t>(dst.ndim, 1)), none});
                // Padded src, filter and bias, then a padded dst.
                c.set_noncontiguous(true).execs({k.src, k.filter, channel_shape(dst), none});
            }
}

// Every element at int8's or uint8's end: pairs of products reach +-32768 * 2 and 255 * 128 * 2,
// beyond int16 (where a vpmaddubsw-based kernel saturates), and the sums of 3x3x512 products
// reach 75 million.
TEST_F(X86, QuantizedConvBiasExtremeValuesMatchNaive) {
    const ConvCase cs[] = {
            {{2, 512, 4, 4}, {8, 512, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{1, 7, 6, 5}, {5, 7, 3, 3}, conv_param({2, 1}, {1, 2}, {1, 1})},
            {{1, 4, 9, 9}, {4, 2, 3, 3}, conv_param({1, 1}, {1, 1}, {2, 2}, 2)},
            {{1, 301, 5, 5}, {4, 301, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
    };
    for (const ConvCase& k : cs) {
        TensorShape dst = conv_dst_shape(k);
        const size_t ns = k.src.total_nr_elems(), nf = k.filter.total_nr_elems();
        for (DType src : srcs()) {
            const bool asymm = src.enumv() == DTypeEnum::Quantized8Asymm;
            for (double sv : asymm ? std::vector<double>{0, 255} : std::vector<double>{-128, 127})
                for (double fv : {-128.0, 127.0})
                    for (Nonline act : {Nonline::IDENTITY, Nonline::RELU}) {
                        auto c = checker(handle.get(), src, k.p, act);
                        c.set_values(0, std::vector<double>(ns, sv));
                        c.set_values(1, std::vector<double>(nf, fv));
                        c.execs({k.src, k.filter, channel_shape(dst), {}});
                        c.execs({k.src, k.filter, {}, {}});
                    }
        }
    }
}

// Sums plus a bias near int32's ends saturate in naive's double; so must ours.
TEST_F(X86, QuantizedConvBiasSaturatesBiasAdds) {
    ConvCase k{{1, 64, 5, 5}, {4, 64, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    TensorShape dst = conv_dst_shape(k);
    for (Nonline act : {Nonline::IDENTITY, Nonline::RELU}) {
        auto c = checker(handle.get(), DType::quantized_s8(0.5f), k.p, act);
        c.set_values(2, {2147483000.0, -2147483000.0, 2147483647.0, -2147483648.0});
        c.set_range(0, -128, 128).set_range(1, -128, 128);
        c.execs({k.src, k.filter, channel_shape(dst), {}});
    }
}

// 7400 x 3 x 3 products of 255 and -128 sum below int32's minimum: naive saturates, and the x86
// kernel (whose int32 sums would wrap) must give the same.
TEST_F(X86, QuantizedConvBiasHugeKernelSaturatesAsNaive) {
    ConvCase k{{1, 7400, 3, 3}, {2, 7400, 3, 3}, conv_param({1, 1}, {0, 0}, {1, 1})};
    auto c = checker(handle.get(), DType::quantized_8asymm(0.5f, 0), k.p, Nonline::IDENTITY);
    c.set_values(0, std::vector<double>(k.src.total_nr_elems(), 255));
    c.set_values(1, std::vector<double>(k.filter.total_nr_elems(), -128));
    c.execs({k.src, k.filter, {}, {}});
}

// The largest kernel whose int32 sums cannot overflow (65793 products of 255 and -128 sum to
// -2147483520) runs our kernel and must be exact; one product more (-2147516160) saturates in
// naive, where the x86 kernel hands the call to naive.
TEST_F(X86, QuantizedConvBiasAtTheExactSumsEdge) {
    for (size_t k : {size_t{65793}, size_t{65794}}) {
        ConvCase c1{{1, k, 1, 1}, {3, k, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})};
        auto c = checker(handle.get(), DType::quantized_8asymm(0.5f, 0), c1.p, Nonline::IDENTITY);
        c.set_values(0, std::vector<double>(k, 255));
        c.set_values(1, std::vector<double>(3 * k, -128));
        c.execs({c1.src, c1.filter, {}, {}});
        c.set_values(1, std::vector<double>(3 * k, 127));
        c.execs({c1.src, c1.filter, {1, 3, 1, 1}, {}});
    }
}

// The filter is packed on every call: a second call with another filter (same layouts, so the
// same plan) gives the new result.
TEST_F(X86, QuantizedConvBiasRereadsTheFilter) {
    ConvCase k{{2, 8, 9, 9}, {16, 8, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    TensorShape dst = conv_dst_shape(k);
    auto p = conv_bias_param(k.p, Nonline::RELU);
    auto op = handle->create_operator<ConvBias>();
    op->param() = p;
    auto ref = Handle::make_naive()->create_operator<ConvBias>();
    ref->param() = p;
    std::mt19937 rng(5);
    HostTensor src(TensorLayout(k.src, DType::quantized_s8(0.5f)));
    HostTensor bias(TensorLayout(channel_shape(dst), kBias));
    fill_uniform(src, -128, 128, rng);
    fill_uniform(bias, -1000, 1000, rng);
    for (int call = 0; call < 2; ++call) {
        HostTensor filter(TensorLayout(k.filter, kFilter));
        fill_uniform(filter, -128, 128, rng);
        std::vector<HostTensor> in{src, filter, bias, HostTensor()};
        EXPECT_TRUE(tensors_near(run_op(*op, in)[0], run_op(*ref, in)[0], 0)) << "call " << call;
    }
}

// A filter with a storage identity is packed into the weight cache once its value is seen twice;
// written in place (a new version), the next call packs the new values.
TEST_F(X86, QuantizedConvBiasCachedFilterWrittenInPlaceGivesTheNewResult) {
    using x86::WeightCache;
    WeightCache::instance().clear();
    ConvCase k{{1, 16, 8, 8}, {24, 16, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    TensorShape dst_shape = conv_dst_shape(k);
    auto op = handle->create_operator<ConvBias>();
    op->param() = conv_bias_param(k.p, Nonline::IDENTITY);
    auto ref = Handle::make_naive()->create_operator<ConvBias>();
    ref->param() = op->param();
    std::mt19937 rng(9);
    HostTensor src(TensorLayout(k.src, DType::quantized_s8(0.5f)));
    HostTensor filter(TensorLayout(k.filter, kFilter));
    fill_uniform(src, -128, 128, rng);
    fill_uniform(filter, -128, 128, rng);
    StorageId id;
    auto run = [&] {
        HostTensor dst(TensorLayout(dst_shape, kBias));
        std::vector<TensorND> in{src.nd(),
                                 {filter.nd().raw_ptr(), filter.layout(), &id},
                                 HostTensor().nd(),
                                 HostTensor().nd()};
        std::vector<TensorND> out{dst.nd()};
        std::vector<TensorLayout> li{src.layout(), filter.layout(), {}, {}}, lo{dst.layout()};
        std::vector<std::byte> ws(op->get_workspace_in_bytes(li, lo));
        op->exec(in, out, {ws.data(), ws.size()});
        auto want = run_op(*ref, {src, filter, HostTensor(), HostTensor()});
        EXPECT_TRUE(tensors_near(dst, want[0], 0));
    };
    for (int call = 0; call < 3; ++call)
        run();
    EXPECT_EQ(WeightCache::instance().stats().hits, 1u);
    fill_uniform(filter, -128, 128, rng);
    id.note_write();
    run();
    run();
    EXPECT_EQ(WeightCache::instance().stats().fills, 2u);
}
