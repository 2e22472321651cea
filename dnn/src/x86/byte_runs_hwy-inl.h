// Copies and fills of short byte runs (a row of a few vectors) inside a loop over many of them,
// shared by Padding's CONSTANT rows (padding_constant_hwy.cpp) and the embedding's row gather
// (index_rows_hwy.cpp); StreamRun also by stream_bytes (stream_copy_hwy.cpp). A memcpy call per row
// of 112 or 128 bytes cost a call and libc's size dispatch per row, and std::fill_n of a border is
// compiled for the baseline's 16-byte stores. Included once per target like Highway's own -inl
// headers (the guard flips with HWY_TARGET_TOGGLE).
#if defined(NEOMEG_X86_BYTE_RUNS_HWY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEOMEG_X86_BYTE_RUNS_HWY_INL_H_
#undef NEOMEG_X86_BYTE_RUNS_HWY_INL_H_
#else
#define NEOMEG_X86_BYTE_RUNS_HWY_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// n (below a vector) bytes from s to d as two pieces of the largest power of two up to 16 that n
// holds, the second ending at n (they overlap where n is not that power): two moves whatever n.
HWY_INLINE void CopyShortRun(uint8_t* HWY_RESTRICT d, const uint8_t* HWY_RESTRICT s, size_t n) {
    if (n >= 16) {
        for (size_t i = 0; i + 16 <= n; i += 16)
            std::memcpy(d + i, s + i, 16);
        std::memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 8) {
        std::memcpy(d, s, 8);
        std::memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        std::memcpy(d, s, 4);
        std::memcpy(d + n - 4, s + n - 4, 4);
    } else if (n >= 2) {
        std::memcpy(d, s, 2);
        std::memcpy(d + n - 2, s + n - 2, 2);
    } else if (n == 1) {
        d[0] = s[0];
    }
}

// Copies n bytes from s to d (not overlapping): whole vectors, then one more ending at n.
HWY_INLINE void CopyRun(uint8_t* HWY_RESTRICT d, const uint8_t* HWY_RESTRICT s, size_t n) {
    const hn::ScalableTag<uint8_t> du;
    const size_t lanes = hn::Lanes(du);
    if (lanes < 16 || n < lanes)  // HWY_SCALAR's one-byte vector: the pieces
        return CopyShortRun(d, s, n);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::LoadU(du, s + i), du, d + i);
    if (i < n)
        hn::StoreU(hn::LoadU(du, s + n - lanes), du, d + n - lanes);
}

// CopyRun with non-temporal stores for the whole vectors from d's first vector boundary on (weakly
// ordered until an sfence: stream_fence()).
HWY_INLINE void StreamRun(uint8_t* HWY_RESTRICT d, const uint8_t* HWY_RESTRICT s, size_t n) {
    const hn::ScalableTag<uint8_t> du;
    const size_t lanes = hn::Lanes(du);
    const size_t head = (lanes - reinterpret_cast<uintptr_t>(d) % lanes) % lanes;
    if (lanes < 16 || n < head + lanes)
        return CopyRun(d, s, n);
    if (head > 0)
        CopyRun(d, s, head);
    size_t i = head;
    for (; i + lanes <= n; i += lanes)
        hn::Stream(hn::LoadU(du, s + i), du, d + i);
    if (i < n)
        CopyRun(d + i, s + i, n - i);
}

// A value of `elem` bytes (a power of two up to 16) repeated across a vector and across at least
// 16 bytes in memory (the pieces FillRun stores): any store of its first k bytes (k a multiple of
// elem) at an element boundary writes whole copies of the value.
struct FillPattern {
    HWY_ALIGN uint8_t bytes[HWY_MAX_BYTES > 16 ? HWY_MAX_BYTES : 16];

    FillPattern(const void* value, size_t elem) {
        const auto* v = static_cast<const uint8_t*>(value);
        for (size_t j = 0; j < sizeof(bytes); ++j)
            bytes[j] = v[j % elem];
    }
};

// Writes n bytes at d (an element boundary; n a multiple of the element) with the pattern held in
// p (a vector) and pat (memory). The pieces below a vector are powers of two from 2 bytes up, each
// a multiple of every element they are used for, since n is. A vector narrower than 16 bytes
// (HWY_SCALAR's) may be narrower than the element: the pieces only there.
template <class V>
HWY_INLINE void FillRun(uint8_t* d, size_t n, V p, const uint8_t* pat) {
    const hn::ScalableTag<uint8_t> du;
    const size_t lanes = hn::Lanes(du);
    if (lanes >= 16 && n >= lanes) {
        // A long run (a border row or plane) in stores aligned to the vector from its second on.
        hn::StoreU(p, du, d);
        size_t i = lanes - reinterpret_cast<uintptr_t>(d) % lanes;
        for (; i + lanes <= n; i += lanes)
            hn::Store(p, du, d + i);
        if (i < n)
            hn::StoreU(p, du, d + n - lanes);
    } else if (n >= 16) {
        for (size_t i = 0; i + 16 <= n; i += 16)
            std::memcpy(d + i, pat, 16);
        std::memcpy(d + n - 16, pat, 16);
    } else if (n >= 8) {
        std::memcpy(d, pat, 8);
        std::memcpy(d + n - 8, pat, 8);
    } else if (n >= 4) {
        std::memcpy(d, pat, 4);
        std::memcpy(d + n - 4, pat, 4);
    } else if (n >= 2) {
        std::memcpy(d, pat, 2);
        std::memcpy(d + n - 2, pat, 2);
    } else if (n == 1) {
        d[0] = pat[0];
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // NEOMEG_X86_BYTE_RUNS_HWY_INL_H_
