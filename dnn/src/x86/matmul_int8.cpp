// The int8 matmul plan (matmul_int8.h). A is packed per batch into the workspace on every call (its
// tensor may change between calls); per (batch, tile of C's columns) a thread copies the tile of
// B, widened to int16, into a buffer of its own, and multiplies A by it straight into C.
#include "src/x86/matmul_int8.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "src/x86/gemm_s16_hwy.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

// B's widened tile: written once, read once by s16_gemm's packing (whose blocks stay in cache).
constexpr size_t kTileBytes = size_t(1) << 20;

// One operand's matrix: element (row, col) of batch i at i * batch + row * row_s + col * col_s.
struct Mat {
    ptrdiff_t batch = 0, row = 0, col = 0;
};

Mat mat_of(const TensorLayout& l, bool transposed) {
    const size_t r = l.ndim - 2, c = l.ndim - 1;
    Mat m{l.ndim == 3 ? l.stride[0] : 0, l.stride[r], l.stride[c]};
    if (transposed)
        std::swap(m.row, m.col);
    return m;
}

class Int8MatmulPlan final : public Plan {
public:
    Int8MatmulPlan(size_t batch, size_t m, size_t n, size_t k, Mat a, Mat b, Mat c)
        : m_batch(batch), m_m(m), m_n(n), m_k(k), m_a(a), m_b(b), m_c(c) {
        constexpr size_t strip = kS16Strip;
        const size_t want = kTileBytes / (2 * ((k + 1) / 2 * 2)) / strip * strip;
        m_tile = std::clamp(want, strip, (n + strip - 1) / strip * strip);
        m_tiles = (n + m_tile - 1) / m_tile;
        m_a_size = s16_packed_a_size(m, k);
    }

    size_t workspace_in_bytes() const override { return m_batch * m_a_size * sizeof(int16_t); }
    const char* name() const override { return "x86:int8_gemm_s16"; }

    void run(std::span<const TensorND> t, Workspace ws, dnnl::stream&) override {
        auto* packed = reinterpret_cast<int16_t*>(ws.ptr);
        const auto* a = static_cast<const int8_t*>(t[0].raw_ptr());
        const auto* b = static_cast<const int8_t*>(t[1].raw_ptr());
        auto* c = static_cast<int32_t*>(t[2].raw_ptr());
        parallel_ranges(m_batch, m_batch * m_m * m_k, kParallelGrain, [&](size_t lo, size_t hi) {
            for (size_t i = lo; i < hi; ++i)
                s16_pack_a(a + static_cast<ptrdiff_t>(i) * m_a.batch, m_a.row, m_a.col, m_m, m_k, 0,
                           packed + i * m_a_size);
        });
        parallel_ranges(m_batch * m_tiles, m_batch * m_m * m_n * m_k, kParallelGrain,
                        [&](size_t lo, size_t hi) {
                            thread_local std::vector<int16_t> tile;
                            if (tile.size() < m_k * m_tile)
                                tile.resize(m_k * m_tile);
                            for (size_t it = lo; it < hi; ++it)
                                run_tile(b, c, packed, it / m_tiles, it % m_tiles, tile.data());
                        });
    }

private:
    void run_tile(const int8_t* b, int32_t* c, const int16_t* packed, size_t i, size_t tile,
                  int16_t* buf) const {
        const size_t j0 = tile * m_tile, nj = std::min(m_tile, m_n - j0);
        const int8_t* bb = b + static_cast<ptrdiff_t>(i) * m_b.batch;
        for (size_t p = 0; p < m_k; ++p) {
            const int8_t* src = bb + static_cast<ptrdiff_t>(p) * m_b.row;
            int16_t* dst = buf + p * m_tile;
            if (m_b.col == 1) {
                for (size_t j = 0; j < nj; ++j)
                    dst[j] = src[j0 + j];
            } else {
                for (size_t j = 0; j < nj; ++j)
                    dst[j] = src[static_cast<ptrdiff_t>(j0 + j) * m_b.col];
            }
        }
        s16_gemm(packed + i * m_a_size, buf, m_tile, m_m, nj, m_k,
                 c + static_cast<ptrdiff_t>(i) * m_c.batch + static_cast<ptrdiff_t>(j0), m_c.row);
    }

    size_t m_batch, m_m, m_n, m_k;
    Mat m_a, m_b, m_c;
    size_t m_tile = 0, m_tiles = 0, m_a_size = 0;
};

}  // namespace

std::unique_ptr<Plan> int8_matmul_plan(const TensorLayout& a, const TensorLayout& b,
                                       const TensorLayout& c, bool trans_a, bool trans_b) {
    if (a.dtype.storage() != dtype::Int8 || b.dtype.storage() != dtype::Int8 ||
        c.dtype.storage() != dtype::Int32)
        return nullptr;
    if (a.is_empty() || b.is_empty() || c.is_empty() || c.stride[c.ndim - 1] != 1)
        return nullptr;
    const Mat ma = mat_of(a, trans_a), mb = mat_of(b, trans_b), mc = mat_of(c, false);
    const size_t batch = c.ndim == 3 ? c[0] : 1, m = c[c.ndim - 2], n = c[c.ndim - 1];
    const size_t k = trans_a ? a[a.ndim - 2] : a[a.ndim - 1];
    return std::make_unique<Int8MatmulPlan>(batch, m, n, k, ma, mb, mc);
}

}  // namespace neomeg::dnn::x86
