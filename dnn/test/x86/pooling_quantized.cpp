// MAX pooling forward on QuantizedS8 and Quantized8Asymm on the x86 handle (oneDNN's s8/u8
// pooling) against naive, exactly: 1-D to 3-D, ResNet's 3x3/2 with padding, 2x2/2, windows
// beyond the input's edge, random values and every element at the storage's ends (padding must
// never win, whatever its implementation pads with), padded operands; and the averages, on naive.
#include "neomeg/dnn/operators/pooling.h"
#include "x86/pooling_case.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const PoolCase kCases[] = {
        {{1, 64, 112, 112}, {3, 3}, {2, 2}, {1, 1}},
        {{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}},
        {{2, 5, 7, 9}, {3, 2}, {1, 2}, {1, 1}},
        {{3, 4, 11}, {3}, {2}, {1}},
        {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 1, 0}},
};

}  // namespace

TEST_F(X86, QuantizedMaxPoolingMatchesNaive) {
    for (DType dt : {DType::quantized_s8(0.5f), DType::quantized_8asymm(0.25f, 128),
                     DType::quantized_8asymm(0.25f, 0)}) {
        const bool asymm = dt.enumv() == DTypeEnum::Quantized8Asymm;
        for (const PoolCase& k : kCases) {
            Checker<PoolingForward> c(handle.get());
            c.set_param(pool_param(param::Pooling::Mode::MAX, k)).set_dtype(0, dt).set_epsilon(0);
            c.set_range(0, asymm ? 0 : -128, asymm ? 256 : 128).execs({k.src});
            c.set_noncontiguous(true).execs({k.src});
            for (double v : asymm ? std::vector<double>{0, 255} : std::vector<double>{-128, 127}) {
                Checker<PoolingForward> e(handle.get());
                e.set_param(pool_param(param::Pooling::Mode::MAX, k)).set_dtype(0, dt);
                e.set_epsilon(0).set_values(0, std::vector<double>(k.src.total_nr_elems(), v));
                e.execs({k.src});
            }
        }
    }
}

// Averages of quantized tensors round half away from zero (MegEngine's rule, naive's); oneDNN's
// s8/u8 average rounds to even, so the x86 handle leaves them to naive: the integers agree
// exactly, ties included (a 2x2 window of 1, 2, 0, 3 and a padded one of 1 and 2 average to .5).
TEST_F(X86, QuantizedAveragePoolingMatchesNaiveExactly) {
    using Mode = param::Pooling::Mode;
    for (DType dt : {DType::quantized_s8(0.5f), DType::quantized_8asymm(0.25f, 128)})
        for (Mode mode : {Mode::AVERAGE, Mode::AVERAGE_COUNT_EXCLUDE_PADDING})
            for (const PoolCase& k : kCases) {
                Checker<PoolingForward> c(handle.get());
                c.set_param(pool_param(mode, k)).set_dtype(0, dt).set_epsilon(0);
                c.set_range(0, 0, 4).execs({k.src});  // small integers: many .5 ties
            }
}
