// Elemwise on the GPU: one kernel per arithmetic (float for float data, int64 for integer and
// bool data, as naive's double and int64), the mode a uniform switch inside, every input read
// through its broadcast strides; contiguous aligned tensors are read and written in 128-bit
// chunks (elemwise_vector_kernel). The formulas follow dnn/src/naive/elemwise_float.cpp and
// elemwise_int.cpp, in float instead of double.
#include <algorithm>

#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__device__ __forceinline__ float sigmoid(float x) {
    // Split by sign so exp never overflows into inf/inf.
    if (x >= 0)
        return 1.f / (1.f + expf(-x));
    float e = expf(x);
    return e / (1.f + e);
}

__device__ __forceinline__ float softplus(float x) {
    return fmaxf(x, 0.f) + log1pf(expf(-fabsf(x)));
}

__device__ __forceinline__ float normal_cdf(float x) {
    return 0.5f * erfcf(-x * 0.70710678118654752f);
}

__device__ __forceinline__ float normal_pdf(float x) {
    return expf(-0.5f * x * x) * 0.39894228040143268f;
}

__device__ __forceinline__ float fsign(float x) {
    if (x != x)
        return x;
    return static_cast<float>((x > 0) - (x < 0));
}

__device__ __forceinline__ float nan_max(float a, float b) {
    return a != a || b != b ? __int_as_float(0x7fc00000) : fmaxf(a, b);
}

__device__ __forceinline__ float nan_min(float a, float b) {
    return a != a || b != b ? __int_as_float(0x7fc00000) : fminf(a, b);
}

__device__ __forceinline__ float log_sum_exp(float a, float b) {
    float m = nan_max(a, b);
    // Infinite max: inf - inf would give NaN below, while the answer is the max itself.
    if (m != m || isinf(m))
        return m;
    return m + log1pf(expf(-fabsf(a - b)));
}

__device__ __forceinline__ float clampf(float x, float lo, float hi) {
    return fminf(fmaxf(x, lo), hi);
}

__device__ __forceinline__ float hsigmoid(float x) {
    return clampf(x + 3.f, 0.f, 6.f) / 6.f;
}

__device__ float eval_float(EwMode mode, const float* x) {
    float a = x[0], b = x[1], c = x[2];
    switch (mode) {
        case EwMode::RELU:
            return a > 0 ? a : 0.f;
        case EwMode::ABS:
            return fabsf(a);
        case EwMode::NEGATE:
            return -a;
        case EwMode::SQUARE:
            return a * a;
        case EwMode::ROUND:
            return roundf(a);
        case EwMode::FLOOR:
            return floorf(a);
        case EwMode::CEIL:
            return ceilf(a);
        case EwMode::SIGN:
            return fsign(a);
        case EwMode::EXP:
            return expf(a);
        case EwMode::EXPM1:
            return expm1f(a);
        case EwMode::LOG:
            return logf(a);
        case EwMode::LOG1P:
            return log1pf(a);
        case EwMode::SQRT:
            return sqrtf(a);
        case EwMode::RSQRT:
            return 1.f / sqrtf(a);
        case EwMode::SIN:
            return sinf(a);
        case EwMode::COS:
            return cosf(a);
        case EwMode::TAN:
            return tanf(a);
        case EwMode::ASIN:
            return asinf(a);
        case EwMode::ACOS:
            return acosf(a);
        case EwMode::ATAN:
            return atanf(a);
        case EwMode::SINH:
            return sinhf(a);
        case EwMode::COSH:
            return coshf(a);
        case EwMode::TANH:
            return tanhf(a);
        case EwMode::ASINH:
            return asinhf(a);
        case EwMode::ACOSH:
            return acoshf(a);
        case EwMode::ATANH:
            return atanhf(a);
        case EwMode::SIGMOID:
            return sigmoid(a);
        case EwMode::ERF:
            return erff(a);
        case EwMode::ERFINV:
            return erfinvf(a);
        case EwMode::ERFC:
            return erfcf(a);
        case EwMode::ERFCINV:
            return erfcinvf(a);
        case EwMode::GELU:
            return a * normal_cdf(a);
        case EwMode::SILU:
            return a * sigmoid(a);
        case EwMode::H_SWISH:  // MegEngine's order: (x * relu6(x + 3)) * (1 / 6)
            return a * clampf(a + 3.f, 0.f, 6.f) * (1.f / 6.f);
        case EwMode::HSIGMOID:
            return hsigmoid(a);
        case EwMode::RELU6:
            return clampf(a, 0.f, 6.f);
        case EwMode::SOFTPLUS:
            return softplus(a);
        case EwMode::LOGSIGMOID:
            return -softplus(-a);
        case EwMode::NOT:
            return a == 0;
        case EwMode::ISNAN:
            return a != a;
        case EwMode::ISINF:
            return isinf(a) ? 1.f : 0.f;
        case EwMode::ADD:
            return a + b;
        case EwMode::SUB:
            return a - b;
        case EwMode::MUL:
            return a * b;
        case EwMode::TRUE_DIV:
            return a / b;
        case EwMode::FLOOR_DIV:
            return floorf(a / b);
        case EwMode::MOD:
            return fmodf(a, b);  // MegDNN's float MOD: the sign of a
        case EwMode::POW:
            return powf(a, b);
        case EwMode::MAX:
            return nan_max(a, b);
        case EwMode::MIN:
            return nan_min(a, b);
        case EwMode::EQ:
            return a == b;
        case EwMode::NE:
            return a != b;
        case EwMode::LT:
            return a < b;
        case EwMode::LEQ:
            return a <= b;
        case EwMode::AND:
            return a != 0 && b != 0;
        case EwMode::OR:
            return a != 0 || b != 0;
        case EwMode::XOR:
            return (a != 0) != (b != 0);
        case EwMode::ATAN2:
            return atan2f(a, b);
        case EwMode::LOG_SUM_EXP:
            return log_sum_exp(a, b);
        case EwMode::SWITCH_GT0:
            return a > 0 ? b : 0.f;
        case EwMode::PRELU:
            return a < 0 ? a * b : a;
        case EwMode::ABS_GRAD:
            return a > 0 ? b : -b;  // MegDNN's: -dy at 0 and NaN
        case EwMode::SIGMOID_GRAD:
            return b * a * (1 - a);
        case EwMode::TANH_GRAD:
            return b * (1 - a * a);
        case EwMode::GELU_GRAD:
            return b * (normal_cdf(a) + a * normal_pdf(a));
        case EwMode::SILU_GRAD: {
            float s = sigmoid(a);
            return b * s * (1 + a * (1 - s));
        }
        case EwMode::H_SWISH_GRAD:
            return a < -3 ? 0.f : (a > 3 ? b : b * (2 * a + 3) / 6);
        case EwMode::HSIGMOID_GRAD:
            return a <= -3 || a >= 3 ? 0.f : b / 6;
        case EwMode::RELU6_GRAD:
            return a <= 0 || a >= 6 ? 0.f : b;
        case EwMode::SOFTPLUS_GRAD:
            return b * sigmoid(a);
        case EwMode::LOGSIGMOID_GRAD:
            return b * sigmoid(-a);
        case EwMode::CLIP: {
            // NumPy's order: hi wins when lo > hi.
            float t = a < b ? b : a;
            return t > c ? c : t;
        }
        case EwMode::FUSE_MUL_ADD3:
            return a * b + c;
        case EwMode::COND:
            return a != 0 ? b : c;
        case EwMode::FUSE_MUL_ADD4:
            return a * b + c * x[3];
        default:
            // Integer-only modes (SHL, SHR) never reach the float arithmetic.
            return 0.f;
    }
}

__device__ __forceinline__ int64_t wrap_add(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

__device__ __forceinline__ int64_t wrap_mul(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

__device__ __forceinline__ int64_t isign(int64_t a) {
    return (a > 0) - (a < 0);
}

__device__ int64_t eval_int(EwMode mode, const int64_t* x, int bits) {
    int64_t a = x[0], b = x[1], c = x[2];
    switch (mode) {
        case EwMode::RELU:
            return a > 0 ? a : 0;
        case EwMode::ABS:
            return a < 0 ? -a : a;
        case EwMode::NEGATE:
            return -a;
        case EwMode::SQUARE:
            return wrap_mul(a, a);
        case EwMode::ROUND:
        case EwMode::FLOOR:
        case EwMode::CEIL:
            return a;
        case EwMode::SIGN:
            return isign(a);
        case EwMode::NOT:
            return a == 0;
        case EwMode::ISNAN:
        case EwMode::ISINF:
            return 0;
        case EwMode::ADD:
            return wrap_add(a, b);
        case EwMode::SUB:
            return wrap_add(a, -b);
        case EwMode::MUL:
            return wrap_mul(a, b);
        case EwMode::FLOOR_DIV: {
            // Python's //: rounds toward -inf; a zero divisor gives 0 instead of a trap.
            if (b == 0)
                return 0;
            int64_t q = a / b;
            if (a % b != 0 && ((a < 0) != (b < 0)))
                --q;
            return q;
        }
        case EwMode::MOD: {
            if (b == 0)
                return 0;
            int64_t r = a % b;
            if (r != 0 && ((r < 0) != (b < 0)))
                r += b;
            return r;
        }
        case EwMode::MAX:
            return a > b ? a : b;
        case EwMode::MIN:
            return a < b ? a : b;
        case EwMode::EQ:
            return a == b;
        case EwMode::NE:
            return a != b;
        case EwMode::LT:
            return a < b;
        case EwMode::LEQ:
            return a <= b;
        case EwMode::AND:
            return a & b;
        case EwMode::OR:
            return a | b;
        case EwMode::XOR:
            return a ^ b;
        case EwMode::SHL:
            if (b < 0 || b >= bits)
                return 0;
            return static_cast<int64_t>(static_cast<uint64_t>(a) << b);
        case EwMode::SHR:
            if (b < 0 || b >= bits)
                return a < 0 ? -1 : 0;
            return a >> b;
        case EwMode::SWITCH_GT0:
            return a > 0 ? b : 0;
        case EwMode::ABS_GRAD:
            return a > 0 ? b : wrap_mul(-1, b);  // MegDNN's: -dy at 0
        case EwMode::CLIP: {
            int64_t t = a < b ? b : a;
            return t > c ? c : t;
        }
        case EwMode::FUSE_MUL_ADD3:
            return wrap_add(wrap_mul(a, b), c);
        case EwMode::COND:
            return a != 0 ? b : c;
        case EwMode::FUSE_MUL_ADD4:
            return wrap_add(wrap_mul(a, b), wrap_mul(c, x[3]));
        default:
            // Float-only modes never reach the integer arithmetic.
            return 0;
    }
}

// One element: inputs read from src[k] at off[k], the result stored into dst at dst_off. The
// pointers are global memory, or a thread's chunk of registers in the vectorised kernel.
__device__ __forceinline__ void elemwise_one(const ElemwiseArgs& args, const void* const* src,
                                             const int64_t* off, void* dst, int64_t dst_off) {
    if (args.in_float) {
        if (args.mode == EwMode::TRUE_DIV && args.src_dt[0] != DT::Float32 &&
            args.src_dt[0] != DT::Float16 && args.src_dt[0] != DT::BFloat16) {
            // Integer TRUE_DIV: in double, where every int32 is exact.
            double a = static_cast<double>(load_int(src[0], args.src_dt[0], off[0]));
            double b = static_cast<double>(load_int(src[1], args.src_dt[1], off[1]));
            store_float(dst, args.dst_dt, dst_off, a / b);
            return;
        }
        float x[kMaxArity] = {};
#pragma unroll
        for (int k = 0; k < kMaxArity; ++k)
            if (k < args.arity)
                x[k] = load_float(src[k], args.src_dt[k], off[k]);
        store_float(dst, args.dst_dt, dst_off, eval_float(args.mode, x));
    } else {
        int64_t x[kMaxArity] = {};
#pragma unroll
        for (int k = 0; k < kMaxArity; ++k)
            if (k < args.arity)
                x[k] = load_int(src[k], args.src_dt[k], off[k]);
        store_int(dst, args.dst_dt, dst_off, eval_int(args.mode, x, args.data_bits));
    }
}

template <class Index, bool kContiguous>
__global__ void elemwise_kernel(ElemwiseArgs args) {
    grid_stride<Index>(args.nr_elems, [&](Index i) {
        int64_t off[kMaxArity] = {};
        int64_t dst_off = i;
        if constexpr (!kContiguous) {
            for (int k = 0; k < args.arity; ++k)
                off[k] = offset_of(args.src_layout[k], i);
            dst_off = offset_of(args.dst_layout, i);
        } else {
            for (int k = 0; k < args.arity; ++k)
                off[k] = i;
        }
        elemwise_one(args, args.src, off, args.dst, dst_off);
    });
}

__device__ __forceinline__ int size_of(DT dt) {
    switch (dt) {
        case DT::Float32:
        case DT::Int32:
            return 4;
        case DT::Float16:
        case DT::BFloat16:
        case DT::Int16:
            return 2;
        default:
            return 1;
    }
}

// Chunk c of `bytes` bytes (4, 8 or 16: V elements of one dtype) as one aligned load or store.
__device__ __forceinline__ uint4 load_chunk(const void* p, int bytes, int64_t c) {
    uint4 r = {0, 0, 0, 0};
    if (bytes == 16) {
        r = static_cast<const uint4*>(p)[c];
    } else if (bytes == 8) {
        uint2 h = static_cast<const uint2*>(p)[c];
        r.x = h.x;
        r.y = h.y;
    } else {
        r.x = static_cast<const uint32_t*>(p)[c];
    }
    return r;
}

__device__ __forceinline__ void store_chunk(void* p, int bytes, int64_t c, uint4 v) {
    if (bytes == 16)
        static_cast<uint4*>(p)[c] = v;
    else if (bytes == 8)
        static_cast<uint2*>(p)[c] = make_uint2(v.x, v.y);
    else
        static_cast<uint32_t*>(p)[c] = v.x;
}

__device__ __forceinline__ uint32_t word_of(const uint4& c, int w) {
    return w == 0 ? c.x : w == 1 ? c.y : w == 2 ? c.z : c.w;
}

__device__ __forceinline__ void set_word(uint4& c, int w, uint32_t v) {
    if (w == 0)
        c.x = v;
    else if (w == 1)
        c.y = v;
    else if (w == 2)
        c.z = v;
    else
        c.w = v;
}

// The bits of element j of a chunk of `size`-byte elements, in the low bytes of a word: the
// chunk stays in registers (j is a constant once the caller's loop is unrolled).
__device__ __forceinline__ uint32_t element_bits(const uint4& c, int size, int j) {
    int byte = j * size;
    uint32_t w = word_of(c, byte / 4);
    if (size == 4)
        return w;
    return (w >> (8 * (byte % 4))) & (size == 2 ? 0xffffu : 0xffu);
}

__device__ __forceinline__ void set_element_bits(uint4& c, int size, int j, uint32_t bits) {
    int byte = j * size, w = byte / 4, shift = 8 * (byte % 4);
    uint32_t mask = size == 4 ? 0xffffffffu : (size == 2 ? 0xffffu : 0xffu) << shift;
    set_word(c, w, (word_of(c, w) & ~mask) | ((bits << shift) & mask));
}

// One element from the inputs' bits (each in the low bytes of a word) to the output's bits: the
// same arithmetic as elemwise_one, on registers.
__device__ __forceinline__ uint32_t elemwise_bits(const ElemwiseArgs& args,
                                                  const uint32_t (&in)[kMaxArity]) {
    uint32_t out = 0;
    if (args.in_float) {
        if (args.mode == EwMode::TRUE_DIV && args.src_dt[0] != DT::Float32 &&
            args.src_dt[0] != DT::Float16 && args.src_dt[0] != DT::BFloat16) {
            double a = static_cast<double>(load_int(&in[0], args.src_dt[0], 0));
            double b = static_cast<double>(load_int(&in[1], args.src_dt[1], 0));
            store_float(&out, args.dst_dt, 0, a / b);
            return out;
        }
        float x[kMaxArity] = {};
#pragma unroll
        for (int k = 0; k < kMaxArity; ++k)
            if (k < args.arity)
                x[k] = load_float(&in[k], args.src_dt[k], 0);
        store_float(&out, args.dst_dt, 0, eval_float(args.mode, x));
    } else {
        int64_t x[kMaxArity] = {};
#pragma unroll
        for (int k = 0; k < kMaxArity; ++k)
            if (k < args.arity)
                x[k] = load_int(&in[k], args.src_dt[k], 0);
        store_int(&out, args.dst_dt, 0, eval_int(args.mode, x, args.data_bits));
    }
    return out;
}

// Contiguous tensors whose addresses are aligned to their chunks: each thread loads V elements of
// every input in one 128-bit (or narrower, for narrower dtypes) access, computes them in
// registers and stores V results in one access. V is 16 bytes over the widest dtype of the call.
// An input broadcast from one element (`scalar_mask`) is read once per thread. The last n % V
// elements go one per thread. Register budget: float32's V = 4 fits 80 registers without spills,
// so three blocks of 256 threads share an SM; the wider unrolls get 128.
template <int V>
__global__ void __launch_bounds__(kBlock, V == 4 ? 3 : 2)
        elemwise_vector_kernel(ElemwiseArgs args, unsigned scalar_mask) {
    int64_t n = args.nr_elems, chunks = n / V;
    int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    int size[kMaxArity] = {};
    uint32_t scalar[kMaxArity] = {};
#pragma unroll
    for (int k = 0; k < kMaxArity; ++k) {
        if (k >= args.arity)
            continue;
        size[k] = size_of(args.src_dt[k]);
        if (scalar_mask >> k & 1)
            scalar[k] = size[k] == 4   ? *static_cast<const uint32_t*>(args.src[k])
                        : size[k] == 2 ? *static_cast<const uint16_t*>(args.src[k])
                                       : *static_cast<const uint8_t*>(args.src[k]);
    }
    int dst_size = size_of(args.dst_dt);
    for (int64_t c = first; c < chunks; c += step) {
        uint4 chunk[kMaxArity];
#pragma unroll
        for (int k = 0; k < kMaxArity; ++k)
            if (k < args.arity && !(scalar_mask >> k & 1))
                chunk[k] = load_chunk(args.src[k], size[k] * V, c);
        uint4 out = {0, 0, 0, 0};
#pragma unroll
        for (int j = 0; j < V; ++j) {
            uint32_t in[kMaxArity] = {};
#pragma unroll
            for (int k = 0; k < kMaxArity; ++k)
                if (k < args.arity)
                    in[k] = scalar_mask >> k & 1 ? scalar[k] : element_bits(chunk[k], size[k], j);
            set_element_bits(out, dst_size, j, elemwise_bits(args, in));
        }
        store_chunk(args.dst, dst_size * V, c, out);
    }
    int64_t tail = chunks * V + first;
    if (tail < n) {
        int64_t off[kMaxArity];
#pragma unroll
        for (int k = 0; k < kMaxArity; ++k)
            off[k] = scalar_mask >> k & 1 ? 0 : tail;
        elemwise_one(args, args.src, off, args.dst, tail);
    }
}

bool is_contiguous(const Strided& l) {
    return l.ndim <= 1 && (l.ndim == 0 || l.stride[0] == 1);
}

// One element broadcast to every position.
bool is_scalar(const Strided& l) {
    for (int d = 0; d < l.ndim; ++d)
        if (l.stride[d] != 0 && l.shape[d] != 1)
            return false;
    return true;
}

int host_size_of(DT dt) {
    switch (dt) {
        case DT::Float32:
        case DT::Int32:
            return 4;
        case DT::Float16:
        case DT::BFloat16:
        case DT::Int16:
            return 2;
        default:
            return 1;
    }
}

bool aligned(const void* p, int bytes) {
    return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

// The vector width (elements per thread) for the vectorised kernel, or 0 where it does not
// apply: every tensor contiguous (or, for an input, one element broadcast), every address aligned
// to its chunk, and at least one chunk.
int vector_width(const ElemwiseArgs& args, unsigned* scalar_mask) {
    if (!is_contiguous(args.dst_layout))
        return 0;
    int widest = host_size_of(args.dst_dt);
    *scalar_mask = 0;
    for (int k = 0; k < args.arity; ++k) {
        if (is_contiguous(args.src_layout[k]))
            widest = std::max(widest, host_size_of(args.src_dt[k]));
        else if (is_scalar(args.src_layout[k]))
            *scalar_mask |= 1u << k;
        else
            return 0;
    }
    int v = 16 / widest;
    if (args.nr_elems < v || !aligned(args.dst, host_size_of(args.dst_dt) * v))
        return 0;
    for (int k = 0; k < args.arity; ++k)
        if (!(*scalar_mask >> k & 1) && !aligned(args.src[k], host_size_of(args.src_dt[k]) * v))
            return 0;
    return v;
}

}  // namespace

int elemwise(const ElemwiseArgs& args, cudaStream_t stream) {
    if (args.nr_elems == 0)
        return 1;
    unsigned scalar_mask = 0;
    switch (vector_width(args, &scalar_mask)) {
        case 4:
            elemwise_vector_kernel<4>
                    <<<grid_for(args.nr_elems / 4), kBlock, 0, stream>>>(args, scalar_mask);
            return 4;
        case 8:
            elemwise_vector_kernel<8>
                    <<<grid_for(args.nr_elems / 8), kBlock, 0, stream>>>(args, scalar_mask);
            return 8;
        case 16:
            elemwise_vector_kernel<16>
                    <<<grid_for(args.nr_elems / 16), kBlock, 0, stream>>>(args, scalar_mask);
            return 16;
        default:
            break;
    }
    bool contiguous = is_contiguous(args.dst_layout),
         small = fits_uint32(args.dst_layout, args.nr_elems);
    for (int k = 0; k < args.arity; ++k) {
        contiguous = contiguous && is_contiguous(args.src_layout[k]);
        small = small && fits_uint32(args.src_layout[k], args.nr_elems);
    }
    unsigned grid = grid_for(args.nr_elems);
    with_index_type(small, [&](auto index) {
        using Index = decltype(index);
        if (contiguous)
            elemwise_kernel<Index, true><<<grid, kBlock, 0, stream>>>(args);
        else
            elemwise_kernel<Index, false><<<grid, kBlock, 0, stream>>>(args);
    });
    return 1;
}

}  // namespace neomeg::dnn::cuda::kern
