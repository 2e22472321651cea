// Argsort and TopK on the CUDA handle: a stable segmented radix sort of every row (CUB,
// kernels/sort.cu), then the outputs gathered from the sorted positions. TopK sorts the whole row
// too (k is usually a good part of it in the models here); its unsorted mode re-sorts the chosen
// positions so that they keep src's order, as naive.
#include <cstdlib>

#include "neomeg/dnn/operators/reduce.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

// The rows x n view of a tensor sorted along its last axis.
struct Rows {
    int64_t rows, n;
};
Rows rows_of(const TensorLayout& l) {
    auto n = static_cast<int64_t>(l[l.ndim - 1]);
    auto total = static_cast<int64_t>(l.total_nr_elems());
    return {n ? total / n : 0, n};
}

bool fits_int(const TensorLayout& l) {
    return l.total_nr_elems() < (size_t{1} << 30);
}

// Workspace: the sorted positions (int32, rows x n) and the sort's own.
size_t sort_bytes(const TensorLayout& src) {
    Rows r = rows_of(src);
    size_t order = (static_cast<size_t>(r.rows * r.n) * sizeof(int32_t) + 255) / 256 * 256;
    return order + kern::sort_workspace_bytes(r.rows, r.n);
}

int32_t* sort_into(const TensorND& src, bool descending, Workspace ws, cudaStream_t stream) {
    Rows r = rows_of(src.layout);
    auto* order = reinterpret_cast<int32_t*>(ws.ptr);
    size_t order_bytes = (static_cast<size_t>(r.rows * r.n) * sizeof(int32_t) + 255) / 256 * 256;
    kern::sort_rows(src.raw_ptr(), to_kern(src.layout.dtype), collapse_jointly({src.layout})[0],
                    r.rows, r.n, descending, order, ws.ptr + order_bytes, stream);
    return order;
}

class ArgsortImpl final : public CudaKernel<Argsort> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout>) override {
        return fits_int(in[0]);
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        return sort_bytes(in[0]);
    }
    // outputs: values, indices.
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorND& src = in[0];
        if (src.layout.is_empty())
            return "cuda:cub";
        Rows r = rows_of(src.layout);
        int32_t* order = sort_into(src, m_param.order == Param::Order::DESCENDING, ws, stream());
        kern::gather_sorted(src.raw_ptr(), to_kern(src.layout.dtype),
                            collapse_jointly({src.layout})[0], order, r.rows, r.n, r.n, false,
                            out[0].raw_ptr(), collapse_jointly({out[0].layout})[0],
                            static_cast<int32_t*>(out[1].raw_ptr()),
                            collapse_jointly({out[1].layout})[0], stream());
        return "cuda:cub";
    }
};

class TopKImpl final : public CudaKernel<TopK> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout>) override {
        return fits_int(in[0]);
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        return sort_bytes(in[0]);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorND& src = in[0];
        if (src.layout.is_empty())
            return "cuda:cub";
        Rows r = rows_of(src.layout);
        int64_t k = std::llabs(static_cast<int64_t>(m_param.k));
        int32_t* order = sort_into(src, m_param.k < 0, ws, stream());
        bool kth = m_param.mode == Param::Mode::KTH_ONLY;
        if (m_param.mode == Param::Mode::VALUE_IDX_NOSORT) {
            size_t order_bytes =
                    (static_cast<size_t>(r.rows * r.n) * sizeof(int32_t) + 255) / 256 * 256;
            kern::sort_prefix_indices(order, r.rows, r.n, k, ws.ptr + order_bytes, stream());
        }
        kern::Strided none;
        kern::gather_sorted(src.raw_ptr(), to_kern(src.layout.dtype),
                            collapse_jointly({src.layout})[0], order, r.rows, r.n, k, kth,
                            out[0].raw_ptr(), collapse_jointly({out[0].layout})[0],
                            kth ? nullptr : static_cast<int32_t*>(out[1].raw_ptr()),
                            kth ? none : collapse_jointly({out[1].layout})[0], stream());
        return "cuda:cub";
    }
};

}  // namespace
NM_REGISTER_CUDA(Argsort, ArgsortImpl);
NM_REGISTER_CUDA(TopK, TopKImpl);
}  // namespace neomeg::dnn::cuda
