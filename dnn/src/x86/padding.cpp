// Padding and PaddingBackward on x86. The forward into a contiguous dst from a src whose rows are
// dense (any outer strides), of 1-, 2- or 4-byte elements (every dtype it takes), writes dst once:
// in CONSTANT mode src's rows in vector moves, each after the run of border before it, the value
// converted to the dtype as naive converts it (`padding_constant_hwy.h`); in REFLECT and REPLICATE
// row by row, the border the src elements it mirrors or repeats (`padding_rows.h`). Otherwise it
// copies src into dst's interior view through relayout_copy (rows, tiles or strided walks, threaded
// when large), then fills the border: in CONSTANT mode (any dtype, any dst strides) by filling all
// of dst before the copy; in REFLECT and REPLICATE mode slab by slab, the last axis first: a border
// slab along axis d is a copy of the interior slab it mirrors or repeats, over the interior of the
// axes before d (the ones not filled yet) and the whole of the axes after it (filled already). The
// backward of CONSTANT copies diff's interior view into grad; that of REFLECT and REPLICATE
// (float32) is the transpose of the forward: diff in double, each border slab added onto the slab
// it came from, the first axis first, then the interior rounded once into grad, as naive sums in
// double and rounds once. The interior is a view of dst (or diff) offset by the front widths, so
// any strides work.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/naive/type_cvt.h"
#include "src/x86/fill_hwy.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/padding_constant_hwy.h"
#include "src/x86/padding_rows.h"
#include "src/x86/parallel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

using Mode = param::Padding::Mode;

// The view of the padded tensor t that holds the unpadded elements: src's (or grad's) shape,
// starting at the front widths.
TensorND interior(const TensorND& t, const TensorLayout& inner, const param::Padding& p) {
    TensorND v = t;
    for (size_t d = 0; d < t.layout.ndim; ++d)
        v = slab(v, d, static_cast<size_t>(p.front_offsets[d]), inner.shape[d]);
    return v;
}

// The index along an axis of n src elements that padded index j (counted from dst's first) copies,
// as naive's source_index: REFLECT mirrors without repeating the edge, also past a border wider
// than src; REPLICATE repeats the edge.
size_t source_index(Mode mode, int64_t n, int64_t front, int64_t j) {
    j -= front;
    if (mode == Mode::REPLICATE)
        return static_cast<size_t>(std::clamp<int64_t>(j, 0, n - 1));
    if (n == 1)
        return 0;
    int64_t period = 2 * (n - 1);
    int64_t r = ((j % period) + period) % period;
    return static_cast<size_t>(r < n ? r : period - r);
}

// The view of padded t along axes [0, d) restricted to the interior (src's extent `inner`).
TensorND interior_before(const TensorND& t, const TensorLayout& inner, const param::Padding& p,
                         size_t d) {
    TensorND v = t;
    for (size_t k = 0; k < d; ++k)
        v = slab(v, k, static_cast<size_t>(p.front_offsets[k]), inner.shape[k]);
    return v;
}

// Fills the REFLECT/REPLICATE border of dst, whose interior holds src (of layout `inner`).
void fill_border(const TensorND& dst, const TensorLayout& inner, const param::Padding& p) {
    for (size_t d = dst.layout.ndim; d-- > 0;) {
        TensorND v = interior_before(dst, inner, p, d);
        int64_t n = static_cast<int64_t>(inner.shape[d]), front = p.front_offsets[d];
        for (size_t j = 0; j < dst.layout.shape[d]; ++j) {
            if (static_cast<int64_t>(j) >= front && static_cast<int64_t>(j) < front + n)
                continue;
            size_t from = static_cast<size_t>(front) + source_index(p.mode, n, front, int64_t(j));
            (void)relayout_copy(slab(v, d, from, 1), slab(v, d, j, 1));
        }
    }
}

class PaddingImpl final : public LoopKernel<Padding> {
public:
    using LoopKernel::LoopKernel;

private:
    // dst written once, row by row; false where the rows do not apply (a strided dst or src row,
    // an element size without an integer type (a complex dtype, which naive rejects), an empty src
    // to mirror).
    bool write_rows(const TensorND& src, const TensorND& dst) const {
        const TensorLayout &s = src.layout, &d = dst.layout;
        const size_t last = d.ndim - 1, size = d.dtype.size();
        if (d.ndim == 0 || !d.is_contiguous() || (s.shape[last] > 1 && s.stride[last] != 1) ||
            (size != 1 && size != 2 && size != 4) ||
            (m_param.mode != Mode::CONSTANT && s.is_empty()))
            return false;
        if (d.is_empty())
            return true;
        if (m_param.mode == Mode::CONSTANT) {
            constant_rows(src, dst);
            return true;
        }
        const Mode mode = m_param.mode;
        PadRows rows(s, d, m_param, [mode](int64_t n, int64_t front, int64_t j) {
            return source_index(mode, n, front, j);
        });
        auto run = [&](auto zero) {
            using T = decltype(zero);
            rows.write(static_cast<const T*>(src.raw_ptr()), static_cast<T*>(dst.raw_ptr()));
        };
        if (size == 1)
            run(uint8_t{});
        else if (size == 2)
            run(uint16_t{});
        else
            run(uint32_t{});
        return true;
    }

    // CONSTANT mode's rows (padding_constant_hwy.h), split across the threads; an empty src is
    // all border.
    void constant_rows(const TensorND& src, const TensorND& dst) const {
        const TensorLayout &s = src.layout, &d = dst.layout;
        const size_t size = d.dtype.size();
        alignas(4) std::byte one[4] = {};
        naive::store_scalar(TensorND(one, TensorLayout({1}, d.dtype)), 0,
                            naive::Scalar::of_float(m_param.value));
        ConstantPadRows p;
        p.src = static_cast<const std::byte*>(src.raw_ptr());
        p.dst = static_cast<std::byte*>(dst.raw_ptr());
        p.elem = size;
        p.value = one;
        p.ndim = s.ndim;
        p.rows = 1;
        for (size_t k = 0; k < s.ndim; ++k) {
            p.shape[k] = s.shape[k];
            p.src_step[k] = s.stride[k] * static_cast<ptrdiff_t>(size);
            p.dst_step[k] = static_cast<size_t>(d.stride[k]) * size;
            p.origin += static_cast<size_t>(m_param.front_offsets[k]) * p.dst_step[k];
            if (k + 1 < s.ndim)
                p.rows *= s.shape[k];
        }
        p.dst_bytes = d.total_nr_elems() * size;
        p.row_bytes = s.shape[s.ndim - 1] * size;
        const size_t work = p.dst_bytes / sizeof(float);  // the grain counts float32 elements
        if (p.rows == 0) {
            parallel_ranges(p.dst_bytes / size, work, kParallelGrain, [&](size_t b, size_t e) {
                fill_elements(p.dst + b * size, one, size, (e - b) * size);
            });
            return;
        }
        parallel_ranges(p.rows, work, kParallelGrain,
                        [&](size_t b, size_t e) { pad_constant_rows(p, b, e); });
    }

    // Fills every element of dst with the value; false where it cannot (an element size the copy
    // does not take).
    bool fill_constant(const TensorND& dst) const {
        if (dst.layout.dtype == dtype::Float32 && dst.layout.is_contiguous()) {
            auto* d = static_cast<float*>(dst.raw_ptr());
            size_t n = dst.layout.total_nr_elems();
            const float value = m_param.value;
            parallel_ranges(n, n, kParallelGrain,
                            [&](size_t b, size_t e) { std::fill(d + b, d + e, value); });
            return true;
        }
        // One element holding the value in dst's dtype, as naive's store converts it, copied
        // into every element of dst (a view of it broadcast over dst's shape).
        alignas(8) std::byte one[8] = {};
        if (dst.layout.dtype.size() > sizeof(one))
            return false;
        TensorLayout single({1}, dst.layout.dtype);
        naive::store_scalar(TensorND(one, single), 0, naive::Scalar::of_float(m_param.value));
        TensorLayout broadcast = dst.layout;
        for (size_t d = 0; d < broadcast.ndim; ++d)
            broadcast.stride[d] = 0;
        return relayout_copy(TensorND(one, broadcast), dst) != nullptr;
    }

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        if (write_rows(src, dst)) {
            m_last = "rows";
            return;
        }
        if (m_param.mode == Mode::CONSTANT) {
            if (!fill_constant(dst))
                return run_naive(inputs, outputs, ws);
            if (!src.layout.is_empty())
                (void)relayout_copy(src, interior(dst, src.layout, m_param));
            m_last = "copy";
            return;
        }
        // An empty src has nothing to mirror or repeat: naive says what that means.
        if (src.layout.is_empty() || !relayout_copy(src, interior(dst, src.layout, m_param)))
            return run_naive(inputs, outputs, ws);
        fill_border(dst, src.layout, m_param);
        m_last = "copy";
    }
};

// The contiguous strides of a shape, in elements.
std::array<size_t, TensorLayout::MAX_NDIM> dense_strides(const TensorLayout& l) {
    std::array<size_t, TensorLayout::MAX_NDIM> st{};
    size_t s = 1;
    for (size_t k = l.ndim; k-- > 0;) {
        st[k] = s;
        s *= l.shape[k];
    }
    return st;
}

// w (dense, of `padded`'s shape) gets, along axis d, its slab `from` added onto its slab `to`;
// axes before d are walked over their interior [lo, lo + len) only, axes after d whole.
void fold_slab(double* w, const TensorLayout& padded, const TensorLayout& inner,
               const param::Padding& p, size_t d, size_t from, size_t to) {
    auto st = dense_strides(padded);
    std::array<size_t, TensorLayout::MAX_NDIM> lo{}, len{}, idx{};
    size_t axes[TensorLayout::MAX_NDIM], na = 0, count = 1;
    for (size_t k = 0; k < padded.ndim; ++k) {
        if (k == d)
            continue;
        lo[na] = k < d ? static_cast<size_t>(p.front_offsets[k]) : 0;
        len[na] = k < d ? inner.shape[k] : padded.shape[k];
        axes[na++] = k;
        count *= len[na - 1];
    }
    if (count == 0)
        return;
    const auto sf = static_cast<ptrdiff_t>(from * st[d]), stt = static_cast<ptrdiff_t>(to * st[d]);
    for (size_t e = 0; e < count; ++e) {
        ptrdiff_t off = 0;
        for (size_t a = 0; a < na; ++a)
            off += static_cast<ptrdiff_t>((lo[a] + idx[a]) * st[axes[a]]);
        w[off + stt] += w[off + sf];
        for (size_t a = na; a-- > 0;) {
            if (++idx[a] < len[a])
                break;
            idx[a] = 0;
        }
    }
}

class PaddingBackwardImpl final : public LoopKernel<PaddingBackward> {
public:
    using LoopKernel::LoopKernel;

    // diff in double, and a float32 copy of diff (then of grad's values) to convert through.
    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) override {
        return std::max(LoopKernel::get_workspace_in_bytes(inputs, outputs),
                        inputs[0].total_nr_elems() * (sizeof(double) + sizeof(float)));
    }

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &diff = inputs[0], &grad = outputs[0];
        if (diff.layout.dtype != dtype::Float32)
            return run_naive(inputs, outputs, ws);
        if (m_param.mode == Mode::CONSTANT) {
            if (!grad.layout.is_empty())
                (void)relayout_copy(interior(diff, grad.layout, m_param), grad);
            m_last = "copy";
            return;
        }
        if (grad.layout.is_empty())
            return run_naive(inputs, outputs, ws);
        fold(diff, grad, ws);
        m_last = "fold";
    }

private:
    void fold(const TensorND& diff, const TensorND& grad, Workspace ws) {
        size_t n = diff.layout.total_nr_elems();
        auto* w = reinterpret_cast<double*>(ws.ptr);
        auto* f = reinterpret_cast<float*>(ws.ptr + n * sizeof(double));
        TensorLayout dense(diff.layout, dtype::Float32);
        (void)relayout_copy(diff, TensorND(f, dense));
        parallel_ranges(n, n, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i)
                w[i] = f[i];
        });
        for (size_t d = 0; d < dense.ndim; ++d) {
            int64_t len = static_cast<int64_t>(grad.layout.shape[d]),
                    front = m_param.front_offsets[d];
            for (size_t j = 0; j < dense.shape[d]; ++j) {
                if (static_cast<int64_t>(j) >= front && static_cast<int64_t>(j) < front + len)
                    continue;
                size_t to = static_cast<size_t>(front) +
                            source_index(m_param.mode, len, front, static_cast<int64_t>(j));
                fold_slab(w, dense, grad.layout, m_param, d, j, to);
            }
        }
        // The interior, rounded once, through f (dense of grad's shape) into grad.
        TensorLayout out(grad.layout, dtype::Float32);
        auto st = dense_strides(dense);
        size_t m = out.total_nr_elems();
        parallel_ranges(m, m, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i) {
                size_t off = 0;
                for (size_t k = out.ndim, rest = i; k-- > 0;) {
                    off += (rest % out.shape[k] + static_cast<size_t>(m_param.front_offsets[k])) *
                           st[k];
                    rest /= out.shape[k];
                }
                f[i] = static_cast<float>(w[off]);
            }
        });
        (void)relayout_copy(TensorND(f, out), grad);
    }
};

}  // namespace
NM_REGISTER_X86(Padding, PaddingImpl);
NM_REGISTER_X86(PaddingBackward, PaddingBackwardImpl);
}  // namespace neomeg::dnn::x86
