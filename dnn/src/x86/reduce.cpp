// Reduce on x86: SUM, SUM_SQR, MEAN, MAX, MIN and PRODUCT of float32 over one axis through
// reduce_hwy.cpp (float16 and bfloat16 through it too, widened to float32 and the result rounded
// back), for a contiguous src and dst (the (outer, axis, inner) view is then dense). Large tensors
// split their outer rows across OpenMP threads in chunks of at least kParallelGrain source
// elements; fewer long rows than threads (a full reduction) split along each row instead, and the
// chunks' accumulators combine, and fewer outer rows than threads with columns (inner > 1) split
// their columns. A src and dst dense in one other axis order (channels-last: the
// eager runtime gives dst src's format) run as contiguous ones in that order; other strided ones
// reduce contiguous copies. Other dtypes and an empty axis go to naive.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "neomeg/dnn/operators/reduce.h"
#include "src/common/reduce_axis.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/reduce_hwy.h"
#include "src/x86/relayout_copy.h"
#include "src/x86/type_cvt_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

// src and dst with their axes in src's memory order (outermost first) and the reduced axis's
// place among them, when both are then contiguous; false otherwise.
bool in_memory_order(TensorLayout& src, TensorLayout& dst, size_t& axis) {
    if (src.is_contiguous() && dst.is_contiguous())
        return true;
    std::vector<size_t> order(src.ndim);
    for (size_t d = 0; d < src.ndim; ++d)
        order[d] = d;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return (src[a] == 1 ? 0 : src.stride[a]) > (src[b] == 1 ? 0 : src.stride[b]);
    });
    src = src.dimshuffle(order);
    dst = dst.dimshuffle(order);
    axis = static_cast<size_t>(std::find(order.begin(), order.end(), axis) - order.begin());
    return src.is_contiguous() && dst.is_contiguous();
}

class ReduceImpl final : public LoopKernel<Reduce> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        TensorLayout src = inputs[0].layout, dst = outputs[0].layout;
        if (dst.total_nr_elems() == 0)  // nothing to write (and no row to block by)
            return;
        size_t axis = 0;
        bool lowp = src.dtype == dtype::Float16 || src.dtype == dtype::BFloat16;
        if (!reduce_f32_supported(m_param.mode) || !(src.dtype == dtype::Float32 || lowp) ||
            dst.dtype != src.dtype || !normalize_axis(m_param.axis, src.ndim, axis) ||
            src[axis] == 0) {
            run_naive(inputs, outputs, ws);
            return;
        }
        size_t memory_axis = axis;
        if (in_memory_order(src, dst, memory_axis)) {
            run_dense(inputs[0], outputs[0], src, memory_axis, lowp);
            m_last = "hwy";
            return;
        }
        // Other strides (a broadcast view: the gradient of a mean, summed over the batch for a
        // bias; a sliced or transposed view) reduce contiguous copies.
        through_dense_copies(inputs[0], outputs[0], [&](const TensorND& s, const TensorND& d) {
            run_dense(s, d, s.layout, axis, lowp);
        });
        m_last = "hwy:copied";
    }

private:
    // src and dst contiguous in the order of `src` (their memory order), reduced along `axis`.
    void run_dense(const TensorND& src_nd, const TensorND& dst_nd, const TensorLayout& src,
                   size_t axis, bool lowp) const {
        size_t outer = 1, inner = 1;
        for (size_t d = 0; d < axis; ++d)
            outer *= src[d];
        for (size_t d = axis + 1; d < src.ndim; ++d)
            inner *= src[d];
        if (lowp)
            run_lowp(src_nd, dst_nd, outer, src[axis], inner);
        else
            run(static_cast<const float*>(src_nd.raw_ptr()), static_cast<float*>(dst_nd.raw_ptr()),
                outer, src[axis], inner);
    }

    // float16 or bfloat16: src widened to float32 (exactly), the float32 kernel, its float result
    // rounded to the 16-bit dtype, which is naive's rounding (double to float, then to 16 bits).
    // Widened a block at a time into a buffer that stays in cache: whole outer rows when they
    // fit, else `cols` inner columns of every step along the axis; each output's whole reduction
    // is in one block, so the result is the whole plane's. Widening the whole plane first cost a
    // fresh allocation per call and two more passes over memory: autocast's bias gradients
    // (64x6x24x24 over the batch) took twice float32's time.
    void run_lowp(const TensorND& src, const TensorND& dst, size_t outer, size_t axis,
                  size_t inner) const {
        DType dt = src.layout.dtype;
        const auto* s = static_cast<const uint16_t*>(src.raw_ptr());
        auto* d = static_cast<uint16_t*>(dst.raw_ptr());
        size_t row = axis * inner;
        bool by_rows = row <= kBlockElems ||
                       ((inner == 1 || axis * kMinCols > kMaxBlockElems) && row <= kMaxBlockElems);
        if (!by_rows && (inner == 1 || axis * kMinCols > kMaxBlockElems)) {
            run_lowp_whole(src, dst, outer, axis, inner);
            return;
        }
        size_t cols = by_rows ? std::max<size_t>(1, kBlockElems / row)  // outer rows per block
                              : std::min(inner, std::max(kMinCols, kBlockElems / axis));
        size_t per_outer = by_rows ? 1 : (inner + cols - 1) / cols;
        size_t tasks = by_rows ? (outer + cols - 1) / cols : outer * per_outer;
        size_t block = by_rows ? cols * row : axis * cols;
        parallel_ranges(tasks, outer * row, kParallelGrain, [&](size_t b, size_t e) {
            auto wide = std::make_unique_for_overwrite<float[]>(block);
            auto out = std::make_unique_for_overwrite<float[]>(by_rows ? cols * inner : cols);
            for (size_t t = b; t < e; ++t) {
                if (by_rows) {
                    size_t o0 = t * cols, rows = std::min(cols, outer - o0);
                    type_cvt_run(dt, dtype::Float32, s + o0 * row, wide.get(), rows * row);
                    reduce_f32(m_param.mode, wide.get(), out.get(), 0, rows, axis, inner);
                    type_cvt_run(dtype::Float32, dt, out.get(), d + o0 * inner, rows * inner);
                } else {
                    size_t o = t / per_outer, c0 = (t % per_outer) * cols;
                    size_t n = std::min(cols, inner - c0);
                    const uint16_t* from = s + o * row + c0;
                    for (size_t k = 0; k < axis; ++k)
                        type_cvt_run(dt, dtype::Float32, from + k * inner, wide.get() + k * n, n);
                    reduce_f32(m_param.mode, wide.get(), out.get(), 0, 1, axis, n);
                    type_cvt_run(dtype::Float32, dt, out.get(), d + o * inner + c0, n);
                }
            }
        });
    }

    // A reduction too long for a block: the whole plane widened, as one float32 run.
    void run_lowp_whole(const TensorND& src, const TensorND& dst, size_t outer, size_t axis,
                        size_t inner) const {
        DType dt = src.layout.dtype;
        size_t n = outer * axis * inner, m = outer * inner;
        // Not value-initialised: zeroing is a pass over memory that the conversion writes anyway.
        auto wide = std::make_unique_for_overwrite<float[]>(n);
        auto out = std::make_unique_for_overwrite<float[]>(m);
        const auto* s = static_cast<const uint16_t*>(src.raw_ptr());
        parallel_ranges(n, n, kParallelGrain, [&](size_t b, size_t e) {
            type_cvt_run(dt, dtype::Float32, s + b, wide.get() + b, e - b);
        });
        run(wide.get(), out.get(), outer, axis, inner);
        type_cvt_run(dtype::Float32, dt, out.get(), dst.raw_ptr(), m);
    }

    // 32 KiB of float32 per block (L1; 128 KiB ran 1.3x slower), at least one vector of columns,
    // at most 1 MiB.
    static constexpr size_t kBlockElems = 8192, kMinCols = 16, kMaxBlockElems = 262144;

    void run(const float* src, float* dst, size_t outer, size_t axis, size_t inner) const {
        if (inner == 1 && outer < static_cast<size_t>(omp_get_max_threads()) &&
            axis >= 2 * kParallelGrain) {
            for (size_t o = 0; o < outer; ++o)
                dst[o] = reduce_long_row(src + o * axis, axis);
            return;
        }
        size_t threads = static_cast<size_t>(omp_get_max_threads());
        if (inner > 1 && outer < threads && inner >= 2 * kColumnChunk) {
            // Fewer outer rows than threads (min over axis 0 of 1024x2048 is one): their columns
            // split into chunks across the threads, each chunk's whole reduction on one thread.
            size_t per_outer = (inner + kColumnChunk - 1) / kColumnChunk;
            parallel_ranges(outer * per_outer, outer * axis * inner, kParallelGrain,
                            [&](size_t b, size_t e) {
                                for (size_t t = b; t < e; ++t) {
                                    size_t o = t / per_outer, c = (t % per_outer) * kColumnChunk;
                                    size_t at = o * axis * inner + c;
                                    reduce_f32_columns(m_param.mode, src + at, dst + o * inner + c,
                                                       axis, inner,
                                                       std::min(kColumnChunk, inner - c));
                                }
                            });
            return;
        }
        parallel_ranges(outer, outer * axis * inner, kParallelGrain, [&](size_t b, size_t e) {
            reduce_f32(m_param.mode, src, dst, b, e, axis, inner);
        });
    }

    // Columns per task where few outer rows split their columns: whole cache lines, a few
    // vectors' worth.
    static constexpr size_t kColumnChunk = 256;

    // A row too long for one thread: chunks reduce on the threads, their accumulators combine.
    float reduce_long_row(const float* src, size_t n) const {
        constexpr size_t kMaxChunks = 256;
        size_t chunks = std::min(
                {static_cast<size_t>(omp_get_max_threads()), n / kParallelGrain, kMaxChunks});
        size_t len = (n + chunks - 1) / chunks;
        std::array<double, kMaxChunks> acc{};
        parallel_ranges(chunks, n, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t c = b; c < e; ++c)
                acc[c] = reduce_f32_run(m_param.mode, src + c * len, std::min(len, n - c * len));
        });
        double v = acc[0];
        for (size_t c = 1; c < chunks; ++c)
            v = reduce_combine(m_param.mode, v, acc[c]);
        return static_cast<float>(m_param.mode == ReduceMode::MEAN ? v / double(n) : v);
    }
};

}  // namespace
NM_REGISTER_X86(Reduce, ReduceImpl);
}  // namespace neomeg::dnn::x86
