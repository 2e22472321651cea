// Argmax/Argmin and Cumsum along one axis: one thread per line when there are many lines, one
// block per line otherwise (a tree of (value, index) pairs, and CUB's block scan with a running
// carry across chunks).
#include <cub/block/block_scan.cuh>
#include <type_traits>

#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__device__ __forceinline__ bool is_float_dt(DT dt) {
    return dt == DT::Float32 || dt == DT::Float16 || dt == DT::BFloat16;
}

// Every dtype here is exact in double (integers are at most 32 bits wide).
__device__ __forceinline__ double load_double(const void* p, DT dt, int64_t off) {
    return is_float_dt(dt) ? static_cast<double>(load_float(p, dt, off))
                           : static_cast<double>(load_int(p, dt, off));
}

struct Best {
    double v;
    int64_t i;
};

// Whether x beats y: a NaN beats any number (the first NaN wins), then the extreme value, then
// the smaller index.
__device__ __forceinline__ bool beats(Best x, Best y, bool is_max) {
    bool xn = x.v != x.v, yn = y.v != y.v;
    if (xn || yn)
        return xn && (!yn || x.i < y.i);
    if (x.v != y.v)
        return is_max ? x.v > y.v : x.v < y.v;
    return x.i < y.i;
}

__global__ void arg_thread_per_line(ReduceArgs a, bool is_max) {
    for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < a.nr_out;
         o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t base = offset_of(a.src_outer, o);
        Best best{load_double(a.src, a.src_dt, base), 0};
        for (int64_t r = 1; r < a.axis_size; ++r) {
            Best c{load_double(a.src, a.src_dt, base + r * a.axis_stride), r};
            if (beats(c, best, is_max))
                best = c;
        }
        static_cast<int32_t*>(a.dst)[offset_of(a.dst_layout, o)] = static_cast<int32_t>(best.i);
    }
}

template <int kThreads>
__global__ void arg_block_per_line(ReduceArgs a, bool is_max) {
    __shared__ Best partial[kThreads];
    for (int64_t o = blockIdx.x; o < a.nr_out; o += gridDim.x) {
        int64_t base = offset_of(a.src_outer, o);
        // Element 0 seeds every thread: it loses to any later element that beats it.
        Best best{load_double(a.src, a.src_dt, base), 0};
        for (int64_t r = threadIdx.x; r < a.axis_size; r += kThreads) {
            Best c{load_double(a.src, a.src_dt, base + r * a.axis_stride), r};
            if (beats(c, best, is_max))
                best = c;
        }
        partial[threadIdx.x] = best;
        __syncthreads();
        for (int s = kThreads / 2; s > 0; s >>= 1) {
            if (static_cast<int>(threadIdx.x) < s &&
                beats(partial[threadIdx.x + s], partial[threadIdx.x], is_max))
                partial[threadIdx.x] = partial[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            static_cast<int32_t*>(a.dst)[offset_of(a.dst_layout, o)] =
                    static_cast<int32_t>(partial[0].i);
        __syncthreads();
    }
}

// Position k of the scan order reads element r(k) of the line.
__device__ __forceinline__ int64_t line_pos(int64_t k, int64_t n, bool reverse) {
    return reverse ? n - 1 - k : k;
}

template <class Acc>
__device__ __forceinline__ Acc load_acc(const ReduceArgs& a, int64_t off) {
    if constexpr (std::is_floating_point_v<Acc>)
        return static_cast<double>(load_float(a.src, a.src_dt, off));
    else
        return static_cast<uint64_t>(load_int(a.src, a.src_dt, off));
}

template <class Acc>
__device__ __forceinline__ void store_acc(const ReduceArgs& a, int64_t off, Acc v) {
    if constexpr (std::is_floating_point_v<Acc>)
        store_float(a.dst, a.dst_dt, off, static_cast<float>(v));
    else
        store_int(a.dst, a.dst_dt, off, static_cast<int64_t>(v));
}

template <class Acc>
__global__ void cumsum_thread_per_line(ReduceArgs a, int64_t dst_axis_stride, bool exclusive,
                                       bool reverse) {
    for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < a.nr_out;
         o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t sb = offset_of(a.src_outer, o), db = offset_of(a.dst_layout, o);
        Acc acc = 0;
        for (int64_t k = 0; k < a.axis_size; ++k) {
            int64_t r = line_pos(k, a.axis_size, reverse);
            Acc v = load_acc<Acc>(a, sb + r * a.axis_stride);
            if (!exclusive)
                acc += v;
            store_acc<Acc>(a, db + r * dst_axis_stride, acc);
            if (exclusive)
                acc += v;
        }
    }
}

template <class Acc, int kThreads>
__global__ void cumsum_block_per_line(ReduceArgs a, int64_t dst_axis_stride, bool exclusive,
                                      bool reverse) {
    using Scan = cub::BlockScan<Acc, kThreads>;
    __shared__ typename Scan::TempStorage temp;
    for (int64_t o = blockIdx.x; o < a.nr_out; o += gridDim.x) {
        int64_t sb = offset_of(a.src_outer, o), db = offset_of(a.dst_layout, o);
        Acc carry = 0;
        for (int64_t chunk = 0; chunk < a.axis_size; chunk += kThreads) {
            int64_t k = chunk + threadIdx.x;
            int64_t r = line_pos(k, a.axis_size, reverse);
            Acc v = k < a.axis_size ? load_acc<Acc>(a, sb + r * a.axis_stride) : Acc(0);
            Acc inclusive, total;
            Scan(temp).InclusiveSum(v, inclusive, total);
            if (k < a.axis_size)
                store_acc<Acc>(a, db + r * dst_axis_stride,
                               carry + (exclusive ? inclusive - v : inclusive));
            carry += total;
            __syncthreads();
        }
    }
}

}  // namespace

void arg_reduce(const ReduceArgs& args, bool is_max, cudaStream_t stream) {
    if (args.nr_out == 0 || args.axis_size == 0)
        return;
    constexpr int kThreads = 256;
    bool innermost = args.axis_stride == 1 || args.axis_stride == -1;
    if (args.nr_out >= 4096 && !innermost) {
        arg_thread_per_line<<<grid_for(args.nr_out), kBlock, 0, stream>>>(args, is_max);
    } else {
        int64_t blocks = args.nr_out < 65535 * 4 ? args.nr_out : 65535 * 4;
        arg_block_per_line<kThreads>
                <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args, is_max);
    }
}

void cumsum(const ReduceArgs& args, int64_t dst_axis_stride, bool exclusive, bool reverse,
            cudaStream_t stream) {
    if (args.nr_out == 0 || args.axis_size == 0)
        return;
    constexpr int kThreads = 256;
    bool fl =
            args.src_dt == DT::Float32 || args.src_dt == DT::Float16 || args.src_dt == DT::BFloat16;
    bool innermost = args.axis_stride == 1 || args.axis_stride == -1;
    int64_t blocks = args.nr_out < 65535 * 4 ? args.nr_out : 65535 * 4;
    if (args.nr_out >= 4096 && !innermost) {
        if (fl)
            cumsum_thread_per_line<double><<<grid_for(args.nr_out), kBlock, 0, stream>>>(
                    args, dst_axis_stride, exclusive, reverse);
        else
            cumsum_thread_per_line<uint64_t><<<grid_for(args.nr_out), kBlock, 0, stream>>>(
                    args, dst_axis_stride, exclusive, reverse);
    } else if (fl) {
        cumsum_block_per_line<double, kThreads>
                <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args, dst_axis_stride,
                                                                         exclusive, reverse);
    } else {
        cumsum_block_per_line<uint64_t, kThreads>
                <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args, dst_axis_stride,
                                                                         exclusive, reverse);
    }
}

}  // namespace neomeg::dnn::cuda::kern
