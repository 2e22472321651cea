// Elemwise on the GPU: one kernel per arithmetic (float for float data, int64 for integer and
// bool data, as naive's double and int64), the mode a uniform switch inside, every input read
// through its broadcast strides. The formulas follow dnn/src/naive/elemwise_float.cpp and
// elemwise_int.cpp, in float instead of double.
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

__device__ __forceinline__ float floor_mod(float a, float b) {
    float r = fmodf(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
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
        case EwMode::H_SWISH:
            return a * hsigmoid(a);
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
            return floor_mod(a, b);
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
        case EwMode::ABS_GRAD:
            return fsign(a) * b;
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
            return wrap_mul(isign(a), b);
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

template <class Index, bool kContiguous>
__global__ void elemwise_kernel(ElemwiseArgs args) {
    Index n = static_cast<Index>(args.nr_elems);
    for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<Index>(gridDim.x) * blockDim.x) {
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
        if (args.in_float) {
            if (args.mode == EwMode::TRUE_DIV && args.src_dt[0] != DT::Float32 &&
                args.src_dt[0] != DT::Float16 && args.src_dt[0] != DT::BFloat16) {
                // Integer TRUE_DIV: in double, where every int32 is exact.
                double a = static_cast<double>(load_int(args.src[0], args.src_dt[0], off[0]));
                double b = static_cast<double>(load_int(args.src[1], args.src_dt[1], off[1]));
                store_float(args.dst, args.dst_dt, dst_off, a / b);
                continue;
            }
            float x[kMaxArity] = {};
            for (int k = 0; k < args.arity; ++k)
                x[k] = load_float(args.src[k], args.src_dt[k], off[k]);
            store_float(args.dst, args.dst_dt, dst_off, eval_float(args.mode, x));
        } else {
            int64_t x[kMaxArity] = {};
            for (int k = 0; k < args.arity; ++k)
                x[k] = load_int(args.src[k], args.src_dt[k], off[k]);
            store_int(args.dst, args.dst_dt, dst_off, eval_int(args.mode, x, args.data_bits));
        }
    }
}

bool is_contiguous(const Strided& l) {
    return l.ndim <= 1 && (l.ndim == 0 || l.stride[0] == 1);
}

// Whether every offset of the layout fits an unsigned 32-bit index walk.
bool fits_uint32(const Strided& l, int64_t n) {
    if (n >= (int64_t{1} << 31))
        return false;
    int64_t span = 0;
    for (int d = 0; d < l.ndim; ++d)
        span += (l.shape[d] - 1) * (l.stride[d] < 0 ? -l.stride[d] : l.stride[d]);
    return span < (int64_t{1} << 31);
}

}  // namespace

void elemwise(const ElemwiseArgs& args, cudaStream_t stream) {
    if (args.nr_elems == 0)
        return;
    bool contiguous = is_contiguous(args.dst_layout),
         small = fits_uint32(args.dst_layout, args.nr_elems);
    for (int k = 0; k < args.arity; ++k) {
        contiguous = contiguous && is_contiguous(args.src_layout[k]);
        small = small && fits_uint32(args.src_layout[k], args.nr_elems);
    }
    unsigned grid = grid_for(args.nr_elems);
    if (contiguous && small)
        elemwise_kernel<uint32_t, true><<<grid, kBlock, 0, stream>>>(args);
    else if (contiguous)
        elemwise_kernel<int64_t, true><<<grid, kBlock, 0, stream>>>(args);
    else if (small)
        elemwise_kernel<uint32_t, false><<<grid, kBlock, 0, stream>>>(args);
    else
        elemwise_kernel<int64_t, false><<<grid, kBlock, 0, stream>>>(args);
}

}  // namespace neomeg::dnn::cuda::kern
