// Gather-style reads and one-hot writes along an axis (see AxisIndexArgs). Elements move as raw
// bytes of their size; a bad index is reported through a flag instead of a fault.
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__global__ void axis_index_kernel(AxisIndexArgs a) {
    for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < a.n;
         j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t coord[kMaxNdim];
        int64_t rest = j, index_off = 0, plain_off = 0;
        for (int d = a.index_layout.ndim - 1; d >= 0; --d) {
            coord[d] = rest % a.index_layout.shape[d];
            rest /= a.index_layout.shape[d];
            index_off += coord[d] * a.index_layout.stride[d];
            plain_off += coord[d] * a.plain.stride[d];
        }
        int64_t i = a.index[index_off];
        if (i < 0 || i >= a.axis_size) {
            *a.bad = 1;
            continue;
        }
        int64_t indexed_off = 0;
        for (int d = 0; d < a.indexed.ndim; ++d)
            indexed_off += (d == a.axis ? i : coord[d]) * a.indexed.stride[d];
        if (a.indexed_src)
            move_element(a.indexed_src, indexed_off, a.plain_dst, plain_off, a.elem_size);
        else
            move_element(a.plain_src, plain_off, a.indexed_dst, indexed_off, a.elem_size);
    }
}

}  // namespace

void axis_index(const AxisIndexArgs& args, cudaStream_t stream) {
    if (args.n)
        axis_index_kernel<<<grid_for(args.n), kBlock, 0, stream>>>(args);
}

}  // namespace neomeg::dnn::cuda::kern
