// NMSKeep: one block per batch item walks the boxes in order, as naive does; for each candidate
// the block's threads test it against the boxes kept so far (read back through the indices
// written), and one barrier tells all of them whether any overlapped. The overlap test is naive's
// (src/common/nms_keep.h) step for step, with rounded intrinsics so that nvcc fuses nothing into
// an FMA, and std::min's and std::max's comparisons, so that the indices match naive exactly.
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

struct Box4 {
    float x1, y1, x2, y2;
};

// std::max and std::min, whose result for a NaN operand differs from fmaxf's and fminf's.
__device__ __forceinline__ float max_of(float a, float b) {
    return a < b ? b : a;
}
__device__ __forceinline__ float min_of(float a, float b) {
    return b < a ? b : a;
}

__device__ __forceinline__ float area(const Box4& b) {
    return __fmul_rn(__fsub_rn(b.x2, b.x1), __fsub_rn(b.y2, b.y1));
}

__device__ __forceinline__ bool overlaps(const Box4& a, float area_a, const Box4& b, float area_b,
                                         float thresh) {
    float w = max_of(__fsub_rn(min_of(a.x2, b.x2), max_of(a.x1, b.x1)), 0.f);
    float h = max_of(__fsub_rn(min_of(a.y2, b.y2), max_of(a.y1, b.y1)), 0.f);
    float inter = __fmul_rn(w, h);
    float uni = __fsub_rn(__fadd_rn(area_a, area_b), inter);
    return inter > __fmul_rn(uni, thresh);
}

__global__ void nms_keep_kernel(NmsKeepArgs a) {
    const int64_t b = blockIdx.x;
    const float* src = a.boxes + b * a.box_strides[0];
    const int64_t s1 = a.box_strides[1], s2 = a.box_strides[2], o1 = a.idx_strides[1];
    int32_t* out = a.indices + b * a.idx_strides[0];
    auto load = [&](int64_t i) {
        const float* p = src + i * s1;
        return Box4{p[0], p[s2], p[2 * s2], p[3 * s2]};
    };
    int64_t kept = 0;
    for (int64_t i = 0; i < a.n && kept < a.cap; ++i) {
        Box4 c = load(i);
        float ca = area(c);
        int hit = 0;
        for (int64_t j = threadIdx.x; j < kept && !hit; j += blockDim.x) {
            Box4 k = load(out[j * o1]);
            hit = overlaps(c, ca, k, area(k), a.thresh) ? 1 : 0;
        }
        // The same answer in every thread, so all of them take the branch and its barrier.
        if (!__syncthreads_or(hit)) {
            if (threadIdx.x == 0)
                out[kept * o1] = static_cast<int32_t>(i);
            ++kept;
            // The new index is read by every thread for the next candidate.
            __syncthreads();
        }
    }
    int32_t last = kept > 0 ? out[(kept - 1) * o1] : 0;
    for (int64_t k = kept + threadIdx.x; k < a.cap; k += blockDim.x)
        out[k * o1] = last;
    if (threadIdx.x == 0)
        a.count[b * a.count_stride] = static_cast<int32_t>(kept);
}

}  // namespace

void nms_keep(const NmsKeepArgs& args, cudaStream_t stream) {
    if (args.batch > 0)
        nms_keep_kernel<<<static_cast<unsigned>(args.batch), kBlock, 0, stream>>>(args);
}

}  // namespace neomeg::dnn::cuda::kern
