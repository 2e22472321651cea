// The stride-2 tap selection within 128-bit blocks that the AVX2 depthwise loops share
// (depthwise_direct_hwy.cpp, depthwise_3x3_avx2_hwy.cpp, depthwise_3x3_avx512_hwy.cpp). A tap's
// columns along a row are every other column: ConcatEven keeps the even lanes of two vectors with a
// vshufps and a cross-lane vpermpd, while the even (odd) lanes within each block take one vshufps.
// Lane l of such a vector then holds output kBlockLane[l] of its group of 8, the same order for
// every tap, so a loop accumulates in it and restores memory order once per stored vector
// (BlockOrder), or, summing over lanes, brings its other operand into it. Highway 1.0 has no
// per-block ConcatEven: these use the raw registers. The AVX-512 loops
// (depthwise_3x3_avx512_hwy.cpp) take the same selection on four blocks, where the two directions
// between the orders are different permutes (ToLanes, ToMemory). Included once per target, after
// highway.h, like Highway's own -inl headers (the guard flips with HWY_TARGET_TOGGLE); defined for
// the AVX2 and AVX-512 targets. Unroll, which the files' loops use on every target, is here too.
#if defined(NEOMEG_X86_DEPTHWISE_BLOCKS_HWY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEOMEG_X86_DEPTHWISE_BLOCKS_HWY_INL_H_
#undef NEOMEG_X86_DEPTHWISE_BLOCKS_HWY_INL_H_
#else
#define NEOMEG_X86_DEPTHWISE_BLOCKS_HWY_INL_H_
#endif

#include <hwy/highway.h>

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
template <class F, size_t... I>
HWY_INLINE void UnrollSeq(F&& f, std::index_sequence<I...>) {
    (f(std::integral_constant<size_t, I>{}), ...);
}

// f(i) for i < Count, i a compile-time constant.
template <size_t Count, class F>
HWY_INLINE void Unroll(F&& f) {
    UnrollSeq(f, std::make_index_sequence<Count>{});
}

#if HWY_TARGET == HWY_AVX2
namespace blocks {
namespace hn = hwy::HWY_NAMESPACE;
using VF = hn::Vec<hn::Full256<float>>;

alignas(32) inline constexpr int32_t kBlockLane[8] = {0, 1, 4, 5, 2, 3, 6, 7};

// Elements 0, 2, ..., 14 (1, 3, ..., 15) of lo:hi, in kBlockLane's order.
HWY_INLINE VF EvenInBlocks(VF lo, VF hi) {
    return VF{_mm256_shuffle_ps(lo.raw, hi.raw, _MM_SHUFFLE(2, 0, 2, 0))};
}
HWY_INLINE VF OddInBlocks(VF lo, VF hi) {
    return VF{_mm256_shuffle_ps(lo.raw, hi.raw, _MM_SHUFFLE(3, 1, 3, 1))};
}

// Memory order to kBlockLane's and back (swaps the middle 64-bit pairs: an involution).
HWY_INLINE VF BlockOrder(VF v) {
    return VF{_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v.raw), 0xD8))};
}
HWY_INLINE VF ToLanes(VF v) {
    return BlockOrder(v);
}
HWY_INLINE VF ToMemory(VF v) {
    return BlockOrder(v);
}
}  // namespace blocks
#elif HWY_TARGET == HWY_AVX3
// The same on AVX-512: four blocks, so lane l = 4k + i holds output 2k + i (i < 2) or 8 + 2k +
// i - 2, and the two directions between the orders are different permutes (vpermps each).
namespace blocks {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::Full512<float>;
using VF = hn::Vec<DF>;

alignas(64) inline constexpr int32_t kBlockLane[16] = {0, 1, 8,  9,  2, 3, 10, 11,
                                                       4, 5, 12, 13, 6, 7, 14, 15};
// Its inverse: the lane that holds output o.
alignas(64) inline constexpr int32_t kLaneOf[16] = {0, 1, 4, 5, 8,  9,  12, 13,
                                                    2, 3, 6, 7, 10, 11, 14, 15};

HWY_INLINE VF EvenInBlocks(VF lo, VF hi) {
    return VF{_mm512_shuffle_ps(lo.raw, hi.raw, _MM_SHUFFLE(2, 0, 2, 0))};
}
HWY_INLINE VF OddInBlocks(VF lo, VF hi) {
    return VF{_mm512_shuffle_ps(lo.raw, hi.raw, _MM_SHUFFLE(3, 1, 3, 1))};
}

// Memory order to kBlockLane's, and back.
HWY_INLINE VF ToLanes(VF v) {
    const DF d;
    return hn::TableLookupLanes(v, hn::SetTableIndices(d, kBlockLane));
}
HWY_INLINE VF ToMemory(VF v) {
    const DF d;
    return hn::TableLookupLanes(v, hn::SetTableIndices(d, kLaneOf));
}
}  // namespace blocks
#endif
}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
