// MatrixInverse on x86: the operator is defined as naive's Gauss-Jordan elimination with partial
// pivoting in double (an exactly zero pivot means singular), so this runs naive's row operations
// in naive's order on every element the inverse depends on (bit for bit naive's inverse, and the
// same matrices found singular), faster: the columns of a already eliminated are left alone, each
// row of [a | I] past the pivot column is one contiguous run the compiler vectorises, the
// matrices of a batch are split across OpenMP threads, and a lone large matrix splits each
// column's eliminations by rows instead. A matrix holding NaN or inf gets an all-NaN inverse.
// Float dtypes, any strides.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "neomeg/dnn/operators/linalg.h"
#include "src/common/dtype_dispatch.h"
#include "src/x86/flat_runs.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

// Reduces the n x 2n row-major [a | I] in `m` to [. | a^-1]; false when a pivot is exactly zero.
// `rows_in_parallel` splits each column's eliminations across threads.
bool gauss_jordan(double* m, size_t n, bool rows_in_parallel) {
    const size_t w = 2 * n;
    auto row = [&](size_t r) { return m + r * w; };
    for (size_t col = 0; col < n; ++col) {
        size_t p = col;
        for (size_t r = col + 1; r < n; ++r)
            if (std::abs(row(r)[col]) > std::abs(row(p)[col]))
                p = r;
        const double pivot = row(p)[col];
        if (pivot == 0.0)
            return false;
        if (p != col)
            std::swap_ranges(row(p), row(p) + w, row(col));
        // Columns up to `col` of a are never read again (later steps read only columns after
        // theirs), so only [col + 1, 2n) is updated: the inverse is naive's to the bit.
        double* pr = row(col);
        for (size_t j = col + 1; j < w; ++j)
            pr[j] /= pivot;
        auto eliminate = [&](size_t b, size_t e) {
            for (size_t r = b; r < e; ++r) {
                double* rr = row(r);
                const double f = rr[col];
                if (r == col || f == 0.0)
                    continue;
                for (size_t j = col + 1; j < w; ++j)
                    rr[j] -= f * pr[j];
            }
        };
        if (rows_in_parallel)
            parallel_ranges(n, n * w, kParallelGrain, eliminate);
        else
            eliminate(0, n);
    }
    return true;
}

class MatrixInverseImpl final : public LoopKernel<MatrixInverse> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        const TensorLayout &sl = src.layout, &dl = dst.layout;
        const size_t nd = sl.ndim, n = sl[nd - 1], outer = nd - 2;
        size_t batch = 1;
        for (size_t d = 0; d < outer; ++d)
            batch *= sl[d];
        const ptrdiff_t sr = sl.stride[nd - 2], sc = sl.stride[nd - 1], dr = dl.stride[nd - 2],
                        dc = dl.stride[nd - 1];
        m_last = "gauss_jordan";
        // The first singular matrix of the batch, which naive names.
        std::atomic<size_t> singular{batch};
        const size_t work = batch * n * n * n * 2;
        const bool rows_in_parallel =
                batch < static_cast<size_t>(omp_get_max_threads()) && n * n * 2 >= kParallelGrain;
        dispatch_float(sl.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* s = static_cast<const T*>(src.raw_ptr());
            T* d = static_cast<T*>(dst.raw_ptr());
            auto run = [&](size_t b, size_t e) {
                std::vector<double> m(n * 2 * n);
                for (size_t i = b; i < e; ++i) {
                    const T* a = s + row_offset(sl, outer, i);
                    bool finite = true;
                    for (size_t r = 0; r < n; ++r) {
                        double* mr = m.data() + r * 2 * n;
                        for (size_t c = 0; c < n; ++c) {
                            mr[c] = static_cast<double>(
                                    static_cast<float>(a[static_cast<ptrdiff_t>(r) * sr +
                                                         static_cast<ptrdiff_t>(c) * sc]));
                            finite = finite && std::isfinite(mr[c]);
                            mr[n + c] = r == c ? 1.0 : 0.0;
                        }
                    }
                    if (!finite) {
                        std::fill(m.begin(), m.end(), std::numeric_limits<double>::quiet_NaN());
                    } else if (!gauss_jordan(m.data(), n, rows_in_parallel)) {
                        size_t cur = singular.load();
                        while (i < cur && !singular.compare_exchange_weak(cur, i)) {
                        }
                        continue;
                    }
                    T* o = d + row_offset(dl, outer, i);
                    for (size_t r = 0; r < n; ++r)
                        for (size_t c = 0; c < n; ++c)
                            o[static_cast<ptrdiff_t>(r) * dr + static_cast<ptrdiff_t>(c) * dc] =
                                    static_cast<T>(static_cast<float>(m[r * 2 * n + n + c]));
                }
            };
            if (rows_in_parallel)
                run(0, batch);
            else
                parallel_ranges(batch, work, kParallelGrain, run);
        });
        NM_REQUIRE(ParamError, singular.load() == batch, "matrix ", singular.load(),
                   " of the batch (flattened) is singular, src ", sl.to_string());
    }
};

}  // namespace
NM_REGISTER_X86(MatrixInverse, MatrixInverseImpl);
}  // namespace neomeg::dnn::x86
