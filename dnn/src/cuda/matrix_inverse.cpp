// MatrixInverse on the CUDA handle (kernels/matrix_inverse.cu): naive's Gauss-Jordan elimination
// on the device, float dtypes, any strides, without cuSOLVER (which would be a new run-time
// library). A singular matrix is naive's ParamError, so the operator waits for the stream to
// learn whether one was found; as naive, the matrices before it are written and none after.
#include <algorithm>

#include "neomeg/dnn/operators/linalg.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

// The batch axes of a (..., n, n) layout (none for a single matrix).
kern::Strided batch_of(const TensorLayout& l) {
    kern::Strided s;
    s.ndim = static_cast<int>(l.ndim) - 2;
    for (size_t d = 0; d + 2 < l.ndim; ++d) {
        s.shape[d] = static_cast<int64_t>(l[d]);
        s.stride[d] = l.stride[d];
    }
    return s;
}

int64_t batch_size(const TensorLayout& l) {
    int64_t b = 1;
    for (size_t d = 0; d + 2 < l.ndim; ++d)
        b *= static_cast<int64_t>(l[d]);
    return b;
}

class MatrixInverseImpl final : public CudaKernel<MatrixInverse> {
public:
    using CudaKernel::CudaKernel;
    MatrixInverseImpl(const MatrixInverseImpl&) = delete;
    MatrixInverseImpl& operator=(const MatrixInverseImpl&) = delete;
    ~MatrixInverseImpl() override {
        if (m_singular)
            cudaFree(m_singular);
    }

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        return kern::inverse_workspace_bytes(static_cast<int64_t>(in[0][in[0].ndim - 1]),
                                             batch_size(in[0]));
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorLayout &sl = in[0].layout, &dl = out[0].layout;
        size_t nd = sl.ndim;
        kern::InverseArgs a{};
        a.n = static_cast<int64_t>(sl[nd - 1]);
        a.batch = batch_size(sl);
        a.dt = to_kern(sl.dtype);
        a.src = in[0].raw_ptr();
        a.src_batch = batch_of(sl);
        a.src_row = sl.stride[nd - 2];
        a.src_col = sl.stride[nd - 1];
        a.dst = out[0].raw_ptr();
        a.dst_batch = batch_of(dl);
        a.dst_row = dl.stride[nd - 2];
        a.dst_col = dl.stride[nd - 1];
        if (!m_singular) {
            void* p = nullptr;
            NM_CUDA_CHECK(cudaMalloc(&p, sizeof(unsigned long long)));
            m_singular = static_cast<unsigned long long*>(p);
        }
        kern::inverse_compute(a, ws.ptr, m_singular, stream());
        NM_CUDA_CHECK(cudaGetLastError());
        unsigned long long singular = 0;
        NM_CUDA_CHECK(cudaMemcpyAsync(&singular, m_singular, sizeof(singular),
                                      cudaMemcpyDeviceToHost, stream()));
        NM_CUDA_CHECK(cudaStreamSynchronize(stream()));
        bool ok = singular == ~0ull;
        auto count = ok ? a.batch : static_cast<int64_t>(singular);
        kern::inverse_store(a, ws.ptr, count, stream());
        NM_REQUIRE(ParamError, ok, "matrix ", count, " of the batch (flattened) is singular, src ",
                   sl.to_string());
        return "cuda";
    }

    unsigned long long* m_singular = nullptr;
};

}  // namespace
NM_REGISTER_CUDA(MatrixInverse, MatrixInverseImpl);
}  // namespace neomeg::dnn::cuda
