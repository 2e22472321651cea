// Cumsum on x86: float32 through cumsum_hwy.cpp, with any strides (views such as x[::-1] or a
// transpose included): the lines go out in blocks of columns (the dimension dense in both
// tensors, else the last one besides the axis), the lines split across OpenMP threads in chunks
// of at least kParallelGrain elements. Other dtypes go to naive.
#include <algorithm>
#include <utility>
#include <vector>

#include "neomeg/dnn/operators/reduce.h"
#include "src/common/reduce_axis.h"
#include "src/x86/cumsum_hwy.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

// Scans the total / (l.n * l.cols) blocks of l.cols lines, block i's first line at offsets
// offset(i) in src and dst, its lines split across threads (whole blocks where there are many,
// runs of one block's lines where there are few, such as a single block).
template <class Offset>
void run_blocks(const float* s, float* d, const CumsumLines& l, size_t total, Offset offset) {
    parallel_ranges(total / l.n, total, kParallelGrain, [&](size_t b, size_t e) {
        while (b < e) {
            const size_t c = b % l.cols;
            CumsumLines part = l;
            part.cols = std::min(l.cols - c, e - b);
            const auto [so, dof] = offset(b / l.cols);
            const auto cc = static_cast<ptrdiff_t>(c);
            cumsum_f32(s + so + cc * l.src_col, d + dof + cc * l.dst_col, part);
            b += part.cols;
        }
    });
}

class CumsumImpl final : public LoopKernel<Cumsum> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorLayout &src = inputs[0].layout, &dst = outputs[0].layout;
        size_t axis = 0;
        if (src.dtype != dtype::Float32 || !normalize_axis(m_param.axis, src.ndim, axis)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        const auto* s = static_cast<const float*>(inputs[0].raw_ptr());
        auto* d = static_cast<float*>(outputs[0].raw_ptr());
        const size_t total = src.total_nr_elems();
        m_last = "hwy";
        if (total == 0)
            return;
        CumsumLines l{};
        l.n = src[axis];
        l.cols = 1;
        l.src_step = src.stride[axis];
        l.dst_step = dst.stride[axis];
        l.exclusive = m_param.exclusive;
        l.reverse = m_param.reverse;
        if (src.is_contiguous() && dst.is_contiguous()) {
            // (outer, axis, inner): an outer row's inner columns are one block; along rows
            // (inner 1) the rows are the columns of one block, so that the scalar scan
            // interleaves several.
            size_t inner = total / src[axis];
            for (size_t k = 0; k < axis; ++k)
                inner /= src[k];
            const size_t row = l.n * inner;
            l.cols = inner == 1 ? total / row : inner;
            l.src_col = l.dst_col = static_cast<ptrdiff_t>(inner == 1 ? row : 1);
            run_blocks(s, d, l, total, [&](size_t o) {
                const auto off = static_cast<ptrdiff_t>(inner == 1 ? 0 : o * row);
                return std::pair{off, off};
            });
            return;
        }
        // The column dimension: dense in both tensors if one is, else the last besides the axis;
        // the other dimensions besides the axis index the blocks.
        auto dense = [&](size_t k) { return src.stride[k] == 1 && dst.stride[k] == 1; };
        size_t col = src.ndim;
        for (size_t k = 0; k < src.ndim; ++k)
            if (k != axis && (col == src.ndim || !dense(col)))
                col = k;
        std::vector<size_t> dims;
        for (size_t k = 0; k < src.ndim; ++k)
            if (k != axis && k != col)
                dims.push_back(k);
        if (col < src.ndim) {
            l.cols = src[col];
            l.src_col = src.stride[col];
            l.dst_col = dst.stride[col];
        }
        run_blocks(s, d, l, total, [&](size_t i) {
            ptrdiff_t so = 0, dof = 0;
            for (size_t k = dims.size(); k-- > 0;) {
                const size_t dim = dims[k];
                const auto at = static_cast<ptrdiff_t>(i % src[dim]);
                i /= src[dim];
                so += at * src.stride[dim];
                dof += at * dst.stride[dim];
            }
            return std::pair{so, dof};
        });
    }
};

}  // namespace
NM_REGISTER_X86(Cumsum, CumsumImpl);
}  // namespace neomeg::dnn::x86
