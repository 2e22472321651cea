#include "src/x86/block_transpose.h"

#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

// The rows of output-channel blocks [ob_begin, ob_end).
template <int64_t B>
void transpose_blocks(const float* from, float* to, int64_t i_count, int64_t ob_begin,
                      int64_t ob_end) {
    const int64_t i_blocks = i_count / B;
    for (int64_t ob = ob_begin; ob < ob_end; ++ob)
        for (int64_t ib = 0; ib < i_blocks; ++ib) {
            const float* block = from + (ob * i_blocks + ib) * B * B;
            for (int64_t o = 0; o < B; ++o) {
                float* row = to + (ob * B + o) * i_count + ib * B;
                for (int64_t i = 0; i < B; ++i)
                    row[i] = block[i * B + o];
            }
        }
}

}  // namespace

std::optional<BlockTranspose> BlockTranspose::plan(const dnnl::memory::desc& from,
                                                   const dnnl::memory::desc& to) {
    const dnnl_memory_desc_t &f = from.data, &t = to.data;
    if (f.format_kind != dnnl_blocked || t.format_kind != dnnl_blocked || f.extra.flags != 0 ||
        t.extra.flags != 0 || f.data_type != dnnl_f32 || t.data_type != dnnl_f32 ||
        f.ndims != t.ndims || f.ndims < 3 || f.offset0 != 0 || t.offset0 != 0)
        return std::nullopt;
    const auto &fb = f.format_desc.blocking, &tb = t.format_desc.blocking;
    const int64_t o = f.dims[0], i = f.dims[1], b = fb.inner_nblks == 2 ? fb.inner_blks[0] : 0;
    if ((b != 8 && b != 16) || fb.inner_blks[1] != b || fb.inner_idxs[0] != 1 ||
        fb.inner_idxs[1] != 0 || o % b || i % b || tb.inner_nblks != 0)
        return std::nullopt;
    for (int d = 0; d < f.ndims; ++d)
        if (f.dims[d] != t.dims[d] || f.padded_dims[d] != f.dims[d] || f.padded_offsets[d] ||
            t.padded_dims[d] != t.dims[d] || t.padded_offsets[d] || (d >= 2 && f.dims[d] != 1))
            return std::nullopt;
    // Blocks O-major, then I; the plain side row-major (the size-1 axes' strides address nothing).
    if (fb.strides[0] != i * b || fb.strides[1] != b * b || tb.strides[0] != i ||
        tb.strides[1] != 1)
        return std::nullopt;
    BlockTranspose c;
    c.m_o = o;
    c.m_i = i;
    c.m_block = b;
    return c;
}

void BlockTranspose::run(const void* from, void* to) const {
    const auto* f = static_cast<const float*>(from);
    auto* t = static_cast<float*>(to);
    // Split by rows of output-channel blocks: each thread reads and writes its own memory.
    const size_t o_blocks = static_cast<size_t>(m_o / m_block);
    parallel_ranges(o_blocks, static_cast<size_t>(m_o * m_i), kParallelGrain,
                    [&](size_t b, size_t e) {
                        const auto ob = static_cast<int64_t>(b), oe = static_cast<int64_t>(e);
                        if (m_block == 16)
                            transpose_blocks<16>(f, t, m_i, ob, oe);
                        else
                            transpose_blocks<8>(f, t, m_i, ob, oe);
                    });
}

}  // namespace neomeg::dnn::x86
