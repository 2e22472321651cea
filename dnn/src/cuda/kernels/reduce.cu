// Reduce along one axis. Floats accumulate in double and integers in uint64 (wrapping as the
// narrow type would), as naive does, so both give the same sums. Two shapes of work: one thread
// per output when there are many outputs and the reduced axis is not the innermost one (adjacent
// threads then read adjacent elements), one block per output otherwise (a tree reduction in shared
// memory over a strided loop).
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__device__ __forceinline__ bool is_float_dt(DT dt) {
    return dt == DT::Float32 || dt == DT::Float16 || dt == DT::BFloat16;
}

// The accumulator of one line: double for float data, uint64 bits for integers.
struct Acc {
    double f;
    uint64_t i;
};

__device__ __forceinline__ Acc identity(ReduceMode mode, bool fl) {
    (void)fl;
    if (mode == ReduceMode::PRODUCT)
        return {1.0, 1};
    return {0.0, 0};
}

__device__ __forceinline__ Acc load_acc(const ReduceArgs& a, bool fl, int64_t off) {
    if (fl)
        return {static_cast<double>(load_float(a.src, a.src_dt, off)), 0};
    return {0.0, static_cast<uint64_t>(load_int(a.src, a.src_dt, off))};
}

// Combines two partial results (a leaf is a loaded element, already squared for SUM_SQR).
__device__ __forceinline__ Acc combine(ReduceMode mode, bool fl, Acc x, Acc y) {
    switch (mode) {
        case ReduceMode::PRODUCT:
            return fl ? Acc{x.f * y.f, 0} : Acc{0.0, x.i * y.i};
        case ReduceMode::MIN:
        case ReduceMode::MAX: {
            bool max = mode == ReduceMode::MAX;
            if (fl) {
                if (x.f != x.f)
                    return x;
                if (y.f != y.f)
                    return y;
                return Acc{max ? fmax(x.f, y.f) : fmin(x.f, y.f), 0};
            }
            auto a = static_cast<int64_t>(x.i), b = static_cast<int64_t>(y.i);
            return Acc{0.0, static_cast<uint64_t>(max ? (a > b ? a : b) : (a < b ? a : b))};
        }
        default:
            return fl ? Acc{x.f + y.f, 0} : Acc{0.0, x.i + y.i};
    }
}

__device__ __forceinline__ Acc leaf(ReduceMode mode, bool fl, Acc v) {
    if (mode == ReduceMode::SUM_SQR)
        return fl ? Acc{v.f * v.f, 0} : Acc{0.0, v.i * v.i};
    return v;
}

__device__ __forceinline__ void store_result(const ReduceArgs& a, bool fl, int64_t off, Acc acc) {
    if (a.mode == ReduceMode::MEAN) {
        double sum = fl ? acc.f : static_cast<double>(static_cast<int64_t>(acc.i));
        double mean = a.axis_size ? sum / static_cast<double>(a.axis_size)
                                  : __longlong_as_double(0x7ff8000000000000LL);
        store_float(a.dst, a.dst_dt, off, mean);
    } else if (fl) {
        store_float(a.dst, a.dst_dt, off, acc.f);
    } else {
        store_int(a.dst, a.dst_dt, off, static_cast<int64_t>(acc.i));
    }
}

// MIN/MAX start from the first element (the axis is never empty for them).
__device__ __forceinline__ bool starts_with_first(ReduceMode mode) {
    return mode == ReduceMode::MIN || mode == ReduceMode::MAX;
}

__global__ void reduce_thread_per_output(ReduceArgs a) {
    bool fl = is_float_dt(a.src_dt);
    for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < a.nr_out;
         o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t base = offset_of(a.src_outer, o);
        int64_t r = 0;
        Acc acc = identity(a.mode, fl);
        if (starts_with_first(a.mode)) {
            acc = load_acc(a, fl, base);
            r = 1;
        }
        for (; r < a.axis_size; ++r)
            acc = combine(a.mode, fl, acc,
                          leaf(a.mode, fl, load_acc(a, fl, base + r * a.axis_stride)));
        store_result(a, fl, offset_of(a.dst_layout, o), acc);
    }
}

template <int kThreads>
__global__ void reduce_block_per_output(ReduceArgs a) {
    __shared__ Acc partial[kThreads];
    bool fl = is_float_dt(a.src_dt);
    for (int64_t o = blockIdx.x; o < a.nr_out; o += gridDim.x) {
        int64_t base = offset_of(a.src_outer, o);
        // MIN/MAX: every thread starts from the line's first element, which is its own identity.
        Acc acc = starts_with_first(a.mode) ? load_acc(a, fl, base) : identity(a.mode, fl);
        for (int64_t r = threadIdx.x; r < a.axis_size; r += kThreads)
            acc = combine(a.mode, fl, acc,
                          leaf(a.mode, fl, load_acc(a, fl, base + r * a.axis_stride)));
        partial[threadIdx.x] = acc;
        __syncthreads();
        for (int s = kThreads / 2; s > 0; s >>= 1) {
            if (static_cast<int>(threadIdx.x) < s)
                partial[threadIdx.x] =
                        combine(a.mode, fl, partial[threadIdx.x], partial[threadIdx.x + s]);
            __syncthreads();
        }
        if (threadIdx.x == 0)
            store_result(a, fl, offset_of(a.dst_layout, o), partial[0]);
        __syncthreads();
    }
}

}  // namespace

void reduce(const ReduceArgs& args, cudaStream_t stream) {
    if (args.nr_out == 0)
        return;
    constexpr int kThreads = 256;
    bool innermost = args.axis_stride == 1 || args.axis_stride == -1;
    if (args.nr_out >= 4096 && !innermost) {
        reduce_thread_per_output<<<grid_for(args.nr_out), kBlock, 0, stream>>>(args);
    } else {
        int64_t blocks = args.nr_out < 65535 * 4 ? args.nr_out : 65535 * 4;
        reduce_block_per_output<kThreads>
                <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args);
    }
}

}  // namespace neomeg::dnn::cuda::kern
