// Relayout on x86: src and dst first merge the axes that are contiguous in both (and drop size-1
// axes); then rows dense in both copy with memcpy, a view whose unit-stride axis differs between
// src and dst (a transpose, NCHW <-> NHWC) turns elements of 4, 2 and 1 bytes straight from src
// to dst in register blocks (copy_turned; 2 and 1 bytes only where dst does not stream), and
// 8-byte ones, or a streamed dst whose rows are not whole cache lines, through tiles that stay in
// L1, so that both sides stream whole cache lines (a dst larger than the caches is written with
// non-temporal stores, which skip reading each dst line before writing it), a value repeated
// along dst's dense rows fills them, and anything else walks its innermost axis with its strides.
// Large tensors split their outer work across OpenMP threads, and long rows their rows (a
// contiguous copy is one row). Like naive, src and dst must not overlap; every dtype is copied as
// raw elements of its size.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/relayout_copy.h"
#include "src/x86/stream_copy_hwy.h"
#include "src/x86/transpose_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

// The walk's axes, outermost first: the shape with src's and dst's strides, in elements.
struct Axes {
    size_t n = 0;
    std::array<size_t, TensorLayout::MAX_NDIM> shape{};
    std::array<ptrdiff_t, TensorLayout::MAX_NDIM> ss{}, ds{};
};

Axes merge_axes(const TensorLayout& s, const TensorLayout& d) {
    Axes a;
    for (size_t k = 0; k < s.ndim; ++k) {
        if (s[k] == 1)
            continue;
        auto len = static_cast<ptrdiff_t>(s[k]);
        if (a.n > 0 && a.ss[a.n - 1] == s.stride[k] * len && a.ds[a.n - 1] == d.stride[k] * len) {
            a.shape[a.n - 1] *= s[k];
        } else {
            a.shape[a.n] = s[k];
            ++a.n;
        }
        a.ss[a.n - 1] = s.stride[k];
        a.ds[a.n - 1] = d.stride[k];
    }
    return a;
}

// The axes except `skip` (a mask of up to two axes): the walk outside the kernel's own axes.
struct Outer {
    size_t n = 0, count = 1;
    std::array<size_t, TensorLayout::MAX_NDIM> shape{};
    std::array<ptrdiff_t, TensorLayout::MAX_NDIM> ss{}, ds{};
};

Outer outer_of(const Axes& a, unsigned skip) {
    Outer o;
    for (size_t k = 0; k < a.n; ++k)
        if (!(skip >> k & 1)) {
            o.shape[o.n] = a.shape[k];
            o.ss[o.n] = a.ss[k];
            o.ds[o.n] = a.ds[k];
            o.count *= a.shape[k];
            ++o.n;
        }
    return o;
}

// Calls f(src offset, dst offset) for outer indices [begin, end), in row-major order.
template <class F>
void walk_outer(const Outer& o, size_t begin, size_t end, F&& f) {
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    ptrdiff_t so = 0, dof = 0;
    for (size_t k = o.n, rest = begin; k-- > 0;) {
        idx[k] = rest % o.shape[k];
        rest /= o.shape[k];
        so += static_cast<ptrdiff_t>(idx[k]) * o.ss[k];
        dof += static_cast<ptrdiff_t>(idx[k]) * o.ds[k];
    }
    for (size_t i = begin; i < end; ++i) {
        f(so, dof);
        for (size_t k = o.n; k-- > 0;) {
            so += o.ss[k];
            dof += o.ds[k];
            if (++idx[k] < o.shape[k])
                break;
            so -= o.ss[k] * static_cast<ptrdiff_t>(o.shape[k]);
            dof -= o.ds[k] * static_cast<ptrdiff_t>(o.shape[k]);
            idx[k] = 0;
        }
    }
}

// A row at least this long is cut into pieces of about this many elements for the threads: a
// contiguous tensor merges into one row (Concat or Split along the first axis, a one-hot's zeros),
// which would otherwise run on one thread whatever its size.
constexpr size_t kRowPiece = kParallelGrain;

// Calls f(src offset, dst offset, begin, end) for every row of `len` elements along the walk's
// innermost axis, [begin, end) a piece of it, rows and pieces split across threads.
template <class F>
void for_row_pieces(const Outer& o, size_t len, F&& f) {
    const size_t pieces = std::max<size_t>(1, len / kRowPiece);
    const size_t piece = (len + pieces - 1) / pieces;
    parallel_ranges(o.count * pieces, o.count * len, kParallelGrain, [&](size_t b, size_t e) {
        if (pieces == 1) {
            walk_outer(o, b, e, [&](ptrdiff_t so, ptrdiff_t dof) { f(so, dof, 0, len); });
            return;
        }
        for (size_t u = b; u < e; ++u) {
            size_t p0 = (u % pieces) * piece, p1 = std::min(len, p0 + piece);
            walk_outer(o, u / pieces, u / pieces + 1,
                       [&](ptrdiff_t so, ptrdiff_t dof) { f(so, dof, p0, p1); });
        }
    });
}

template <class T>
void copy_strided(const Axes& a, const T* s, T* d) {
    size_t last = a.n - 1;
    ptrdiff_t ss = a.ss[last], ds = a.ds[last];
    for_row_pieces(outer_of(a, 1u << last), a.shape[last],
                   [&](ptrdiff_t so, ptrdiff_t dof, size_t b, size_t e) {
                       for (size_t i = b; i < e; ++i)
                           d[dof + static_cast<ptrdiff_t>(i) * ds] =
                                   s[so + static_cast<ptrdiff_t>(i) * ss];
                   });
}

// 4-byte elements whose dst is in-cache-sized, or streamed with whole aligned lines, and 2- and
// 1-byte elements whose dst is in-cache-sized: straight from src to dst (transpose_hwy.h), no
// tile buffer.
// One unit of parallel work is an outer index, a group of bands of 16 (32 for 4-byte elements on
// AVX2) along kd (dst's unit axis) and a chunk of up to kChunk along ks, the chunks of a band
// adjacent so that a thread's src rows stay sequential. A group covers at least a 64-byte line of
// dst, and a short ks (NHWC -> NCHW: the channels) takes several bands per unit, so that each unit
// (one dispatched call) moves about kUnit elements.
void turn(const uint32_t* s, ptrdiff_t s_row, size_t nj, size_t ni, uint32_t* d, ptrdiff_t d_row,
          bool stream) {
    transpose_u32(s, s_row, nj, ni, d, d_row, stream);
}
void turn(const uint16_t* s, ptrdiff_t s_row, size_t nj, size_t ni, uint16_t* d, ptrdiff_t d_row,
          bool /*stream: never for 2-byte elements*/) {
    transpose_u16(s, s_row, nj, ni, d, d_row);
}
void turn(const uint8_t* s, ptrdiff_t s_row, size_t nj, size_t ni, uint8_t* d, ptrdiff_t d_row,
          bool /*stream: never for 1-byte elements*/) {
    transpose_u8(s, s_row, nj, ni, d, d_row);
}

template <class T>
void copy_turned(const Axes& a, size_t ks, size_t kd, const T* s, T* d, bool stream) {
    constexpr size_t kChunk = 1024, kUnit = 16384;
    // 4-byte elements: the band the dispatched walk takes whole (32 rows on AVX2).
    const size_t band = sizeof(T) == 4 ? transpose_u32_band_rows() : 16;
    Outer o = outer_of(a, (1u << ks) | (1u << kd));
    size_t ns = a.shape[ks], nd = a.shape[kd];
    ptrdiff_t s_kd = a.ss[kd], d_ks = a.ds[ks];
    size_t chunk = std::min(ns, kChunk), chunks = (ns + chunk - 1) / chunk;
    // At least a 64-byte line of dst per group: two threads writing 16-element pieces of one dst
    // line (1- and 2-byte elements) fight over it (a 64 x 3136 int8 transpose took 30x longer
    // at two threads than at one).
    size_t group = std::max(band * std::max<size_t>(1, kUnit / (band * chunk)), 64 / sizeof(T));
    size_t groups = (nd + group - 1) / group;
    parallel_ranges(
            o.count * groups * chunks, o.count * ns * nd, kParallelGrain, [&](size_t b, size_t e) {
                for (size_t u = b; u < e; ++u) {
                    size_t c = u % chunks, g = u / chunks % groups;
                    size_t j0 = g * group, nj = std::min(nd - j0, group);
                    size_t i0 = c * chunk, ni = std::min(ns - i0, chunk);
                    size_t outer = u / chunks / groups;
                    walk_outer(o, outer, outer + 1, [&](ptrdiff_t so, ptrdiff_t dof) {
                        auto sj = static_cast<ptrdiff_t>(j0), si = static_cast<ptrdiff_t>(i0);
                        turn(s + so + sj * s_kd + si, s_kd, nj, ni, d + dof + si * d_ks + sj, d_ks,
                             stream);
                    });
                }
                if (stream)
                    stream_fence();
            });
}

// Whether every dst row of a tiled copy starts on a 64-byte line (dst aligned, its strides other
// than along kd multiples of 16 elements of 4 bytes), so that copy_turned's 16-element pieces are
// whole lines.
bool lines_aligned(const Axes& a, size_t kd, const void* d) {
    if (reinterpret_cast<uintptr_t>(d) % 64 != 0)
        return false;
    for (size_t k = 0; k < a.n; ++k)
        if (k != kd && a.ds[k] % 16 != 0)
            return false;
    return true;
}

// Axis ks has unit stride in src, kd in dst. A tile (kTileD elements along kd, 128 bytes of a dst
// segment, by kTileS along ks, a 1 KiB src segment of 4-byte elements: 32 KiB) is read into a dense
// buffer by its src segments, then written out by its dst segments: reading or writing a tile in
// place would touch its lines a power-of-two stride apart, which share one L1 set and evict each
// other. Long src segments keep the hardware prefetchers streaming; dst segments of two whole
// lines let non-temporal stores fill them. 4-byte elements (float32, int32) go to copy_turned
// unless dst streams with rows that are not whole lines, 2- and 1-byte ones unless dst streams;
// here 4-byte elements turn in 8 x 8 blocks in vector registers (transpose_hwy.h), other sizes
// one element at a time.
// Returns the kernel's name: "turned" where copy_turned ran, else "tiled".
template <class T>
const char* copy_tiled(const Axes& a, size_t ks, size_t kd, const T* s, T* d) {
    constexpr size_t kTileD = 128 / sizeof(T), kTileS = 256;
    Outer o = outer_of(a, (1u << ks) | (1u << kd));
    size_t ns = a.shape[ks], nd = a.shape[kd];
    ptrdiff_t s_kd = a.ss[kd], d_ks = a.ds[ks];
    size_t bands = (ns + kTileS - 1) / kTileS;
    const bool stream = o.count * ns * nd * sizeof(T) >= kStreamBytes;
    if constexpr (sizeof(T) == 4) {
        if (!stream || lines_aligned(a, kd, d)) {
            copy_turned(a, ks, kd, s, d, stream);
            return "turned";
        }
    }
    if constexpr (sizeof(T) == 2 || sizeof(T) == 1) {
        if (!stream) {
            copy_turned(a, ks, kd, s, d, false);
            return "turned";
        }
    }
    // One unit of parallel work: an outer index and a band of kTileS along ks.
    parallel_ranges(o.count * bands, o.count * ns * nd, kParallelGrain, [&](size_t b, size_t e) {
        T buf[kTileD][kTileS];
        alignas(64) T row[kTileD];
        for (size_t u = b; u < e; ++u) {
            size_t i0 = (u % bands) * kTileS, ni = std::min(ns, i0 + kTileS) - i0;
            walk_outer(o, u / bands, u / bands + 1, [&](ptrdiff_t so, ptrdiff_t dof) {
                for (size_t j0 = 0; j0 < nd; j0 += kTileD) {
                    size_t nj = std::min(nd, j0 + kTileD) - j0;
                    for (size_t j = 0; j < nj; ++j)
                        std::memcpy(buf[j],
                                    s + so + static_cast<ptrdiff_t>(j0 + j) * s_kd +
                                            static_cast<ptrdiff_t>(i0),
                                    ni * sizeof(T));
                    T* dt = d + dof + static_cast<ptrdiff_t>(i0) * d_ks +
                            static_cast<ptrdiff_t>(j0);
                    if constexpr (sizeof(T) == 4) {
                        transpose_tile_u32(reinterpret_cast<const uint32_t*>(&buf[0][0]), kTileS,
                                           nj, ni, reinterpret_cast<uint32_t*>(dt), d_ks, stream);
                        continue;
                    }
                    for (size_t i = 0; i < ni; ++i) {
                        T* dp = dt + static_cast<ptrdiff_t>(i) * d_ks;
                        if (!stream) {
                            for (size_t j = 0; j < nj; ++j)
                                dp[j] = buf[j][i];
                            continue;
                        }
                        for (size_t j = 0; j < nj; ++j)
                            row[j] = buf[j][i];
                        stream_bytes(dp, row, nj * sizeof(T));
                    }
                }
            });
        }
        // Non-temporal stores are weakly ordered: make them visible before the caller reads dst.
        if (stream)
            stream_fence();
    });
    return "tiled";
}

void copy_rows(const Axes& a, const std::byte* s, std::byte* d, size_t esize) {
    size_t last = a.n - 1;
    const auto e_size = static_cast<ptrdiff_t>(esize);
    for_row_pieces(outer_of(a, 1u << last), a.shape[last],
                   [&](ptrdiff_t so, ptrdiff_t dof, size_t b, size_t e) {
                       auto off = static_cast<ptrdiff_t>(b);
                       std::memcpy(d + (dof + off) * e_size, s + (so + off) * e_size,
                                   (e - b) * esize);
                   });
}

// src repeats one element along the innermost axis, where dst is dense (a broadcast value: the
// gradient rules' zeros, a one-hot's): each dst row is filled with it, which vectorises where the
// strided walk's element loop does not.
template <class T>
void fill_rows(const Axes& a, const T* s, T* d) {
    size_t last = a.n - 1;
    for_row_pieces(outer_of(a, 1u << last), a.shape[last],
                   [&](ptrdiff_t so, ptrdiff_t dof, size_t b, size_t e) {
                       std::fill(d + dof + static_cast<ptrdiff_t>(b),
                                 d + dof + static_cast<ptrdiff_t>(e), s[so]);
                   });
}

// The axis with unit stride in `strides`, or n when none has.
size_t unit_axis(const Axes& a, const std::array<ptrdiff_t, TensorLayout::MAX_NDIM>& strides) {
    for (size_t k = a.n; k-- > 0;)
        if (strides[k] == 1)
            return k;
    return a.n;
}

// Returns the kernel's name.
template <class T>
const char* copy_typed(const Axes& a, const void* src, void* dst) {
    const auto* s = static_cast<const T*>(src);
    auto* d = static_cast<T*>(dst);
    if (a.ss[a.n - 1] == 0 && a.ds[a.n - 1] == 1) {
        fill_rows(a, s, d);
        return "fill";
    }
    size_t ks = unit_axis(a, a.ss), kd = unit_axis(a, a.ds);
    if (ks < a.n && kd < a.n && ks != kd && a.shape[ks] > 1 && a.shape[kd] > 1) {
        return copy_tiled(a, ks, kd, s, d);
    }
    copy_strided(a, s, d);
    return "strided";
}

class RelayoutImpl final : public LoopKernel<Relayout> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (const char* kernel = relayout_copy(inputs[0], outputs[0])) {
            m_last = kernel;
            return;
        }
        run_naive(inputs, outputs, ws);
    }
};

}  // namespace

const char* relayout_copy(const TensorND& src, const TensorND& dst) {
    size_t esize = src.layout.dtype.size();
    if (dst.layout.dtype != src.layout.dtype)
        return nullptr;
    if (src.layout.is_empty())
        return "rows";
    Axes a = merge_axes(src.layout, dst.layout);
    if (a.n == 0) {
        std::memcpy(dst.raw_ptr(), src.raw_ptr(), esize);
        return "rows";
    }
    size_t last = a.n - 1;
    if (a.ss[last] == 1 && a.ds[last] == 1) {
        copy_rows(a, static_cast<const std::byte*>(src.raw_ptr()),
                  static_cast<std::byte*>(dst.raw_ptr()), esize);
        return "rows";
    }
    switch (esize) {
        case 1:
            return copy_typed<uint8_t>(a, src.raw_ptr(), dst.raw_ptr());
        case 2:
            return copy_typed<uint16_t>(a, src.raw_ptr(), dst.raw_ptr());
        case 4:
            return copy_typed<uint32_t>(a, src.raw_ptr(), dst.raw_ptr());
        case 8:
            return copy_typed<uint64_t>(a, src.raw_ptr(), dst.raw_ptr());
        default:
            return nullptr;
    }
}

NM_REGISTER_X86(Relayout, RelayoutImpl);
}  // namespace neomeg::dnn::x86
