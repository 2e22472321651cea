// Concat, Split, Roll, Diag, Padding and PaddingBackward on the CUDA handle: Concat and Split copy
// each piece as one strided device copy into (or out of) its slab of the joined tensor, Roll each
// combination of halves of its rolled axes; Padding's kernels are in kernels/padding.cu.
#include "neomeg/dnn/operators/tensor_basic.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/common/roll.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

size_t axis_of(int32_t axis, size_t ndim) {
    return static_cast<size_t>(axis < 0 ? axis + static_cast<int32_t>(ndim) : axis);
}

// The slab [start, start + size) of `whole` along `axis`.
TensorND slab(const TensorND& whole, size_t axis, size_t start, size_t size) {
    TensorLayout l = whole.layout;
    l[axis] = size;
    auto* p =
            static_cast<std::byte*>(whole.raw_ptr()) +
            static_cast<ptrdiff_t>(start) * l.stride[axis] * static_cast<ptrdiff_t>(l.dtype.size());
    return {p, l};
}

void copy(const TensorND& src, const TensorND& dst, cudaStream_t stream) {
    auto c = collapse_jointly({src.layout, dst.layout});
    kern::convert(src.raw_ptr(), to_kern(src.layout.dtype), c[0], dst.raw_ptr(),
                  to_kern(dst.layout.dtype), c[1],
                  static_cast<int64_t>(dst.layout.total_nr_elems()), stream);
}

class ConcatImpl final : public CudaKernel<Concat> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        size_t axis = axis_of(m_param.axis, out[0].layout.ndim), start = 0;
        for (const TensorND& t : in) {
            size_t size = t.layout[axis];
            if (size && !t.layout.is_empty())
                copy(t, slab(out[0], axis, start, size), stream());
            start += size;
        }
        return "cuda";
    }
};

class SplitImpl final : public CudaKernel<Split> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        size_t axis = axis_of(m_param.axis, in[0].layout.ndim), start = 0;
        for (const TensorND& t : out) {
            size_t size = t.layout[axis];
            if (size && !t.layout.is_empty())
                copy(slab(in[0], axis, start, size), t, stream());
            start += size;
        }
        return "cuda";
    }
};

// Roll: along each rolled axis (shift k of n), dst's first k take src's last k and the rest src's
// first n - k; every combination of those halves over the rolled axes is one strided copy.
class RollImpl final : public CudaKernel<Roll> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    void copy_pieces(const TensorND& s, const TensorND& d,
                     const std::array<size_t, TensorLayout::MAX_NDIM>& k, size_t axis) {
        while (axis < s.layout.ndim && k[axis] == 0)
            ++axis;
        if (axis == s.layout.ndim) {
            copy(s, d, stream());
            return;
        }
        size_t n = s.layout[axis], kk = k[axis];
        copy_pieces(slab(s, axis, n - kk, kk), slab(d, axis, 0, kk), k, axis + 1);
        copy_pieces(slab(s, axis, 0, n - kk), slab(d, axis, kk, n - kk), k, axis + 1);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        if (!in[0].layout.is_empty())
            copy_pieces(in[0], out[0], roll_shifts(m_param, in[0].layout), 0);
        return "cuda";
    }
};

using PadMode = param::Padding::Mode;
static_assert(static_cast<uint32_t>(kern::PadMode::CONSTANT) ==
              static_cast<uint32_t>(PadMode::CONSTANT));
static_assert(static_cast<uint32_t>(kern::PadMode::REFLECT) ==
              static_cast<uint32_t>(PadMode::REFLECT));
static_assert(static_cast<uint32_t>(kern::PadMode::REPLICATE) ==
              static_cast<uint32_t>(PadMode::REPLICATE));

// A layout as the padding kernels read it: every dim kept, for the per-dim border rule.
kern::Strided uncollapsed(const TensorLayout& l) {
    kern::Strided s;
    s.ndim = static_cast<int>(l.ndim);
    for (size_t d = 0; d < l.ndim; ++d) {
        s.shape[d] = static_cast<int64_t>(l[d]);
        s.stride[d] = l.stride[d];
    }
    return s;
}

kern::PaddingArgs padding_args(const param::Padding& p, const TensorND& src,
                               const TensorND& padded) {
    kern::PaddingArgs a{};
    a.mode = static_cast<kern::PadMode>(p.mode);
    a.value = p.value;
    a.src = src.raw_ptr();
    a.src_layout = uncollapsed(src.layout);
    a.dst = padded.raw_ptr();
    a.dst_layout = uncollapsed(padded.layout);
    a.dt = to_kern(src.layout.dtype);
    for (size_t d = 0; d < src.layout.ndim; ++d)
        a.front[d] = p.front_offsets[d];
    return a;
}

class PaddingImpl final : public CudaKernel<Padding> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        kern::padding_forward(padding_args(m_param, in[0], out[0]),
                              static_cast<int64_t>(out[0].layout.total_nr_elems()), stream());
        return "cuda";
    }
};

class PaddingBackwardImpl final : public CudaKernel<PaddingBackward> {
public:
    using CudaKernel::CudaKernel;

private:
    // Float gradients; the sums collect in a double per grad element.
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout>) override {
        return in[0].dtype.is_float();
    }
    size_t workspace_in_bytes(std::span<const TensorLayout>,
                              std::span<const TensorLayout> out) override {
        return out[0].total_nr_elems() * sizeof(double);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        // args.src is diff read through the padded layout; src_layout gives grad's shape.
        kern::PaddingArgs a = padding_args(m_param, out[0], in[0]);
        a.src = in[0].raw_ptr();
        a.dst = nullptr;
        const TensorLayout& g = out[0].layout;
        kern::padding_backward(a, static_cast<int64_t>(in[0].layout.total_nr_elems()),
                               reinterpret_cast<double*>(ws.ptr), out[0].raw_ptr(),
                               collapse_jointly({g})[0], static_cast<int64_t>(g.total_nr_elems()),
                               stream());
        return "cuda";
    }
};

// Diag through the copy kernels: the k-th diagonal of a matrix is a strided 1-D view of it
// (row stride + column stride per step), so reading it (2-D src) or writing it into zeros (1-D
// src) is one strided copy.
class DiagImpl final : public CudaKernel<Diag> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    // The diagonal of `matrix` that Diag reads or writes, `len` elements long.
    TensorND diagonal(const TensorND& matrix, size_t len) const {
        const TensorLayout& l = matrix.layout;
        int64_t k = m_param.k, r0 = k >= 0 ? 0 : -k, c0 = k >= 0 ? k : 0;
        auto* p = static_cast<std::byte*>(matrix.raw_ptr()) +
                  (r0 * l.stride[0] + c0 * l.stride[1]) * static_cast<ptrdiff_t>(l.dtype.size());
        return {p, TensorLayout(TensorShape{len}, {l.stride[0] + l.stride[1]}, l.dtype)};
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &src = in[0], &dst = out[0];
        if (dst.layout.is_empty())
            return "cuda";
        if (src.layout.ndim == 2) {
            copy(diagonal(src, dst.layout[0]), dst, stream());
            return "cuda";
        }
        // Zero bits are zero in every dtype.
        kern::fill_bytes(dst.raw_ptr(), static_cast<int>(dst.layout.dtype.size()),
                         collapse_jointly({dst.layout})[0],
                         static_cast<int64_t>(dst.layout.total_nr_elems()), 0, stream());
        if (!src.layout.is_empty())
            copy(src, diagonal(dst, src.layout[0]), stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(Diag, DiagImpl);
NM_REGISTER_CUDA(Concat, ConcatImpl);
NM_REGISTER_CUDA(Split, SplitImpl);
NM_REGISTER_CUDA(Roll, RollImpl);
NM_REGISTER_CUDA(Padding, PaddingImpl);
NM_REGISTER_CUDA(PaddingBackward, PaddingBackwardImpl);
}  // namespace neomeg::dnn::cuda
