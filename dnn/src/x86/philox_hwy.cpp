// Highway compiles this file once per instruction set (foreach_target.h re-includes it), and
// HWY_DYNAMIC_DISPATCH calls the best one the CPU has. Each 64-bit lane carries one block's
// counter words (32-bit values), so that MulEven gives Philox's 32 x 32 -> 64-bit products.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/philox_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include "src/common/philox.h"
#include "src/x86/philox_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void PhiloxWords(uint64_t seed, uint64_t first, size_t blocks, uint32_t* words) {
    size_t b = 0;
#if HWY_TARGET != HWY_SCALAR  // one-lane vectors cannot split a 64-bit lane into two 32-bit ones
    const hn::ScalableTag<uint64_t> d;
    const hn::Repartition<uint32_t, decltype(d)> d32;
    using V = hn::Vec<decltype(d)>;
    const size_t lanes = hn::Lanes(d);
    // The round keys, as philox4x32_10 bumps them.
    philox::Key keys[10];
    keys[0] = philox::key_of(seed);
    for (int r = 1; r < 10; ++r)
        keys[r] = {{keys[r - 1].w[0] + philox::kWeyl0, keys[r - 1].w[1] + philox::kWeyl1}};
    const V low = hn::Set(d, 0xffffffffull);
    const auto mul0 = hn::BitCast(d32, hn::Set(d, philox::kMul0));
    const auto mul1 = hn::BitCast(d32, hn::Set(d, philox::kMul1));
    HWY_ALIGN uint64_t out[4][HWY_MAX_BYTES / sizeof(uint64_t)];
    for (; b + lanes <= blocks; b += lanes) {
        V index = hn::Add(hn::Set(d, first + b), hn::Iota(d, 0));
        V c0 = hn::And(index, low), c1 = hn::ShiftRight<32>(index);
        V c2 = hn::Zero(d), c3 = hn::Zero(d);
        for (const philox::Key& k : keys) {
            V p0 = hn::MulEven(hn::BitCast(d32, c0), mul0);
            V p1 = hn::MulEven(hn::BitCast(d32, c2), mul1);
            V n0 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p1), c1), hn::Set(d, uint64_t{k.w[0]}));
            V n2 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p0), c3), hn::Set(d, uint64_t{k.w[1]}));
            c1 = hn::And(p1, low);
            c3 = hn::And(p0, low);
            c0 = n0;
            c2 = n2;
        }
        hn::Store(c0, d, out[0]);
        hn::Store(c1, d, out[1]);
        hn::Store(c2, d, out[2]);
        hn::Store(c3, d, out[3]);
        for (size_t l = 0; l < lanes; ++l)
            for (size_t w = 0; w < 4; ++w)
                words[4 * (b + l) + w] = static_cast<uint32_t>(out[w][l]);
    }
#endif
    for (; b < blocks; ++b) {
        philox::Block blk = philox::block_at(seed, first + b);
        for (size_t w = 0; w < 4; ++w)
            words[4 * b + w] = blk.w[w];
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(PhiloxWords);

void philox_words(uint64_t seed, uint64_t first, size_t blocks, uint32_t* words) {
    HWY_DYNAMIC_DISPATCH(PhiloxWords)(seed, first, blocks, words);
}

}  // namespace neomeg::dnn::x86
#endif
