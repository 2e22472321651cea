// The int8 ConvBias plan (conv_bias_int8.h). Per (image, group, tile of output positions, part of
// the filter's rows) one thread packs the tile's columns of B (src minus its zero point as int16,
// padding reading as zero, i.e. as the zero point, as naive's sum skips it) a block of the sum at
// a time into a panel of its own, and multiplies the packed filter rows by it; then bias and
// RELU. Where B's rows come from:
// - a 1x1 kernel at stride 1 without padding: B is the image itself, each row a channel's plane;
// - other kernels at stride 1 (2-D and 1-D): a copy of the image padded with its zero point; B's
//   row for channel c and tap (t1, t2) is then that channel's padded plane from the tap's offset
//   on, over "wide" output rows as long as a padded row (the columns past the output's width are
//   computed and dropped), so B needs no im2col; where the extra columns would cost more than
//   they save (small images under many filter rows), each output row's run is gathered instead;
// - the rest (strides, 3-D): im2col rows.
// The packed filter is kept in the weight cache (weight_cache.h: keyed by the filter's value, so a
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

// A thread's panel of B for one block of the sum: it stays in L2 while the filter's rows pass.
constexpr size_t kPanelBytes = size_t(256) << 10;
// The fewest filter rows a thread's share of a tile gets when rows are split between threads.
constexpr size_t kMinPartRows = 32;
// Wide rows (B's rows straight from the padded image, extra columns computed and dropped) while
// the extra columns times the filter's rows are at most this many: the GEMM's work on them (about
// ocg / 25 cycles per element of B) costs less than gathering the output's runs of each row of B
// (about 10 cycles per run), so 56x56 images (2 extra columns in 58, 64 filter rows) read the
// padded image as it is, and 14x14 ones under 256 filter rows gather their runs.
constexpr size_t kWideWaste = 250;
// Bytes a gathered run is copied by (gather_row).
constexpr size_t kGatherChunk = 16;

enum class Source { kImage, kWide, kGathered, kIm2col };

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
        m_kp = (m_k + 1) / 2;
        m_block = s16_block_pairs(m_kp);
        m_plane = g.out[0] * g.out[1] * g.out[2];
        choose_source();
        const size_t want =
                std::max<size_t>(kPanelBytes / (m_block * 4) / kS16Strip, 1) * kS16Strip;
        m_tile = std::min(want, (m_cols + kS16Strip - 1) / kS16Strip * kS16Strip);
        m_tiles = (m_cols + m_tile - 1) / m_tile;
        // Too few tiles for the threads (a late stage's small image at batch 1): the filter's rows
        // are split too, the parts sharing the tile's packed B.
        const size_t items = g.n * g.group * m_tiles,
                     want_items = 2 * static_cast<size_t>(omp_get_max_threads());
        size_t parts = 1;
        if (items < want_items)
            parts = std::clamp<size_t>((want_items + items - 1) / items, 1,
                                       std::max<size_t>(g.ocg / kMinPartRows, 1));
        m_part_rows =
                ((g.ocg + parts - 1) / parts + kS16GemmRows - 1) / kS16GemmRows * kS16GemmRows;
        m_parts = (g.ocg + m_part_rows - 1) / m_part_rows;
        m_tile_pad = (m_tile + kS16Strip - 1) / kS16Strip * kS16Strip;
        m_shared_tile = m_kp * 2 * m_tile_pad;
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

    size_t workspace_in_bytes() const override {
        return filter_bytes() + shared_bytes() + m_g.n * m_g.ic * m_padded_plane + kGatherChunk;
    }
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
        auto* shared = reinterpret_cast<int16_t*>(ws.ptr + filter_bytes());
        auto* padded = reinterpret_cast<uint8_t*>(ws.ptr) + filter_bytes() + shared_bytes();
        if (m_asymm)
            run_typed(static_cast<const uint8_t*>(t[0].raw_ptr()), t, packed, padded, shared);
        else
            run_typed(static_cast<const int8_t*>(t[0].raw_ptr()), t, packed,
                      reinterpret_cast<int8_t*>(padded), shared);
    }

private:
    // A run of a tile's output positions along one output row: tile columns j .. j + len, output
    // positions (o0, o1, o2 ..).
    struct Run {
        size_t j, len, o0, o1, o2;
    };
    // Where a run reads for one kernel column: output x reads input column w0 + x * stride, inside
    // the input for x in [xa, xb).
    struct Cols {
        ptrdiff_t w0, xa, xb;
    };
    // The runs of one tile and their input columns ([run][kernel column]), worked out once per
    // tile rather than per row of B.
    struct Runs {
        std::vector<Run> runs;
        std::vector<Cols> cols;
    };

    size_t filter_bytes() const { return (m_g.group * m_a_size * sizeof(int16_t) + 63) / 64 * 64; }
    // The packed B that parts of the rows share: m_shared_tile elements per tile.
    size_t shared_bytes() const {
        return m_parts > 1 ? m_g.n * m_g.group * m_tiles * m_shared_tile * sizeof(int16_t) : 0;
    }

    // Where B's rows come from (see the top of the file): wide rows while they are at most 1.5
    // times the output's and their extra columns cost less than gathering (kWideWaste). m_cols is
    // B's width: wide rows of m_wide_row columns, else the output's positions.
    void choose_source() {
        const ConvGeometry& g = m_g;
        m_cols = m_plane;
        const bool unit_stride = g.stride[0] == 1 && g.stride[1] == 1 && g.stride[2] == 1;
        // A channel's plane in one run (the strides of a 2-D or 1-D image's unit dims are 0).
        const bool dense = m_ss[4] == 1 &&
                           (g.in[1] == 1 || m_ss[3] == static_cast<ptrdiff_t>(g.in[2])) &&
                           (g.in[0] == 1 || m_ss[2] == static_cast<ptrdiff_t>(g.in[1] * g.in[2]));
        if (unit_stride && m_taps == 1 && dense && g.pad[0] == 0 && g.pad[1] == 0 &&
            g.pad[2] == 0) {
            m_source = Source::kImage;
            return;
        }
        if (!unit_stride || g.in[0] != 1 || g.k[0] != 1)
            return;
        const size_t rows = g.out[1] + (g.k[1] - 1) * static_cast<size_t>(g.dil[1]);
        const size_t width = g.out[2] + (g.k[2] - 1) * static_cast<size_t>(g.dil[2]);
        m_wide_row = width;
        m_padded_rows = rows;
        m_padded_plane = rows * width;
        if (2 * width > 3 * g.out[2] || (width - g.out[2]) * g.ocg > kWideWaste) {
            m_source = Source::kGathered;
            return;
        }
        m_source = Source::kWide;
        // The last output row's columns past the width are left out: they would read past the
        // plane's end.
        m_cols = (g.out[1] - 1) * width + g.out[2];
    }

    // A thread's buffers for packing B.
    template <class T>
    struct Scratch {
        std::vector<int16_t> rows;  // two im2col rows
        std::vector<T> gathered;    // two gathered rows
        Runs runs;
    };

    template <class T>
    void run_typed(const T* src, std::span<const TensorND> t, const int16_t* packed, T* padded,
                   int16_t* shared) const {
        const ConvGeometry& g = m_g;
        if (m_source == Source::kWide || m_source == Source::kGathered)
            pad_images(src, padded);
        const auto* bias = t[2].layout.ndim ? static_cast<const int32_t*>(t[2].raw_ptr()) : nullptr;
        auto* dst = static_cast<int32_t*>(t[4].raw_ptr());
        const size_t tiles = g.n * g.group * m_tiles, blocks = (m_kp + m_block - 1) / m_block;
        const size_t work = g.n * g.oc * m_plane * m_k;
        // Rows split into parts: the parts of a tile share its B, packed first (every block of
        // the sum, by all threads), rather than each part packing it again.
        if (m_parts > 1) {
            parallel_ranges(tiles * blocks, work / m_parts, kParallelGrain,
                            [&](size_t b, size_t e) {
                                thread_local Scratch<T> scratch;
                                for (size_t it = b; it < e; ++it) {
                                    const size_t tile = it / blocks, q0 = it % blocks * m_block;
                                    const size_t p0 = tile % m_tiles * m_tile,
                                                 nc = std::min(m_tile, m_cols - p0);
                                    pack_block(src, padded, tile / m_tiles / g.group,
                                               tile / m_tiles % g.group, p0, nc, q0,
                                               std::min(m_block, m_kp - q0), true, scratch,
                                               shared + tile * m_shared_tile + q0 * 2 * m_tile_pad);
                                }
                            });
        }
        parallel_ranges(tiles * m_parts, work, kParallelGrain, [&](size_t b, size_t e) {
            thread_local std::vector<int16_t> panel;
            thread_local std::vector<int32_t> sums;
            thread_local Scratch<T> scratch;
            if (m_parts == 1 && panel.size() < s16_panel_size(m_block, m_tile))
                panel.resize(s16_panel_size(m_block, m_tile));
            if (m_source == Source::kWide && sums.size() < m_part_rows * m_tile)
                sums.resize(m_part_rows * m_tile);
            for (size_t it = b; it < e; ++it) {
                const size_t part = it % m_parts, tile = it / m_parts;
                const size_t grp = tile / m_tiles % g.group, n = tile / m_tiles / g.group;
                const size_t p0 = tile % m_tiles * m_tile, nc = std::min(m_tile, m_cols - p0);
                const size_t r0 = part * m_part_rows, nr = std::min(m_part_rows, g.ocg - r0);
                const size_t oc0 = grp * g.ocg + r0;
                int32_t* d = dst + (n * g.oc + oc0) * m_plane;
                // Wide rows are summed apart and compacted into dst after.
                const bool wide = m_source == Source::kWide;
                int32_t* c = wide ? sums.data() : d + p0;
                const auto ldc = static_cast<ptrdiff_t>(wide ? m_tile : m_plane);
                const int16_t* a = packed + grp * m_a_size + r0 * 2 * m_kp;
                for (size_t q0 = 0; q0 < m_kp; q0 += m_block) {
                    const size_t kc = std::min(m_block, m_kp - q0);
                    const int16_t* b_panel = shared + tile * m_shared_tile + q0 * 2 * m_tile_pad;
                    if (m_parts == 1) {
                        pack_block(src, padded, n, grp, p0, nc, q0, kc, q0 == 0, scratch,
                                   panel.data());
                        b_panel = panel.data();
                    }
                    s16_gemm_panel(a, m_kp, q0, kc, b_panel, nr, nc, c, ldc, q0 > 0);
                }
                epilogue(bias, n, oc0, nr, c, ldc, p0, nc, d);
            }
        });
    }

    // Packs B's block of kc pairs from pair q0 on, columns p0 .. p0 + nc, for image n and group
    // grp, into `out` (s16_panel_size(kc, nc) elements). new_tile: the tile's runs are to be
    // worked out (its first block).
    template <class T>
    void pack_block(const T* src, const T* padded, size_t n, size_t grp, size_t p0, size_t nc,
                    size_t q0, size_t kc, bool new_tile, Scratch<T>& scratch, int16_t* out) const {
        if (new_tile && (m_source == Source::kIm2col || m_source == Source::kGathered))
            prepare_runs(p0, nc, scratch.runs);
        if (m_source == Source::kIm2col && scratch.rows.size() < 2 * m_tile)
            scratch.rows.resize(2 * m_tile);
        if (m_source == Source::kGathered && scratch.gathered.size() < 2 * m_tile + kGatherChunk)
            scratch.gathered.resize(2 * m_tile + kGatherChunk);
        const auto zero = static_cast<int16_t>(m_zero);
        for (size_t q = 0; q < kc; ++q, out += 2 * kS16Strip) {
            const size_t p = 2 * (q0 + q);
            // A's column past an odd K is zero: any row of B will do.
            const size_t p1 = p + 1 < m_k ? p + 1 : p;
            if (m_source == Source::kIm2col) {
                int16_t* rows = scratch.rows.data();
                im2col_row(src, n, grp, p, scratch.runs, rows);
                im2col_row(src, n, grp, p1, scratch.runs, rows + m_tile);
                s16_pack_pairs(rows, rows + m_tile, nc, kc, out);
            } else if (m_source == Source::kGathered) {
                T* rows = scratch.gathered.data();
                gather_row(b_row(src, padded, n, grp, p), scratch.runs, rows);
                gather_row(b_row(src, padded, n, grp, p1), scratch.runs, rows + m_tile);
                s16_pack_pairs(rows, rows + m_tile, zero, nc, kc, out);
            } else {
                s16_pack_pairs(b_row(src, padded, n, grp, p) + p0,
                               b_row(src, padded, n, grp, p1) + p0, zero, nc, kc, out);
            }
        }
    }

    // Row p of B (for image n, group grp) from the image or its padded copy, at column 0.
    template <class T>
    const T* b_row(const T* src, const T* padded, size_t n, size_t grp, size_t p) const {
        const size_t c = grp * m_g.icg + p / m_taps, tap = p % m_taps;
        if (m_source == Source::kImage)
            return src + static_cast<ptrdiff_t>(n) * m_ss[0] + static_cast<ptrdiff_t>(c) * m_ss[1];
        const size_t t1 = tap / m_g.k[2], t2 = tap % m_g.k[2];
        const ptrdiff_t y = m_g.in_pos(1, 0, t1) + m_g.pad[1],
                        x = m_g.in_pos(2, 0, t2) + m_g.pad[2];
        return padded + (n * m_g.ic + c) * m_padded_plane +
               static_cast<size_t>(y * static_cast<ptrdiff_t>(m_wide_row) + x);
    }

    // A tile's columns of a row of B from its padded plane (b_row): each run of output positions
    // along an output row reads a run of the padded row.
    // Runs are short (7 or 14 bytes on ResNet's late stages), so each is copied in whole chunks
    // of kGatherChunk bytes, the excess overwritten by the next run or falling in the row's slack
    // (the reads' excess in the padded image's).
    template <class T>
    void gather_row(const T* from, const Runs& runs, T* row) const {
        for (const Run& r : runs.runs) {
            const T* s = from + r.o1 * m_wide_row + r.o2;
            for (size_t k = 0; k < r.len; k += kGatherChunk)
                std::memcpy(row + r.j + k, s + k, kGatherChunk);
        }
    }

    // Each channel plane of every image into a padded plane of m_padded_rows x m_wide_row, the
    // zero point around the image.
    template <class T>
    void pad_images(const T* src, T* padded) const {
        const ConvGeometry& g = m_g;
        const auto zero = static_cast<T>(m_zero);
        const size_t planes = g.n * g.ic;
        parallel_ranges(planes, planes * m_padded_plane, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t pl = b; pl < e; ++pl) {
                const size_t n = pl / g.ic, c = pl % g.ic;
                const T* s = src + static_cast<ptrdiff_t>(n) * m_ss[0] +
                             static_cast<ptrdiff_t>(c) * m_ss[1];
                T* out = padded + pl * m_padded_plane;
                for (size_t y = 0; y < m_padded_rows; ++y, out += m_wide_row) {
                    const ptrdiff_t iy = static_cast<ptrdiff_t>(y) - g.pad[1];
                    if (iy < 0 || iy >= static_cast<ptrdiff_t>(g.in[1])) {
                        std::fill_n(out, m_wide_row, zero);
                        continue;
                    }
                    const T* row = s + iy * m_ss[3];
                    const auto left = static_cast<size_t>(
                            std::min<ptrdiff_t>(g.pad[2], static_cast<ptrdiff_t>(m_wide_row)));
                    const size_t len = std::min(g.in[2], m_wide_row - left);
                    std::fill_n(out, left, zero);
                    if (m_ss[4] == 1)
                        std::copy_n(row, len, out + left);
                    else
                        for (size_t x = 0; x < len; ++x)
                            out[left + x] = row[static_cast<ptrdiff_t>(x) * m_ss[4]];
                    std::fill_n(out + left + len, m_wide_row - left - len, zero);
                }
            }
        });
    }

    void prepare_runs(size_t p0, size_t nc, Runs& r) const {
        const ConvGeometry& g = m_g;
        const ptrdiff_t step = g.stride[2], in2 = static_cast<ptrdiff_t>(g.in[2]);
        r.runs.clear();
        r.cols.clear();
        for (size_t j = 0, pos = p0; j < nc;) {
            const size_t o2 = pos % g.out[2], len = std::min(g.out[2] - o2, nc - j);
            r.runs.push_back({j, len, pos / (g.out[1] * g.out[2]), pos / g.out[2] % g.out[1], o2});
            const auto l = static_cast<ptrdiff_t>(len);
            for (size_t t2 = 0; t2 < g.k[2]; ++t2) {
                const ptrdiff_t w0 = g.in_pos(2, o2, t2);
                const ptrdiff_t xa =
                        std::clamp<ptrdiff_t>(w0 < 0 ? (-w0 + step - 1) / step : 0, 0, l);
                const ptrdiff_t xb =
                        std::clamp<ptrdiff_t>(w0 < in2 ? (in2 - w0 + step - 1) / step : 0, xa, l);
                r.cols.push_back({w0, xa, xb});
            }
            j += len;
            pos += len;
        }
    }

    // Row p of the tile's im2col matrix (the runs' columns) for image n, group grp: src minus the
    // zero point as int16, zero where the tap reads padding.
    template <class T>
    void im2col_row(const T* src, size_t n, size_t grp, size_t p, const Runs& runs,
                    int16_t* row) const {
        const ConvGeometry& g = m_g;
        const ptrdiff_t step = g.stride[2], ss4 = m_ss[4];
        const auto zero = static_cast<int16_t>(m_zero);
        const size_t c = p / m_taps, tap = p % m_taps;
        const size_t t0 = tap / (g.k[1] * g.k[2]), t1 = tap / g.k[2] % g.k[1], t2 = tap % g.k[2];
        const T* plane = src + static_cast<ptrdiff_t>(n) * m_ss[0] +
                         static_cast<ptrdiff_t>(grp * g.icg + c) * m_ss[1];
        for (size_t ri = 0; ri < runs.runs.size(); ++ri) {
            const Run& r = runs.runs[ri];
            int16_t* d = row + r.j;
            const ptrdiff_t i0 = g.in_pos(0, r.o0, t0), i1 = g.in_pos(1, r.o1, t1);
            if (i0 < 0 || i0 >= static_cast<ptrdiff_t>(g.in[0]) || i1 < 0 ||
                i1 >= static_cast<ptrdiff_t>(g.in[1])) {
                std::fill_n(d, r.len, int16_t{0});
                continue;
            }
            const T* s = plane + i0 * m_ss[2] + i1 * m_ss[3];
            const Cols& w = runs.cols[ri * g.k[2] + t2];
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

    // dst = act(sum + bias) for the tile's columns p0 .. p0 + nc of B (s16_finish): the sums lie in
    // dst itself, or (wide rows) in the thread's buffer, whose columns past the output's width are
    // dropped here.
    void epilogue(const int32_t* bias, size_t n, size_t oc0, size_t rows, const int32_t* sums,
                  ptrdiff_t lds, size_t p0, size_t nc, int32_t* d) const {
        const bool relu = m_mode == NonlineMode::RELU;
        const bool wide = m_source == Source::kWide;
        if (!bias && !relu && !wide)
            return;
        const int32_t lo = relu ? 0 : std::numeric_limits<int32_t>::min();
        const int32_t* b = bias ? bias + static_cast<ptrdiff_t>(n) * m_bias_n +
                                           static_cast<ptrdiff_t>(oc0) * m_bias_c
                                : nullptr;
        const auto ldd = static_cast<ptrdiff_t>(m_plane);
        if (wide)
            s16_finish(sums, lds, d, ldd, rows, p0, nc, m_wide_row, m_g.out[2], b, m_bias_c, lo);
        else
            s16_finish(sums, lds, d + p0, ldd, rows, 0, nc, nc, nc, b, m_bias_c, lo);
    }

    ConvGeometry m_g;
    NonlineMode m_mode;
    bool m_asymm;
    int32_t m_zero;
    std::array<ptrdiff_t, 5> m_ss;
    Source m_source = Source::kIm2col;
    size_t m_taps = 0, m_k = 0, m_kp = 0, m_block = 0, m_plane = 0, m_cols = 0;
    size_t m_wide_row = 0, m_padded_rows = 0, m_padded_plane = 0;
    size_t m_tile = 0, m_tiles = 0, m_a_size = 0;
    size_t m_parts = 1, m_part_rows = 0, m_tile_pad = 0, m_shared_tile = 0;
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
