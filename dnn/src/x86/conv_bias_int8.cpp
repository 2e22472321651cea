// The int8 ConvBias plan (conv_bias_int8.h). Per (image, group, tile of output positions, part of
// the filter's rows) one thread gathers the tile's im2col columns, src minus its zero point as
// int16 (padding reads as zero, i.e. as the zero point, as naive's sum skips it), into a buffer of
// its own, and multiplies the packed filter rows by it straight into dst; then bias and RELU. The
// packed filter is kept in the weight cache (weight_cache.h: keyed by the filter's value, so a
// filter written between calls is packed anew), else packed into the workspace on every call.
#include "src/x86/conv_bias_int8.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "src/common/conv_bias_quantized.h"
#include "src/x86/gemm_s16_hwy.h"
#include "src/x86/parallel.h"
#include "src/x86/weight_cache.h"

namespace neomeg::dnn::x86 {
namespace {

using NonlineMode = param::ConvBias::NonlineMode;

// The im2col buffer's target size. It is written once and read once (s16_gemm packs it a block of
// rows at a time, and those blocks stay in cache), so it may exceed L2; wide tiles read the packed
// filter fewer times.
constexpr size_t kTileBytes = size_t(1) << 20;
// The fewest filter rows a thread's share of a tile gets when rows are split between threads.
constexpr size_t kMinPartRows = 32;

class Int8ConvBiasPlan final : public Plan {
public:
    Int8ConvBiasPlan(const ConvGeometry& g, const TensorLayout& src, const TensorLayout& bias,
                     NonlineMode mode)
        : m_g(g),
          m_mode(mode),
          m_asymm(src.dtype.enumv() == DTypeEnum::Quantized8Asymm),
          m_zero(src.dtype.zero_point()),
          m_ss(conv_strides5(src)) {
        m_taps = g.k[0] * g.k[1] * g.k[2];
        m_k = g.icg * m_taps;
        m_plane = g.out[0] * g.out[1] * g.out[2];
        const size_t strip = s16_gemm_strip();
        const size_t want = kTileBytes / (2 * ((m_k + 1) / 2 * 2)) / strip * strip;
        const size_t plane_strips = (m_plane + strip - 1) / strip * strip;
        m_tile = std::clamp(want, strip, plane_strips);
        m_tiles = (m_plane + m_tile - 1) / m_tile;
        // Too few tiles for the threads (a late stage's small image at batch 1): the filter's rows
        // are split too, each part redoing the tile's im2col.
        const size_t items = g.n * g.group * m_tiles,
                     want_items = 2 * static_cast<size_t>(omp_get_max_threads());
        size_t parts = 1;
        if (items < want_items)
            parts = std::clamp<size_t>((want_items + items - 1) / items, 1,
                                       std::max<size_t>(g.ocg / kMinPartRows, 1));
        m_part_rows =
                ((g.ocg + parts - 1) / parts + kS16GemmRows - 1) / kS16GemmRows * kS16GemmRows;
        m_parts = (g.ocg + m_part_rows - 1) / m_part_rows;
        m_a_size = s16_packed_a_size(g.ocg, m_k);
        // The weight cache's key for the packed filter: the filter as (OC, K) int8 and the packed
        // bytes as a 2-D u8 buffer, a pair no oneDNN reorder describes.
        using memory = dnnl::memory;
        m_filter_md = memory::desc({static_cast<memory::dim>(g.oc), static_cast<memory::dim>(m_k)},
                                   memory::data_type::s8, memory::format_tag::ab);
        m_packed_md = memory::desc({static_cast<memory::dim>(g.group * m_a_size), 2},
                                   memory::data_type::u8, memory::format_tag::ab);
        if (bias.ndim) {
            m_bias_n = bias[0] == 1 ? 0 : bias.stride[0];
            m_bias_c = bias[1] == 1 ? 0 : bias.stride[1];
        }
    }

    size_t workspace_in_bytes() const override { return m_g.group * m_a_size * sizeof(int16_t); }
    const char* name() const override { return "x86:int8_gemm_s16"; }

    // The call's tensors: src, filter, bias, z (absent), dst.
    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream&) override {
        // The packed filter: from the weight cache where it holds this filter's value, else
        // packed into the cache's new entry or the workspace.
        const int16_t* packed = nullptr;
        std::shared_ptr<const WeightCache::Entry> held;
        int16_t* fill = reinterpret_cast<int16_t*>(ws.ptr);
        WeightCache::Lookup found;
        if (t[1].storage)
            found = WeightCache::instance().lookup(t[1], TensorLayout::MAX_NDIM, m_filter_md,
                                                   m_packed_md);
        if (found.hit) {
            packed = reinterpret_cast<const int16_t*>(found.hit->data);
            held = std::move(found.hit);
        } else {
            if (found.fill)
                fill = reinterpret_cast<int16_t*>(found.fill->data);
            const auto* filter = static_cast<const int8_t*>(t[1].raw_ptr());
            for (size_t grp = 0; grp < m_g.group; ++grp)
                s16_pack_a(filter + grp * m_g.ocg * m_k, static_cast<ptrdiff_t>(m_k), 1, m_g.ocg,
                           m_k, 0, fill + grp * m_a_size);
            if (found.fill)
                WeightCache::instance().commit(found.fill);
            packed = fill;
        }
        const auto* bias = t[2].layout.ndim ? static_cast<const int32_t*>(t[2].raw_ptr()) : nullptr;
        auto* dst = static_cast<int32_t*>(t[4].raw_ptr());
        const size_t items = m_g.n * m_g.group * m_tiles * m_parts;
        const size_t work = m_g.n * m_g.oc * m_plane * m_k;
        parallel_ranges(items, work, kParallelGrain, [&](size_t b, size_t e) {
            thread_local std::vector<int16_t> cols;
            const size_t rows = (m_k + 1) / 2 * 2;
            if (cols.size() < rows * m_tile)
                cols.resize(rows * m_tile);
            if (rows != m_k)
                std::fill_n(cols.data() + m_k * m_tile, m_tile, int16_t{0});
            for (size_t it = b; it < e; ++it) {
                const size_t part = it % m_parts, tile = it / m_parts % m_tiles,
                             grp = it / m_parts / m_tiles % m_g.group,
                             n = it / m_parts / m_tiles / m_g.group;
                const size_t p0 = tile * m_tile, nc = std::min(m_tile, m_plane - p0);
                if (m_asymm)
                    im2col(static_cast<const uint8_t*>(t[0].raw_ptr()), n, grp, p0, nc,
                           cols.data());
                else
                    im2col(static_cast<const int8_t*>(t[0].raw_ptr()), n, grp, p0, nc, cols.data());
                const size_t r0 = part * m_part_rows, nr = std::min(m_part_rows, m_g.ocg - r0);
                const size_t oc0 = grp * m_g.ocg + r0;
                int32_t* d = dst + (n * m_g.oc + oc0) * m_plane + p0;
                s16_gemm(packed + grp * m_a_size + r0 * ((m_k + 1) / 2 * 2), cols.data(), m_tile,
                         nr, nc, m_k, d, static_cast<ptrdiff_t>(m_plane));
                epilogue(bias, n, oc0, nr, d, nc);
            }
        });
    }

private:
    // A run of a tile's output positions along one output row: tile columns j .. j + len.
    struct Run {
        size_t j, len, o0, o1;
    };
    // Where a run reads for one kernel column: output x reads input column w0 + x * stride, inside
    // the input for x in [xa, xb).
    struct Cols {
        ptrdiff_t w0, xa, xb;
    };

    // Columns p0 .. p0 + nc of image n's im2col matrix for group grp, as rows of m_tile int16.
    // The runs and their input columns are worked out once per tile, not per row of the matrix.
    template <class T>
    void im2col(const T* src, size_t n, size_t grp, size_t p0, size_t nc, int16_t* cols) const {
        const ConvGeometry& g = m_g;
        const ptrdiff_t step = g.stride[2], ss4 = m_ss[4], in2 = static_cast<ptrdiff_t>(g.in[2]);
        thread_local std::vector<Run> runs;
        thread_local std::vector<Cols> run_cols;  // [run][kernel column]
        runs.clear();
        run_cols.clear();
        for (size_t j = 0, pos = p0; j < nc;) {
            const size_t o2 = pos % g.out[2], len = std::min(g.out[2] - o2, nc - j);
            runs.push_back({j, len, pos / (g.out[1] * g.out[2]), pos / g.out[2] % g.out[1]});
            const auto l = static_cast<ptrdiff_t>(len);
            for (size_t t2 = 0; t2 < g.k[2]; ++t2) {
                const ptrdiff_t w0 = g.in_pos(2, o2, t2);
                const ptrdiff_t xa =
                        std::clamp<ptrdiff_t>(w0 < 0 ? (-w0 + step - 1) / step : 0, 0, l);
                const ptrdiff_t xb =
                        std::clamp<ptrdiff_t>(w0 < in2 ? (in2 - w0 + step - 1) / step : 0, xa, l);
                run_cols.push_back({w0, xa, xb});
            }
            j += len;
            pos += len;
        }
        const auto zero = static_cast<int16_t>(m_zero);
        for (size_t p = 0; p < m_k; ++p) {
            const size_t c = p / m_taps, tap = p % m_taps;
            const size_t t0 = tap / (g.k[1] * g.k[2]), t1 = tap / g.k[2] % g.k[1],
                         t2 = tap % g.k[2];
            const T* plane = src + static_cast<ptrdiff_t>(n) * m_ss[0] +
                             static_cast<ptrdiff_t>(grp * g.icg + c) * m_ss[1];
            int16_t* row = cols + p * m_tile;
            for (size_t ri = 0; ri < runs.size(); ++ri) {
                const Run& r = runs[ri];
                int16_t* d = row + r.j;
                const ptrdiff_t i0 = g.in_pos(0, r.o0, t0), i1 = g.in_pos(1, r.o1, t1);
                if (i0 < 0 || i0 >= static_cast<ptrdiff_t>(g.in[0]) || i1 < 0 ||
                    i1 >= static_cast<ptrdiff_t>(g.in[1])) {
                    std::fill_n(d, r.len, int16_t{0});
                    continue;
                }
                const T* s = plane + i0 * m_ss[2] + i1 * m_ss[3];
                const Cols& w = run_cols[ri * g.k[2] + t2];
                std::fill_n(d, w.xa, int16_t{0});
                std::fill_n(d + w.xb, static_cast<ptrdiff_t>(r.len) - w.xb, int16_t{0});
                if (step == 1 && ss4 == 1) {
                    const T* sw = s + w.w0;
                    for (ptrdiff_t x = w.xa; x < w.xb; ++x)
                        d[x] = static_cast<int16_t>(sw[x] - zero);
                } else {
                    for (ptrdiff_t x = w.xa; x < w.xb; ++x)
                        d[x] = static_cast<int16_t>(s[(w.w0 + x * step) * ss4] - zero);
                }
            }
        }
    }

    // dst = act(sum + bias), saturated to int32 as naive's double sum is: a wrapped sum whose
    // sign differs from both addends' overflowed (branch-free, so that it vectorises).
    void epilogue(const int32_t* bias, size_t n, size_t oc0, size_t rows, int32_t* d,
                  size_t nc) const {
        const bool relu = m_mode == NonlineMode::RELU;
        if (!bias && !relu)
            return;
        for (size_t i = 0; i < rows; ++i) {
            int32_t* row = d + i * m_plane;
            const int32_t bv = bias ? bias[static_cast<ptrdiff_t>(n) * m_bias_n +
                                           static_cast<ptrdiff_t>(oc0 + i) * m_bias_c]
                                    : 0;
            const int32_t lo = relu ? 0 : std::numeric_limits<int32_t>::min();
            for (size_t j = 0; j < nc; ++j) {
                const int32_t a = row[j];
                const auto s =
                        static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(bv));
                const int32_t sat = a < 0 ? std::numeric_limits<int32_t>::min()
                                          : std::numeric_limits<int32_t>::max();
                row[j] = std::max(((a ^ s) & (bv ^ s)) < 0 ? sat : s, lo);
            }
        }
    }

    ConvGeometry m_g;
    NonlineMode m_mode;
    bool m_asymm;
    int32_t m_zero;
    std::array<ptrdiff_t, 5> m_ss;
    size_t m_taps = 0, m_k = 0, m_plane = 0, m_tile = 0, m_tiles = 0, m_a_size = 0;
    size_t m_parts = 1, m_part_rows = 0;
    dnnl::memory::desc m_filter_md, m_packed_md;
    ptrdiff_t m_bias_n = 0, m_bias_c = 0;
};

}  // namespace

std::unique_ptr<Plan> int8_conv_bias_plan(const ConvBias& op, std::span<const TensorLayout> in,
                                          const TensorLayout& dst) {
    const TensorLayout &src = in[0], &filter = in[1], &bias = in[2], &z = in[3];
    if (z.ndim || !filter.is_contiguous() || !dst.is_contiguous() || dst.is_empty() ||
        dst.dtype.enumv() != DTypeEnum::QuantizedS32)
        return nullptr;
    ConvGeometry g = quantized_conv_geometry(op, src, filter);
    if (bias.ndim) {
        if (bias.ndim != dst.ndim || bias.dtype.enumv() != DTypeEnum::QuantizedS32)
            return nullptr;
        for (size_t i = 0; i < bias.ndim; ++i)
            if (bias[i] != 1 && (i > 1 || bias[i] != dst[i]))
                return nullptr;
    }
    // |src - zero| <= 255 for uint8 (128 for int8), |filter| <= 128: naive's exact sum stays in
    // int32 below this many products, so an int32 sum never wraps where naive saturates.
    const size_t k = g.icg * g.k[0] * g.k[1] * g.k[2];
    if (k > size_t{std::numeric_limits<int32_t>::max()} / (255 * 128))
        return nullptr;
    return std::make_unique<Int8ConvBiasPlan>(g, src, bias, op.param().nonlineMode);
}

}  // namespace neomeg::dnn::x86
