// What the .cu launchers take: plain structs that both g++ (the operator classes) and nvcc (the
// kernels) compile. The .cu files include no NeoMeg header beyond these, cuda_check.h and the
// plain arithmetic headers of common/ (resize_taps.h), so nvcc never parses Eigen and stays fast.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/common/host_device.h"
#include "src/common/resize_taps.h"

namespace neomeg::dnn::cuda::kern {

// The same order as neomeg::dnn::DTypeEnum (checked in layout_util.cpp).
enum class DT : uint8_t { Float32, Float16, BFloat16, Int8, Uint8, Int16, Int32, Bool };

inline constexpr int kMaxNdim = 7;

// A strided tensor's shape and element strides; after collapse_jointly, dims are merged where
// every tensor of a call is contiguous across them.
struct Strided {
    int ndim = 0;
    int64_t shape[kMaxNdim] = {};
    int64_t stride[kMaxNdim] = {};
};

// The Elemwise modes in param::Elemwise's order (checked in elemwise.cpp).
// clang-format off
#define NM_CUDA_ELEMWISE_MODES(cb)                                                               \
    cb(RELU) cb(ABS) cb(NEGATE) cb(SQUARE) cb(ROUND) cb(FLOOR) cb(CEIL) cb(SIGN) cb(EXP)         \
    cb(EXPM1) cb(LOG) cb(LOG1P) cb(SQRT) cb(RSQRT) cb(SIN) cb(COS) cb(TAN) cb(ASIN) cb(ACOS)     \
    cb(ATAN) cb(SINH) cb(COSH) cb(TANH) cb(ASINH) cb(ACOSH) cb(ATANH) cb(SIGMOID) cb(ERF)       \
    cb(ERFINV) cb(ERFC) cb(ERFCINV) cb(GELU) cb(SILU) cb(H_SWISH) cb(HSIGMOID) cb(RELU6)        \
    cb(SOFTPLUS) cb(LOGSIGMOID) cb(NOT) cb(ISNAN) cb(ISINF) cb(ADD) cb(SUB) cb(MUL)             \
    cb(FLOOR_DIV) cb(MOD) cb(MAX) cb(MIN) cb(SWITCH_GT0) cb(ABS_GRAD) cb(TRUE_DIV) cb(POW)      \
    cb(ATAN2) cb(LOG_SUM_EXP) cb(SIGMOID_GRAD) cb(TANH_GRAD) cb(GELU_GRAD) cb(SILU_GRAD)        \
    cb(H_SWISH_GRAD) cb(HSIGMOID_GRAD) cb(RELU6_GRAD) cb(SOFTPLUS_GRAD) cb(LOGSIGMOID_GRAD)     \
    cb(EQ) cb(NE) cb(LT) cb(LEQ) cb(AND) cb(OR) cb(XOR) cb(SHL) cb(SHR) cb(CLIP)                \
    cb(FUSE_MUL_ADD3) cb(COND) cb(FUSE_MUL_ADD4) cb(PRELU)
// clang-format on

enum class EwMode : uint32_t {
#define NM_CB(m) m,
    NM_CUDA_ELEMWISE_MODES(NM_CB)
#undef NM_CB
};

inline constexpr int kMaxArity = 4;

// One Elemwise call: every src already broadcast to dst's shape (stride 0 on broadcast axes) and
// all of them collapsed together with dst, so they share dst's ndim and shape.
struct ElemwiseArgs {
    EwMode mode;
    int arity;
    // Float data (or TRUE_DIV on integers) computes in float, integer and bool data in int64.
    bool in_float;
    // Bits of the data dtype, for SHL/SHR.
    int data_bits;
    const void* src[kMaxArity];
    DT src_dt[kMaxArity];
    Strided src_layout[kMaxArity];
    void* dst;
    DT dst_dt;
    Strided dst_layout;
    int64_t nr_elems;
};
// Returns the elements each thread loaded at once: 4, 8 or 16 where every tensor is contiguous
// (or an input one broadcast element) and aligned, so that each access is 128 bits wide for the
// widest dtype of the call; 1 where the element-wise kernel ran.
int elemwise(const ElemwiseArgs& args, cudaStream_t stream);

// dst[i] = src[i] converted from src_dt to dst_dt through both layouts (same shape, collapsed
// together): TypeCvt, and Relayout when the dtypes agree.
void convert(const void* src, DT src_dt, const Strided& src_layout, void* dst, DT dst_dt,
             const Strided& dst_layout, int64_t nr_elems, cudaStream_t stream);

// Writes the element whose bytes are the low `elem_size` bytes of `bits` (the host converts the
// value, so that the rounding is exactly naive's) into every element.
void fill_bytes(void* dst, int elem_size, const Strided& layout, int64_t nr_elems, uint32_t bits,
                cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// Reduce's modes in param::Reduce's order (checked in reduce.cpp).
enum class ReduceMode : uint32_t { SUM, SUM_SQR, PRODUCT, MIN, MAX, MEAN };

// One Reduce call: output element i reduces axis_size elements of src starting at
// offset_of(src_outer, i), axis_stride apart, into dst at offset_of(dst_layout, i). src_outer and
// dst_layout are src's and dst's layouts without the reduced axis, collapsed together.
struct ReduceArgs {
    ReduceMode mode;
    const void* src;
    DT src_dt;
    Strided src_outer;
    int64_t axis_size;
    int64_t axis_stride;
    void* dst;
    DT dst_dt;
    Strided dst_layout;
    int64_t nr_out;
};
void reduce(const ReduceArgs& args, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// The random operators over Philox4x32-10 (dnn/src/common/philox.h): element i is the i-th element
// of dst in logical row-major order, so the GPU draws what the CPU draws for a seed.
// Uniform values of `bits` random bits (the dtype's significand) in [0, 1).
void uniform(void* dst, DT dt, const Strided& layout, int64_t n, uint64_t seed, int bits,
             cudaStream_t stream);
// mean + std * the standard normal stream, in double, rounded once into dt.
void gaussian(void* dst, DT dt, const Strided& layout, int64_t n, uint64_t seed, double mean,
              double std, cudaStream_t stream);
// dst = keep ? src * scale : 0 and mask = keep, keep iff uniform(seed, i) >= drop_prob; the three
// layouts collapsed together.
void dropout_forward(const void* src, DT src_dt, const Strided& src_layout, void* dst, DT dst_dt,
                     const Strided& dst_layout, void* mask, const Strided& mask_layout, int64_t n,
                     uint64_t seed, float drop_prob, double scale, cudaStream_t stream);
// grad = mask ? diff * scale : 0.
void dropout_backward(const void* diff, DT diff_dt, const Strided& diff_layout, const void* mask,
                      const Strided& mask_layout, void* grad, DT grad_dt,
                      const Strided& grad_layout, int64_t n, double scale, cudaStream_t stream);
// Sets *flag to 1 when an element of src is NaN or infinite (the caller zeroes it first).
void find_non_finite(const void* src, DT dt, const Strided& layout, int64_t n, int32_t* flag,
                     cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// Padding's border modes in param::Padding's order (checked in padding.cpp).
enum class PadMode : uint32_t { CONSTANT, REFLECT, REPLICATE };

// One Padding call: src and dst uncollapsed (the border rule is per dim), front[d] elements added
// before dim d.
struct PaddingArgs {
    PadMode mode;
    double value;
    const void* src;
    Strided src_layout;
    void* dst;
    Strided dst_layout;
    DT dt;
    int64_t front[kMaxNdim];
};
// dst[j] = src[source(j)], or value on CONSTANT's border.
void padding_forward(const PaddingArgs& args, int64_t nr_dst, cudaStream_t stream);
// acc (src-shaped, dense, zeroed here) += diff[j] at source(j) for every diff element j (args.src
// is diff, args.dst_layout diff's layout, args.src_layout grad's); then grad = acc, rounded once.
void padding_backward(const PaddingArgs& args, int64_t nr_diff, double* acc, void* grad,
                      const Strided& grad_layout, int64_t nr_grad, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// Argmax/Argmin along one axis, laid out as ReduceArgs (mode unused, dst int32): the first
// extreme element wins, and a NaN counts as the extreme (NumPy).
void arg_reduce(const ReduceArgs& args, bool is_max, cudaStream_t stream);

// Cumsum along one axis, laid out as ReduceArgs with dst_layout the dst strides of the outer
// axes and dst_axis_stride dst's along the scanned axis. Floats accumulate in double, integers
// wrap in uint64 (as naive).
void cumsum(const ReduceArgs& args, int64_t dst_axis_stride, bool exclusive, bool reverse,
            cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// An indexed read or write along one axis (Gather, IndexingOneHot, IndexingSetOneHot): the walk
// runs over `walk`'s shape; at walk position c, i = index[c] (int32) and the indexed tensor is
// addressed at c with coordinate `axis` replaced by i, the plain one at c. Layouts uncollapsed
// (ndim = the walk's rank). An i outside [0, axis_size) is skipped and sets *bad to 1.
struct AxisIndexArgs {
    const void* indexed_src;  // gather: read from here; scatter: nullptr
    void* indexed_dst;        // scatter: written here; gather: nullptr
    Strided indexed;
    const int32_t* index;
    Strided index_layout;
    const void* plain_src;  // scatter: read from here
    void* plain_dst;        // gather: written here
    Strided plain;
    int axis;
    int64_t axis_size;
    int elem_size;
    int64_t n;
    int32_t* bad;
};
void axis_index(const AxisIndexArgs& args, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// dst[i] = start + i * step in double for a 1-D dst of n elements (stride `stride`); with
// `last_is` set, the last element is exactly `last` (Linspace's endpoint).
void linear_fill(void* dst, DT dt, int64_t stride, int64_t n, double start, double step,
                 bool last_is, double last, cudaStream_t stream);
// dst[r][c] = (c - r == k) over a 2-D layout.
void eye(void* dst, DT dt, const Strided& layout, int64_t k, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// Pooling over (N, C, D, H, W) with the spatial dims a lower rank lacks of size 1 and stride 0
// (dnn/src/common/pooling.h's PoolGeometry), fixed or adaptive windows.
enum class PoolReduce : uint32_t { Max, Average, AverageExcludePadding };
struct PoolArgs {
    PoolReduce reduce;
    bool adaptive;
    int64_t n, c, in[3], out[3], window[3], stride[3], pad[3];
    DT dt;
    const void* src;
    int64_t src_strides[5];
};
// dst (strides dst_strides) = the pooled src.
void pool_forward(const PoolArgs& a, void* dst, const int64_t* dst_strides, cudaStream_t stream);
// grad (strides grad_strides) = the gradient from diff (strides diff_strides), summed in `acc`,
// a double per src element.
void pool_backward(const PoolArgs& a, const void* diff, const int64_t* diff_strides, double* acc,
                   void* grad, const int64_t* grad_strides, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// A stable sort of each row of `rows` x `n` (src read in row-major order through src_layout,
// collapsed): NaN largest, -0 equal to +0, ascending or descending (descending keeps equal
// elements in src order too). The sorted positions go to `order` (rows x n int32, dense).
// `workspace` holds sort_workspace_bytes(rows, n).
size_t sort_workspace_bytes(int64_t rows, int64_t n);
void sort_rows(const void* src, DT dt, const Strided& src_layout, int64_t rows, int64_t n,
               bool descending, int32_t* order, void* workspace, cudaStream_t stream);
// Sorts the first k entries of every row of `order` (rows x n) ascending, in place: TopK's
// unsorted mode, which keeps src's order as naive does. Uses the same workspace.
void sort_prefix_indices(int32_t* order, int64_t rows, int64_t n, int64_t k, void* workspace,
                         cudaStream_t stream);
// values[r][j] = src at row r, position order[r][j]; indices[r][j] = that position, for j < k
// (values and indices through their collapsed (rows x k) layouts; either may be null).
// With kth_only, values is rows x 1 and takes position k - 1.
void gather_sorted(const void* src, DT dt, const Strided& src_layout, const int32_t* order,
                   int64_t rows, int64_t n, int64_t k, bool kth_only, void* values,
                   const Strided& values_layout, int32_t* indices, const Strided& indices_layout,
                   cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// LayerNorm over rows of `len` elements (the trailing axes), every layout collapsed on its own
// and read in logical row-major order: src/dst/diff/grad as rows x len, mean/rstd as rows,
// weight/bias/dweight/dbias as len. Moments and sums in double, as naive.
struct LayerNormArgs {
    int64_t rows, len;
    double eps;
    const void* src;
    DT src_dt;
    Strided src_layout;
    const void* weight;  // null unless affine
    DT weight_dt;
    Strided weight_layout;
    const void* bias;
    Strided bias_layout;
    void* mean;  // forward: written; backward: read
    DT stat_dt;
    Strided mean_layout;
    void* rstd;
    Strided rstd_layout;
    // GroupNorm: rows are the (sample, group) runs of (C / groups) * spatial elements, and element
    // k of row r takes weight and bias of channel (r % groups) * (C / groups) + k / spatial. 0 for
    // LayerNorm, whose element k takes weight k.
    int64_t groups;
    int64_t spatial;
};
void layer_norm_forward(const LayerNormArgs& a, void* dst, DT dst_dt, const Strided& dst_layout,
                        cudaStream_t stream);
void layer_norm_backward(const LayerNormArgs& a, const void* diff, DT diff_dt,
                         const Strided& diff_layout, void* grad, const Strided& grad_layout,
                         void* dweight, const Strided& dweight_layout, void* dbias,
                         const Strided& dbias_layout, cudaStream_t stream);
// GroupNorm's dweight and dbias ({channels}): sums over samples and spatial positions of each
// channel, one block per channel. layer_norm_backward with null dweight gives its grad.
void group_norm_affine_grad(const LayerNormArgs& a, int64_t channels, const void* diff, DT diff_dt,
                            const Strided& diff_layout, void* dweight,
                            const Strided& dweight_layout, void* dbias, const Strided& dbias_layout,
                            cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// PermutationRNG: 0..n-1 sorted by a 64-bit Philox key per index (ties by index), as naive, into
// dst (int32 or float32) through its collapsed layout. `workspace` holds
// permutation_workspace_bytes(n).
size_t permutation_workspace_bytes(int64_t n);
void permutation(void* dst, DT dt, const Strided& layout, int64_t n, uint64_t seed, void* workspace,
                 cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// CondTake and NonZero: the taken elements of an n-element walk in row-major order, compacted.
// `workspace` holds select_workspace_bytes(n); *count receives the number taken (0 when n is 0)
// and nothing is written past it.
size_t select_workspace_bytes(int64_t n);
// values[k * values_stride] = data at the k-th position where mask is true, indices[k *
// indices_stride] = that position; data and mask collapsed together (mask is bool).
void cond_take(const void* data, int elem_size, const Strided& data_layout, const void* mask,
               const Strided& mask_layout, int64_t n, void* values, int64_t values_stride,
               int32_t* indices, int64_t indices_stride, int32_t* count, void* workspace,
               cudaStream_t stream);
// coords[d * coord_strides[0] + k * coord_strides[1]] = coordinate d (of `shape`, ndim axes) of
// the k-th element of src (collapsed layout) that is nonzero in its compute type.
void nonzero(const void* src, DT dt, const Strided& src_layout, const int64_t* shape, int ndim,
             int64_t n, int32_t* coords, const int64_t* coord_strides, int32_t* count,
             void* workspace, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// One Resize (forward: src is the image, dst the result) or ResizeBackward (src is grad's
// geometry, dst diff's) call over (N, C, H, W) strided tensors.
struct ResizeArgs {
    resize::Mode mode;  // the taps: common/resize_taps.h
    bool align_corners;
    int64_t n, c, in_h, in_w, out_h, out_w;
    DT dt;
    int64_t src_strides[4], dst_strides[4];
};
// dst = the taps of each dst pixel summed in double, rounded once.
void resize_forward(const ResizeArgs& a, const void* src, void* dst, cudaStream_t stream);
// acc (grad's elements, dense, zeroed here) += tap weight * diff for every diff element and tap
// (double atomics), then grad = acc rounded once.
void resize_backward(const ResizeArgs& a, const void* diff, double* acc, void* grad,
                     cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// MatrixInverse: Gauss-Jordan elimination with partial pivoting in double, naive's operations in
// naive's order (products and differences rounded apart, never fused), one block per n x n matrix
// of the batch. Matrix b's origin is offset_of(batch layout, b); its (r, c) element is r * row +
// c * col from there.
struct InverseArgs {
    int64_t n, batch;
    DT dt;
    const void* src;
    Strided src_batch;
    int64_t src_row, src_col;
    void* dst;
    Strided dst_batch;
    int64_t dst_row, dst_col;
};
// Bytes of inverse_workspace: the reduced matrices and their inverses in double.
size_t inverse_workspace_bytes(int64_t n, int64_t batch);
// Inverts every matrix into the workspace (a matrix holding NaN or inf gets all NaN) and sets
// *singular to the lowest index of a matrix with a zero pivot (~0 when none).
void inverse_compute(const InverseArgs& a, void* workspace, unsigned long long* singular,
                     cudaStream_t stream);
// Stores the inverses of matrices [0, count) into dst, each rounded through float32 as naive.
void inverse_store(const InverseArgs& a, const void* workspace, int64_t count, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// SVD through cuSOLVER in double (svd.cpp): svd_gather packs each matrix of src (any float dtype
// and strides; matrix b's origin is offset_of(src_batch, b), its (r, c) r * src_row + c * src_col
// from there) column-major into `a` (m * n doubles a matrix), setting bad[b] (zeroed here first)
// for a matrix holding NaN or inf (and a zero for each such element). svd_store writes S, U and Vh
// through their layouts (each a batch layout and the matrix axes' strides), NaN for matrices with
// bad[b] or info[b] != 0 (svd_layout.h).
struct SvdArgs {
    int64_t m, n, k, batch;
    int64_t ucols, vrows, ws_ucols, ws_vcols;
    bool uv;
    DT dt;
    const void* src;
    Strided src_batch;
    int64_t src_row, src_col;
    void *s, *u, *vh;
    Strided s_batch, u_batch, vh_batch;
    int64_t s_step, u_row, u_col, vh_row, vh_col;
};
void svd_gather(const SvdArgs& a, double* packed, int* bad, cudaStream_t stream);
void svd_store(const SvdArgs& a, const double* s, const double* u, const double* v, const int* info,
               const int* bad, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// WarpPerspective's border modes in param::WarpPerspective's order (checked in
// warp_perspective.cpp).
enum class WarpBorder : uint32_t { REPLICATE, REFLECT, REFLECT_101, WRAP, CONSTANT };

// One WarpPerspective call or one of its gradients' over NCHW strided tensors. The image side is
// src (forward, BackwardMat) or grad (BackwardData), (src_n, c, in_h, in_w); the warped side is
// dst or diff, (n, c, out_h, out_w). mat is (n, 3, 3) float32, mat_idx (n,) int32 in [0, src_n).
struct WarpArgs {
    WarpBorder bmode;
    double border_val;
    int64_t n, c, src_n, in_h, in_w, out_h, out_w;
    DT dt;
    int64_t image_strides[4], warped_strides[4], mat_strides[3], idx_stride;
};
// dst = the four taps of each output pixel summed in double, rounded once (naive's rule,
// src/naive/warp_perspective.cpp).
void warp_perspective_forward(const WarpArgs& a, const void* src, const float* mat,
                              const int32_t* mat_idx, void* dst, cudaStream_t stream);
// acc (grad's elements, dense, zeroed here) += tap weight * diff for every in-image tap (double
// atomics), then grad = acc rounded once.
void warp_perspective_backward_data(const WarpArgs& a, const float* mat, const int32_t* mat_idx,
                                    const void* diff, double* acc, void* grad, cudaStream_t stream);
// acc (n * 9 doubles, zeroed here) += each output pixel's contribution to d loss / d mat[n], then
// grad (n, 3, 3) float32 at grad_strides = acc rounded once.
void warp_perspective_backward_mat(const WarpArgs& a, const void* src, const float* mat,
                                   const int32_t* mat_idx, const void* diff, double* acc,
                                   float* grad, const int64_t* grad_strides, cudaStream_t stream);

// FakeQuant, TQT, LSQ and their backward operators (src/common/fake_quant_math.h): in[] are the
// operator's inputs in its order and out[] its outputs, every layout broadcast to src's shape and
// collapsed together.
enum class FakeQuantKind : uint8_t {
    FakeQuant,
    FakeQuantBackward,
    TQT,
    TQTBackward,
    LSQ,
    LSQBackward
};
inline constexpr int kFakeQuantMaxInputs = 5;
struct FakeQuantArgs {
    FakeQuantKind kind;
    int nr_in, nr_out;
    const void* in[kFakeQuantMaxInputs];
    DT in_dt[kFakeQuantMaxInputs];
    Strided in_layout[kFakeQuantMaxInputs];
    void* out[2];
    DT out_dt;
    Strided out_layout[2];
    float qmin, qmax;
};
void fake_quant(const FakeQuantArgs& args, int64_t n, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// One deformable convolution or one of its gradients over NCHW strided tensors of dtype dt: src
// (n, ic, ih, iw), filter (oc, ic / group, fh, fw), offset (n, 2 * dg * fh * fw, oh, ow), mask
// (n, dg * fh * fw, oh, ow) and dst or diff (n, oc, oh, ow). grad_strides are the outputs' of a
// gradient: src_grad, offset_grad, mask_grad (BackwardData) or the filter's (BackwardFilter).
struct DeformArgs {
    int64_t n, ic, ih, iw, oc, oh, ow, fh, fw, group, dg;
    int64_t sh, sw, ph, pw, dh, dw;
    DT dt;
    int64_t src_strides[4], filter_strides[4], offset_strides[4], mask_strides[4], out_strides[4],
            grad_strides[3][4];
};
// dst = the masked bilinear samples times the filter, summed in double and rounded once (naive's
// rule, src/naive/deformable_conv.cpp).
void deformable_conv_forward(const DeformArgs& a, const void* src, const void* filter,
                             const void* offset, const void* mask, void* dst, cudaStream_t stream);
// grad (the filter's shape, at grad_strides[0]) = the masked samples times diff, a thread per
// filter element summing in double.
void deformable_conv_backward_filter(const DeformArgs& a, const void* src, const void* offset,
                                     const void* mask, const void* diff, void* grad,
                                     cudaStream_t stream);
// acc (src's, then offset's, then mask's elements, dense, zeroed here) += each sample's
// contributions with double atomics, then src_grad, offset_grad, mask_grad = acc rounded once.
void deformable_conv_backward_data(const DeformArgs& a, const void* src, const void* filter,
                                   const void* offset, const void* mask, const void* diff,
                                   double* acc, void* src_grad, void* offset_grad, void* mask_grad,
                                   cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// One region-restricted convolution or one of its gradients over NCHW strided tensors: image
// (n, ic, ih, iw) is src or its gradient, filter (oc, ic / group, fh, fw) the filter or its
// gradient, out (n, oc, oh, ow) dst or diff, all of dtype dt; rin (n, ih, iw) and rout (n, oh, ow)
// region ids of dtype rdt (Int32 or Uint8).
struct RegionConvArgs {
    int64_t n, ic, ih, iw, oc, oh, ow, fh, fw, group;
    int64_t sh, sw, ph, pw, dh, dw;
    DT dt, rdt;
    int64_t image_strides[4], filter_strides[4], out_strides[4], rin_strides[3], rout_strides[3];
};
// Each writes its output, a thread per element summing its matching taps in double (naive's
// rule, src/naive/region_restricted_conv.cpp).
void region_conv_forward(const RegionConvArgs& a, const void* src, const void* filter,
                         const void* rin, const void* rout, void* dst, cudaStream_t stream);
void region_conv_backward_data(const RegionConvArgs& a, const void* filter, const void* diff,
                               const void* rin, const void* rout, void* grad, cudaStream_t stream);
void region_conv_backward_filter(const RegionConvArgs& a, const void* src, const void* diff,
                                 const void* rin, const void* rout, void* grad,
                                 cudaStream_t stream);
// One Remap call or one of its gradients' over NCHW strided tensors: the image side is src
// (forward, BackwardMat) or grad (BackwardData), (n, c, in_h, in_w); the remapped side is dst or
// diff, (n, c, out_h, out_w); map_xy (n, out_h, out_w, 2) float32, and BackwardMat's grad of its
// shape and strides.
struct RemapArgs {
    WarpBorder bmode;
    bool nearest;
    double scalar;
    int64_t n, c, in_h, in_w, out_h, out_w;
    DT dt;
    int64_t image_strides[4], mapped_strides[4], map_strides[4], map_grad_strides[4];
};
// dst = the taps of each output pixel summed in double, rounded once (naive's rule).
void remap_forward(const RemapArgs& a, const void* src, const float* map_xy, void* dst,
                   cudaStream_t stream);
// acc (grad's elements, dense, zeroed here) += tap weight * diff for every in-image tap (double
// atomics), then grad = acc rounded once.
void remap_backward_data(const RemapArgs& a, const float* map_xy, const void* diff, double* acc,
                         void* grad, cudaStream_t stream);
// grad (n, out_h, out_w, 2) float32 = each point's slope along x and y summed over channels
// (zero for NEAREST).
void remap_backward_mat(const RemapArgs& a, const void* src, const float* map_xy, const void* diff,
                        float* grad, cudaStream_t stream);

// ROIAlign's and ROIPooling's modes in their params' order (checked in roi_align.cpp and
// roi_pooling.cpp).
enum class RoiMode : uint32_t { MAX, AVERAGE };

// One ROIAlign or ROIPooling call or one of their gradients' over NCHW strided tensors: the image
// side is src or grad, (batch, c, in_h, in_w); the pooled side is dst or diff and index,
// (k, c, ph, pw); rois (k, 5) of a float dtype.
struct RoiArgs {
    RoiMode mode;
    int64_t k, c, batch, in_h, in_w, ph, pw;
    DT dt, rois_dt;
    int64_t image_strides[4], pooled_strides[4], index_strides[4], rois_strides[2];
    double spatial_scale, offset;  // ROIAlign
    uint32_t sample_h, sample_w;   // ROIAlign; 0: ceil(bin size), at least 1
    float scale;                   // ROIPooling
};
// first (one device word) = the first roi row whose batch column names no image of
// [0, batch) (src/common/roi.h's rule), ~0 when none; value = that column's value.
void roi_find_bad_batch(const RoiArgs& a, const void* rois, unsigned long long* first,
                        double* value, cudaStream_t stream);
// dst and index as naive's ROIAlign: samples summed or compared in double, rounded once.
void roi_align_forward(const RoiArgs& a, const void* src, const void* rois, void* dst,
                       int32_t* index, cudaStream_t stream);
// acc (grad's elements, dense, zeroed here) += each diff element's share at its samples' taps
// (double atomics; an index outside its grid adds nothing), then grad = acc rounded once.
void roi_align_backward(const RoiArgs& a, const void* diff, const void* rois, const int32_t* index,
                        double* acc, void* grad, cudaStream_t stream);
// dst and index as naive's ROIPooling (MegDNN's float32 bins).
void roi_pooling_forward(const RoiArgs& a, const void* src, const void* rois, void* dst,
                         int32_t* index, cudaStream_t stream);
// acc (dense, zeroed here) += diff at the argmax pixel or spread over the bin (double atomics; an
// index outside its bin adds nothing), then grad = acc rounded once.
void roi_pooling_backward(const RoiArgs& a, const void* diff, const void* rois,
                          const int32_t* index, double* acc, void* grad, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern

namespace neomeg::dnn::cuda::kern {

// NMSKeep: boxes (batch, n, 4) float32 at element strides box_strides, indices (batch, cap) int32
// at idx_strides and count (batch,) int32 at count_stride; one block per batch item.
struct NmsKeepArgs {
    const float* boxes;
    int64_t box_strides[3];
    int64_t batch, n, cap;
    float thresh;
    int32_t* indices;
    int64_t idx_strides[2];
    int32_t* count;
    int64_t count_stride;
};
void nms_keep(const NmsKeepArgs& args, cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern
