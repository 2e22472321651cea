// IndexingOneHot, IndexingSetOneHot and Gather on the CUDA handle (kernels/indexing.cu). An index
// outside its axis is reported as naive reports it, an IndexError naming the operator, which
// needs the flag the kernel sets: these operators wait for their stream before returning.
#include "src/common/indexing.h"
#include "neomeg/dnn/operators/indexing.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

kern::Strided uncollapsed(const TensorLayout& l) {
    kern::Strided s;
    s.ndim = static_cast<int>(l.ndim);
    for (size_t d = 0; d < l.ndim; ++d) {
        s.shape[d] = static_cast<int64_t>(l[d]);
        s.stride[d] = l.stride[d];
    }
    return s;
}

// A device flag per operator object for the kernel's bad-index report.
class BadIndexFlag {
public:
    BadIndexFlag() = default;
    BadIndexFlag(const BadIndexFlag&) = delete;
    BadIndexFlag& operator=(const BadIndexFlag&) = delete;
    ~BadIndexFlag() {
        if (m_flag)
            cudaFree(m_flag);
    }
    int32_t* reset(cudaStream_t stream) {
        if (!m_flag) {
            void* p = nullptr;
            NM_CUDA_CHECK(cudaMalloc(&p, sizeof(int32_t)));
            m_flag = static_cast<int32_t*>(p);
        }
        NM_CUDA_CHECK(cudaMemsetAsync(m_flag, 0, sizeof(int32_t), stream));
        return m_flag;
    }
    bool raised(cudaStream_t stream) const {
        int32_t host = 0;
        NM_CUDA_CHECK(
                cudaMemcpyAsync(&host, m_flag, sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
        NM_CUDA_CHECK(cudaStreamSynchronize(stream));
        return host != 0;
    }

private:
    int32_t* m_flag = nullptr;
};

template <class Op>
class AxisIndexKernel : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

protected:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    void launch(kern::AxisIndexArgs& a, const TensorLayout& indexed, size_t axis) {
        a.axis = static_cast<int>(axis);
        a.axis_size = static_cast<int64_t>(indexed[axis]);
        a.bad = m_flag.reset(this->stream());
        kern::axis_index(a, this->stream());
        NM_CUDA_CHECK(cudaGetLastError());
        NM_REQUIRE(IndexError, !m_flag.raised(this->stream()), "an index lies outside [0, ",
                   indexed[axis], ") along axis ", axis, " of ", indexed.to_string());
    }

private:
    BadIndexFlag m_flag;
};

class IndexingOneHotImpl final : public AxisIndexKernel<IndexingOneHot> {
public:
    using AxisIndexKernel::AxisIndexKernel;

private:
    // inputs: src, index (src's shape without axis); output: dst (axis of size 1).
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        size_t axis = indexing::normalize_axis(m_param.axis, in[0].layout.ndim, *this);
        kern::AxisIndexArgs a{};
        a.indexed_src = in[0].raw_ptr();
        a.indexed = uncollapsed(in[0].layout);
        a.index = static_cast<const int32_t*>(in[1].raw_ptr());
        a.index_layout = uncollapsed(in[1].layout.add_axis(axis));
        a.plain_dst = out[0].raw_ptr();
        a.plain = uncollapsed(out[0].layout);
        a.elem_size = static_cast<int>(in[0].layout.dtype.size());
        a.n = static_cast<int64_t>(out[0].layout.total_nr_elems());
        launch(a, in[0].layout, axis);
        return "cuda";
    }
};

class IndexingSetOneHotImpl final : public AxisIndexKernel<IndexingSetOneHot> {
public:
    using AxisIndexKernel::AxisIndexKernel;

private:
    // inputs: data, index, sub (data's shape with axis of size 1); output: dst (data's shape).
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &data = in[0], &dst = out[0];
        size_t axis = indexing::normalize_axis(m_param.axis, data.layout.ndim, *this);
        if (dst.raw_ptr() != data.raw_ptr() || !dst.layout.eq_layout(data.layout)) {
            auto c = collapse_jointly({data.layout, dst.layout});
            kern::convert(data.raw_ptr(), to_kern(data.layout.dtype), c[0], dst.raw_ptr(),
                          to_kern(dst.layout.dtype), c[1],
                          static_cast<int64_t>(dst.layout.total_nr_elems()), stream());
        }
        kern::AxisIndexArgs a{};
        a.indexed_dst = dst.raw_ptr();
        a.indexed = uncollapsed(dst.layout);
        a.index = static_cast<const int32_t*>(in[1].raw_ptr());
        a.index_layout = uncollapsed(in[1].layout.add_axis(axis));
        a.plain_src = in[2].raw_ptr();
        a.plain = uncollapsed(in[2].layout);
        a.elem_size = static_cast<int>(data.layout.dtype.size());
        a.n = static_cast<int64_t>(in[2].layout.total_nr_elems());
        launch(a, dst.layout, axis);
        return "cuda";
    }
};

class GatherImpl final : public AxisIndexKernel<Gather> {
public:
    using AxisIndexKernel::AxisIndexKernel;

private:
    // inputs: src, index (src's rank); output: dst (index's shape).
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        size_t axis = indexing::normalize_axis(m_param.axis, in[0].layout.ndim, *this);
        kern::AxisIndexArgs a{};
        a.indexed_src = in[0].raw_ptr();
        a.indexed = uncollapsed(in[0].layout);
        a.index = static_cast<const int32_t*>(in[1].raw_ptr());
        a.index_layout = uncollapsed(in[1].layout);
        a.plain_dst = out[0].raw_ptr();
        a.plain = uncollapsed(out[0].layout);
        a.elem_size = static_cast<int>(in[0].layout.dtype.size());
        a.n = static_cast<int64_t>(out[0].layout.total_nr_elems());
        launch(a, in[0].layout, axis);
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(IndexingOneHot, IndexingOneHotImpl);
NM_REGISTER_CUDA(IndexingSetOneHot, IndexingSetOneHotImpl);
NM_REGISTER_CUDA(Gather, GatherImpl);
}  // namespace neomeg::dnn::cuda
