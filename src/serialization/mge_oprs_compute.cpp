// Conversions of MegEngine's computing operators (elementwise, convolution, pooling,
// normalisation, reduction, TopK, Argsort, matrix product, dtype conversion, Linspace) into
// NeoMeg ops. MegEngine's param values are its enums' numbers (dnn/scripts/opr_param_defs.py);
// each is mapped by meaning, never by number, and a value NeoMeg has no counterpart of is a
// ModelError naming it.
#include <cmath>
#include <limits>
#include <optional>

#include "mge_convert.h"
#include "neomeg/op/op_defs.h"

namespace neomeg::serialization::mge {
namespace {

using dnn::str_cat;
using graph::VarNode;
using Inputs = std::span<VarNode* const>;
using Outs = std::vector<VarNode*>;
using Mode = dnn::param::Elemwise::Mode;

void require_inputs(Inputs in, size_t lo, size_t hi) {
    require(in.size() >= lo && in.size() <= hi,
            lo == hi ? str_cat("takes ", lo, " inputs, the file gives ", in.size())
                     : str_cat("takes ", lo, " to ", hi, " inputs, the file gives ", in.size()));
}

VarNode* elemwise(Converter& c, Mode mode, std::initializer_list<VarNode*> in) {
    return c.insert1(ops::Elemwise(dnn::param::Elemwise{mode}), in);
}

// ---- Elemwise ----

// How MegEngine's elemwise mode `id` runs in NeoMeg: one mode, or MegEngine's fused
// FUSE_ADD_<act> as ADD then the activation, or one of the special forms.
struct ElemwiseMap {
    enum Kind : uint8_t { None, Plain, AddThen, CondMove, PRelu } kind = None;
    Mode mode = Mode::ADD;  // Plain: the mode; AddThen: the activation; CondMove: the comparison
};

ElemwiseMap elemwise_map(uint32_t id) {
    using K = ElemwiseMap;
    // MegEngine's Elemwise.Mode, by number (opr_param_defs.py).
    switch (id) {
#define NM_PLAIN(n, m) \
    case n:            \
        return {K::Plain, Mode::m};
        NM_PLAIN(0, RELU)
        NM_PLAIN(1, ABS)
        NM_PLAIN(2, ACOS)
        NM_PLAIN(3, ASIN)
        NM_PLAIN(4, CEIL)
        NM_PLAIN(5, COS)
        NM_PLAIN(6, EXP)
        NM_PLAIN(7, EXPM1)
        NM_PLAIN(8, FLOOR)
        NM_PLAIN(9, LOG)
        NM_PLAIN(10, LOG1P)
        NM_PLAIN(11, NEGATE)
        NM_PLAIN(12, SIGMOID)
        NM_PLAIN(13, SIN)
        NM_PLAIN(14, TANH)
        NM_PLAIN(15, ABS_GRAD)
        NM_PLAIN(16, ADD)
        NM_PLAIN(17, FLOOR_DIV)
        NM_PLAIN(18, MAX)
        NM_PLAIN(19, MIN)
        NM_PLAIN(20, MOD)  // MegDNN: fmod on floats, Python's % on integers, as NeoMeg
        NM_PLAIN(21, MUL)
        NM_PLAIN(22, POW)
        NM_PLAIN(23, SIGMOID_GRAD)
        NM_PLAIN(24, SUB)
        NM_PLAIN(25, SWITCH_GT0)
        NM_PLAIN(26, TANH_GRAD)
        NM_PLAIN(27, TRUE_DIV)
        NM_PLAIN(28, LOG_SUM_EXP)
        NM_PLAIN(29, LT)
        NM_PLAIN(30, LEQ)
        NM_PLAIN(31, EQ)
        NM_PLAIN(32, SHL)
        NM_PLAIN(33, SHR)
        NM_PLAIN(35, FUSE_MUL_ADD3)
        NM_PLAIN(36, FUSE_MUL_ADD4)
        NM_PLAIN(42, ROUND)
        NM_PLAIN(44, ATAN2)
        NM_PLAIN(45, ERF)
        NM_PLAIN(46, ERFINV)
        NM_PLAIN(47, ERFC)
        NM_PLAIN(48, ERFCINV)
        NM_PLAIN(49, H_SWISH)
        NM_PLAIN(50, H_SWISH_GRAD)
        NM_PLAIN(52, NOT)
        NM_PLAIN(53, AND)
        NM_PLAIN(54, OR)
        NM_PLAIN(55, XOR)
        NM_PLAIN(56, SILU)
        NM_PLAIN(57, SILU_GRAD)
        NM_PLAIN(58, GELU)
        NM_PLAIN(59, GELU_GRAD)
        NM_PLAIN(61, NE)
        NM_PLAIN(62, ISNAN)
        NM_PLAIN(63, ISINF)
        NM_PLAIN(64, SINH)
        NM_PLAIN(65, COSH)
        NM_PLAIN(66, ASINH)
        NM_PLAIN(67, ACOSH)
        NM_PLAIN(68, ATANH)
        NM_PLAIN(69, TAN)
        NM_PLAIN(74, CLIP)
        NM_PLAIN(76, SOFTPLUS)
        NM_PLAIN(77, SOFTPLUS_GRAD)
        NM_PLAIN(78, RELU6)
        NM_PLAIN(79, RELU6_GRAD)
        NM_PLAIN(80, HSIGMOID)
        NM_PLAIN(81, HSIGMOID_GRAD)
        NM_PLAIN(82, LOGSIGMOID)
        NM_PLAIN(83, SQRT)
        NM_PLAIN(84, SQUARE)
        NM_PLAIN(85, SIGN)
#undef NM_PLAIN
        case 34:  // COND_LEQ_MOV: x <= y ? z : 0
            return {K::CondMove, Mode::LEQ};
        case 60:  // COND_LT_MOV: x < y ? z : 0
            return {K::CondMove, Mode::LT};
        case 37:  // FUSE_ADD_RELU
            return {K::AddThen, Mode::RELU};
        case 38:  // FUSE_ADD_SIGMOID
            return {K::AddThen, Mode::SIGMOID};
        case 39:  // FUSE_ADD_TANH
            return {K::AddThen, Mode::TANH};
        case 51:  // FUSE_ADD_H_SWISH
            return {K::AddThen, Mode::H_SWISH};
        case 73:  // PRELU: x > 0 ? x : x * y
            return {K::PRelu, Mode::ADD};
        default:
            // FAST_TANH(_GRAD) (an approximation NeoMeg does not reproduce), RMULH, the
            // inverse-hyperbolic and PRELU gradients.
            return {};
    }
}

// MegEngine's Elemwise mode `id` on the inputs.
Outs apply_elemwise(Converter& c, uint32_t id, Inputs in) {
    ElemwiseMap m = elemwise_map(id);
    switch (m.kind) {
        case ElemwiseMap::Plain:
            return {c.insert1(ops::Elemwise(dnn::param::Elemwise{m.mode}), in)};
        case ElemwiseMap::AddThen:
            require_inputs(in, 2, 2);
            return {elemwise(c, m.mode, {elemwise(c, Mode::ADD, {in[0], in[1]})})};
        case ElemwiseMap::CondMove: {
            require_inputs(in, 3, 3);
            VarNode* cond = elemwise(c, m.mode, {in[0], in[1]});
            VarNode* zero = c.scalar(0, in[2]->dtype());
            return {elemwise(c, Mode::COND, {cond, in[2], zero})};
        }
        case ElemwiseMap::PRelu: {
            require_inputs(in, 2, 2);
            // max(x, 0) + min(x, 0) * y: x where x > 0, x * y elsewhere.
            VarNode* zero = c.scalar(0, in[0]->dtype());
            VarNode* pos = elemwise(c, Mode::MAX, {in[0], zero});
            VarNode* neg = elemwise(c, Mode::MIN, {in[0], zero});
            return {elemwise(c, Mode::FUSE_MUL_ADD3, {neg, in[1], pos})};
        }
        case ElemwiseMap::None:
            break;
    }
    fail(str_cat("Elemwise mode ", id, " has no NeoMeg counterpart"));
}

// An Elemwise of quantized inputs: a quantized Linear's bias addition (MatrixMul's QuantizedS32
// sums plus the QuantizedS32 bias) or a quantized model's RELU, MAX, ... MegEngine computes
// RELU, NEGATE, ADD, SUB, MAX and MIN on the stored integers of one QuantizedS8 or QuantizedS32
// dtype, exactly (wrapping beyond the storage), and so does NeoMeg's Elemwise (elemwise.py's
// `quantized` modes); MegEngine refuses the other modes and Quantized8Asymm, so such a model
// cannot have been run by it.
Outs quantized_elemwise(Converter& c, uint32_t id, Inputs in) {
    dnn::DType dt = in[0]->dtype();
    for (VarNode* v : in)
        require(v->dtype() == dt, str_cat("Elemwise of mixed dtypes ", dt.full_name(), " and ",
                                          v->dtype().full_name()));
    ElemwiseMap m = elemwise_map(id);
    require(m.kind == ElemwiseMap::Plain && dnn::param::Elemwise::quantized(m.mode) &&
                    dt.enumv() != dnn::DTypeEnum::Quantized8Asymm,
            str_cat("Elemwise mode ", id, " on ", dt.full_name(),
                    "; MegEngine computes only RELU, NEGATE, ADD, SUB, MAX and MIN on QuantizedS8 "
                    "and QuantizedS32 (and the quantized modes of ElemwiseMultiType)"));
    return apply_elemwise(c, id, in);
}

Outs elemwise_conv(Converter& c, const fbs::Operator& op, Inputs in) {
    uint32_t id = param_of<fbs::Elemwise>(op, fbs::OperatorParam::Elemwise).mode();
    for (VarNode* v : in)
        if (v->dtype().is_quantized())
            return quantized_elemwise(c, id, in);
    return apply_elemwise(c, id, in);
}

// ElemwiseMultiType's quantized modes (QADD = 6 to QH_SWISH_GRAD = 53, and QCOND_LT_MOV = 57) are
// Elemwise modes on the inputs' values, quantized to the operator's output dtype; this gives the
// Elemwise mode of each, or -1 for the fixed-point modes (0 to 5) and the int16/uint8 ones.
int32_t multi_type_elemwise_id(uint32_t mode) {
    // MegEngine's ElemwiseMultiType.Mode, from QADD on, as Elemwise.Mode numbers.
    static constexpr int32_t kQuantized[] = {
            16, 37, 21, 19, 18, 24,  // QADD, QFUSE_ADD_RELU, QMUL, QMIN, QMAX, QSUB
            27, 38, 39, 0, 1, 12,    // QTRUE_DIV, QFUSE_ADD_SIGMOID, QFUSE_ADD_TANH, QRELU, QABS,
                                     // QSIGMOID
            6, 14, 35, 40, 11, 2,    // QEXP, QTANH, QFUSE_MUL_ADD3, QFAST_TANH, QNEGATE, QACOS
            3, 4, 5, 7, 8, 9,        // QASIN, QCEIL, QCOS, QEXPM1, QFLOOR, QLOG
            10, 13, 42, 45, 46, 47,  // QLOG1P, QSIN, QROUND, QERF, QERFINV, QERFC
            48, 15, 17, 20, 23, 25,  // QERFCINV, QABS_GRAD, QFLOOR_DIV, QMOD, QSIGMOID_GRAD,
                                     // QSWITCH_GT0
            26, 29, 30, 31, 22, 28,  // QTANH_GRAD, QLT, QLEQ, QEQ, QPOW, QLOG_SUM_EXP
            41, 44, 34, 49, 51, 50,  // QFAST_TANH_GRAD, QATAN2, QCOND_LEQ_MOV, QH_SWISH,
                                     // QFUSE_ADD_H_SWISH, QH_SWISH_GRAD
    };
    static_assert(std::size(kQuantized) == 53 - 6 + 1);
    if (mode >= 6 && mode <= 53)
        return kQuantized[mode - 6];
    if (mode == 57)  // QCOND_LT_MOV
        return 60;
    return -1;
}

Outs elemwise_multi_type(Converter& c, const fbs::Operator& op, Inputs in) {
    uint32_t mode =
            param_of<fbs::ElemwiseMultiType>(op, fbs::OperatorParam::ElemwiseMultiType).mode();
    int32_t id = multi_type_elemwise_id(mode);
    require(id >= 0, str_cat("ElemwiseMultiType mode ", mode,
                             " (a fixed-point or mixed-integer mode NeoMeg does not convert)"));
    auto out = output_dtype_of(op);
    require(out && out->is_quantized(),
            str_cat("ElemwiseMultiType mode ", mode, " without a quantized output dtype"));
    // MegEngine's quantized modes: dequantize each input (scale * (v - zero_point), float32),
    // the float function, quantize to the output dtype (round half away from zero, saturate).
    std::vector<VarNode*> values;
    for (VarNode* v : in) {
        require(v->dtype().is_quantized(), str_cat("ElemwiseMultiType mode ", mode, " of a ",
                                                   v->dtype().full_name(), " input"));
        values.push_back(c.convert(v, dnn::dtype::Float32));
    }
    Outs y = apply_elemwise(c, static_cast<uint32_t>(id), values);
    return {c.convert(y.at(0), *out)};
}

// PowC: x ** exp with exp in the param. 2 and 0.5 are MegEngine's exact special cases.
Outs pow_c(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 1, 1);
    float e = param_of<fbs::PowC>(op, fbs::OperatorParam::PowC).exp();
    require(in[0]->dtype().is_float(), "PowC of a non-float input");
    if (e == 2.0f)
        return {elemwise(c, Mode::SQUARE, {in[0]})};
    if (e == 0.5f)
        return {elemwise(c, Mode::SQRT, {in[0]})};
    return {elemwise(c, Mode::POW, {in[0], c.scalar(e, in[0]->dtype())})};
}

Outs type_cvt(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 1, 1);
    dnn::DType to;
    if (op.param_type() == fbs::OperatorParam::DType)
        to = dtype_of(param_of<fbs::DType>(op, fbs::OperatorParam::DType),  // checked: not null
                      "TypeCvt's target dtype");
    else
        to = dtype_of(
                param_of<fbs::DTypeParamTable>(op, fbs::OperatorParam::DTypeParamTable).dtype());
    // MegEngine's TypeCvt rounds half away from zero and saturates when it quantizes, reads
    // scale * (v - zero_point) when it dequantizes, as NeoMeg's.
    return {c.convert(in[0], to)};
}

// ---- matrix products ----

dnn::param::MatrixMul matmul_param(const fbs::Operator& op) {
    const auto& p = param_of<fbs::MatrixMul>(op, fbs::OperatorParam::MatrixMul);
    require(p.format() == 0, str_cat("MatrixMul format ", p.format(), " (a packed layout)"));
    require(p.compute_mode() <= 1, str_cat("MatrixMul compute_mode ", p.compute_mode()));
    dnn::param::MatrixMul m;
    m.transposeA = p.transpose_a();
    m.transposeB = p.transpose_b();
    m.compute_mode = p.compute_mode() == 1 ? dnn::param::MatrixMul::ComputeMode::FLOAT32
                                           : dnn::param::MatrixMul::ComputeMode::DEFAULT;
    return m;
}

Outs matrix_mul(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 2, 2);
    return {c.insert1(ops::MatrixMul(matmul_param(op)), in)};
}

Outs batched_matrix_mul(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 2, 2);
    return {c.insert1(ops::BatchedMatrixMul(matmul_param(op)), in)};
}

// ---- convolution ----

int32_t small(uint32_t v, const char* what) {
    require(v <= (1u << 20), str_cat(what, " ", v, " is out of range"));
    return static_cast<int32_t>(v);
}

// A convolution's param and filter in NeoMeg's form: MegEngine's GROUP filter
// (G, OC/G, IC/G, kh, kw) becomes (OC, IC/G, kh, kw) with group G.
struct ConvForm {
    dnn::param::Convolution param;
    VarNode* filter;
};

template <class P>
ConvForm conv_form(Converter& c, const P& p, uint32_t sparse, uint32_t format, uint32_t mode,
                   VarNode* filter) {
    require(format == 0, str_cat("convolution format ", format, "; NeoMeg imports NCHW"));
    require(mode <= 1, str_cat("convolution mode ", mode));
    require(sparse <= 1, str_cat("convolution sparse ", sparse));
    dnn::param::Convolution cp;
    cp.mode = mode == 1 ? dnn::param::Convolution::Mode::CONVOLUTION
                        : dnn::param::Convolution::Mode::CROSS_CORRELATION;
    cp.stride = {small(p.stride_h(), "stride"), small(p.stride_w(), "stride")};
    cp.padding = {small(p.pad_h(), "padding"), small(p.pad_w(), "padding")};
    cp.dilation = {small(p.dilate_h(), "dilation"), small(p.dilate_w(), "dilation")};
    if (sparse == 1) {
        const auto& f = filter->shape();
        require(f.ndim == 5, str_cat("a group convolution's filter ", f.to_string(),
                                     " is not (group, OC/group, IC/group, kh, kw)"));
        cp.group = static_cast<uint32_t>(f[0]);
        param::Reshape r;
        r.shape = {static_cast<int32_t>(f[0] * f[1]), static_cast<int32_t>(f[2]),
                   static_cast<int32_t>(f[3]), static_cast<int32_t>(f[4])};
        filter = c.insert1(ops::Reshape(r), {filter});
    }
    return {std::move(cp), filter};
}

template <class P>
VarNode* convolution(Converter& c, const P& p, uint32_t sparse, uint32_t format, uint32_t mode,
                     VarNode* src, VarNode* filter) {
    ConvForm f = conv_form(c, p, sparse, format, mode, filter);
    return c.insert1(ops::ConvolutionForward(f.param), {src, f.filter});
}

Outs convolution_conv(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 2, 2);
    const auto& p = param_of<fbs::Convolution>(op, fbs::OperatorParam::Convolution);
    return {convolution(c, p, p.sparse(), p.format(), p.mode(), in[0], in[1])};
}

// ConvolutionBackwardData(filter, diff[, src_for_shape]): F.conv_transpose2d (M.ConvTranspose2d,
// the deconvolution layers of the zoo's keypoint models). With two inputs the result has the
// default size (in - 1) * stride - 2 * padding + dilation * (k - 1) + 1, which NeoMeg's op infers
// too; a third input gives the size as its shape.
Outs convolution_backward_data(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 2, 3);
    const auto& p = param_of<fbs::Convolution>(op, fbs::OperatorParam::Convolution);
    ConvForm f = conv_form(c, p, p.sparse(), p.format(), p.mode(), in[0]);
    graph::InsertOptions o;
    if (in.size() == 3) {
        require(!in[2]->shape_dynamic(),
                "ConvolutionBackwardData's shape input has no known shape");
        o.output_shapes = {in[2]->shape()};
    }
    std::vector<VarNode*> args = {f.filter, in[1]};
    try {
        const auto& outs = c.graph().insert(ops::ConvolutionBackwardData(f.param), args, o);
        return {outs[0]};
    } catch (const dnn::Error& e) {
        fail(e.what());
    }
}

// A quantized ConvBias (quantized src and filter, QuantizedS32 bias) writes the output dtype it
// was given (QuantizedS8 or Quantized8Asymm): NeoMeg's ConvBias gives the exact int32 sums
// (QuantizedS32) with IDENTITY or RELU applied, and a TypeCvt requantises them, the one rounding
// MegEngine's kernel makes (round half away from zero, saturate); RELU commutes with it. SIGMOID
// and H_SWISH apply to the dequantized sums in float32 before that rounding, as MegEngine's
// reference kernel.
Outs quantized_conv_bias(Converter& c, const fbs::ConvBias& p, const fbs::Operator& op, Inputs in) {
    require(in.size() <= 3, "a quantized ConvBias with a z input (NeoMeg's has none)");
    require(in[1]->dtype().enumv() == dnn::DTypeEnum::QuantizedS8,
            str_cat("a quantized ConvBias of filter dtype ", in[1]->dtype().full_name(), " (input ",
                    in[0]->dtype().full_name(),
                    "); NeoMeg's takes QuantizedS8 filters (symmetric weights) only"));
    ConvForm f = conv_form(c, p, p.sparse(), p.format(), p.mode(), in[1]);
    dnn::param::ConvBias q;
    q.mode = f.param.mode == dnn::param::Convolution::Mode::CONVOLUTION
                     ? dnn::param::ConvBias::Mode::CONVOLUTION
                     : dnn::param::ConvBias::Mode::CROSS_CORRELATION;
    q.stride = f.param.stride;
    q.padding = f.param.padding;
    q.dilation = f.param.dilation;
    q.group = f.param.group;
    using NM = dnn::param::ConvBias::NonlineMode;
    std::optional<Mode> after;  // a float activation after the sums
    switch (p.nonline_mode()) {
        case 0:
            q.nonlineMode = NM::IDENTITY;
            break;
        case 1:
            q.nonlineMode = NM::RELU;
            break;
        case 2:
            after = Mode::SIGMOID;
            break;
        case 3:
            after = Mode::H_SWISH;
            break;
        default:
            fail(str_cat("ConvBias nonlineMode ", p.nonline_mode()));
    }
    VarNode* none = c.scalar(0, dnn::dtype::Int32);  // an absent bias or z: ndim 0
    VarNode* bias = in.size() == 3 ? in[2] : none;
    VarNode* y = c.insert1(ops::ConvBias(q), {in[0], f.filter, bias, none});
    auto out = output_dtype_of(op);
    if (after) {
        y = elemwise(c, *after, {c.convert(y, dnn::dtype::Float32)});
        require(out.has_value(),
                "a quantized ConvBias with a float activation and no output dtype");
    }
    return {out ? c.convert(y, *out) : y};
}

// ConvBias: act(conv(src, filter) + bias + z), as the convolution, the additions and the
// activation (compile()'s fuse_conv_bias pass joins them again where a kernel does).
Outs conv_bias(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 2, 4);
    const auto& p = param_of<fbs::ConvBias>(op, fbs::OperatorParam::ConvBias);
    if (in[0]->dtype().is_quantized() || in[1]->dtype().is_quantized())
        return quantized_conv_bias(c, p, op, in);
    VarNode* y = convolution(c, p, p.sparse(), p.format(), p.mode(), in[0], in[1]);
    for (size_t i = 2; i < in.size(); ++i)
        y = elemwise(c, Mode::ADD, {y, in[i]});
    switch (p.nonline_mode()) {
        case 0:  // IDENTITY
            return {y};
        case 1:
            return {elemwise(c, Mode::RELU, {y})};
        case 2:
            return {elemwise(c, Mode::SIGMOID, {y})};
        case 3:
            return {elemwise(c, Mode::H_SWISH, {y})};
        default:
            fail(str_cat("ConvBias nonlineMode ", p.nonline_mode()));
    }
}

// ---- pooling ----

Outs pooling(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 1, 1);
    const auto& p = param_of<fbs::Pooling>(op, fbs::OperatorParam::Pooling);
    require(p.format() == 0, str_cat("Pooling format ", p.format(), "; NeoMeg imports NCHW"));
    using PM = dnn::param::Pooling::Mode;
    dnn::param::Pooling q;
    switch (p.mode()) {
        case 0:
            q.mode = PM::MAX;
            break;
        case 1:
            q.mode = PM::AVERAGE;
            break;
        case 2:
            q.mode = PM::AVERAGE_COUNT_EXCLUDE_PADDING;
            break;
        default:
            fail(str_cat("Pooling mode ", p.mode()));
    }
    q.window = {small(p.window_h(), "window"), small(p.window_w(), "window")};
    q.stride = {small(p.stride_h(), "stride"), small(p.stride_w(), "stride")};
    q.padding = {small(p.pad_h(), "padding"), small(p.pad_w(), "padding")};
    return {c.insert1(ops::PoolingForward(q), in)};
}

// AdaptivePooling's output size is the value of its second input.
Outs adaptive_pooling(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 2, 2);
    const auto& p = param_of<fbs::AdaptivePooling>(op, fbs::OperatorParam::AdaptivePooling);
    require(p.format() == 0, str_cat("AdaptivePooling format ", p.format()));
    auto shape = c.int_value(in[1]);
    require(shape && shape->size() == 2,
            "AdaptivePooling's output size is not two values known when the model loads");
    dnn::param::AdaptivePooling q;
    q.mode = p.mode() == 0 ? dnn::param::AdaptivePooling::Mode::MAX
                           : dnn::param::AdaptivePooling::Mode::AVERAGE;
    require(p.mode() <= 2, str_cat("AdaptivePooling mode ", p.mode()));
    for (int64_t d : *shape)
        require(d >= 1 && d <= (1 << 20), str_cat("AdaptivePooling output size ", d));
    q.shape = {static_cast<int32_t>((*shape)[0]), static_cast<int32_t>((*shape)[1])};
    return {c.insert1(ops::AdaptivePoolingForward(q), {in[0]})};
}

// ---- normalisation ----

// BatchNorm in inference mode with its running statistics (what trace.dump writes of an
// evaluating BatchNorm2d when optimize_for_inference does not fold it). MegEngine numbers its
// outputs (saved mean, saved variance, reserve, y): the statistics outputs, which nothing in
// an inference graph reads, are the running statistics and an empty reserve.
Outs batch_norm(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 5, 5);
    const auto& p = param_of<fbs::BN>(op, fbs::OperatorParam::BN);
    require(p.fwd_mode() == 1, "BatchNorm in training mode (NeoMeg imports inference graphs)");
    require(p.param_dim() == 2, str_cat("BatchNorm param_dim ", p.param_dim(),
                                        "; NeoMeg imports per-channel (1, C, 1, 1) statistics"));
    dnn::param::BatchNorm q;
    q.fwd_mode = dnn::param::BatchNorm::FwdMode::INFERENCE;
    q.epsilon = static_cast<float>(p.epsilon());
    const auto& outs = c.insert(ops::BatchNormForward(q), in);
    size_t n = op.outputs() ? op.outputs()->size() : 0;
    require(n >= 1 && n <= 4, str_cat("BatchNorm with ", n, " outputs"));
    dnn::TensorShape empty;
    empty.ndim = 1;
    empty.shape[0] = 0;
    VarNode* reserve =
            c.graph().constant(DeviceTensor::empty(empty, dnn::dtype::Float32, c.comp_node()));
    Outs stats = {in[3], in[4], reserve};
    Outs result(stats.end() - static_cast<ptrdiff_t>(n - 1), stats.end());
    result.push_back(outs[0]);
    return result;
}

Outs layer_norm(Converter& c, const fbs::Operator& op, Inputs in) {
    const auto& p = param_of<fbs::LayerNorm>(op, fbs::OperatorParam::LayerNorm);
    require_inputs(in, p.affine() ? 3 : 1, p.affine() ? 3 : 1);
    require(p.normalized_dim() >= 1 && p.normalized_dim() <= dnn::TensorShape::MAX_NDIM,
            str_cat("LayerNorm normalized_dim ", p.normalized_dim()));
    dnn::param::LayerNorm q;
    q.affine = p.affine();
    q.eps = p.eps();
    q.normalized_dim = static_cast<uint32_t>(p.normalized_dim());
    return c.insert(ops::LayerNormForward(q), in);
}

Outs softmax(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 1, 1);
    int32_t axis = param_of<fbs::Softmax>(op, fbs::OperatorParam::Softmax).axis();
    return {c.insert1(ops::SoftmaxForward(dnn::param::Softmax{axis}), in)};
}

// TopK(src, k): F.topk writes k as a constant, negative for descending (the -k largest), which
// is NeoMeg's param too; MegEngine's modes are KTH_ONLY, VALUE_IDX_NOSORT, VALUE_IDX_SORTED.
Outs top_k(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 2, 2);
    using TM = dnn::param::TopK::Mode;
    static constexpr TM kModes[] = {TM::KTH_ONLY, TM::VALUE_IDX_NOSORT, TM::VALUE_IDX_SORTED};
    uint32_t mode = param_of<fbs::TopK>(op, fbs::OperatorParam::TopK).mode();
    require(mode < std::size(kModes), str_cat("TopK mode ", mode));
    auto k = c.int_value(in[1]);
    require(k && k->size() == 1 && (*k)[0] != 0, "TopK's k is not a known non-zero int32 scalar");
    dnn::param::TopK p;
    p.mode = kModes[mode];
    p.k = static_cast<int32_t>((*k)[0]);
    return c.insert(ops::TopK(p), {in.data(), 1});
}

// Argsort (F.sort, F.argsort, and F.vision.nms's score order): values and int32 indices;
// MegEngine's order 0 is ascending, 1 descending.
Outs argsort(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 1, 1);
    uint32_t order = param_of<fbs::Argsort>(op, fbs::OperatorParam::Argsort).order();
    require(order <= 1, str_cat("Argsort order ", order));
    using O = dnn::param::Argsort::Order;
    return c.insert(ops::Argsort(dnn::param::Argsort{order == 1 ? O::DESCENDING : O::ASCENDING}),
                    in);
}

// ---- generators ----

// The one value of a scalar whose value the import knows (a constant of the file): int32 or
// float32, as F.linspace's Tensor(start) and Tensor(stop) are.
std::optional<double> known_scalar(const VarNode* v) {
    const DeviceTensor* hv = v->host_value();
    if (!hv || v->shape().total_nr_elems() != 1)
        return std::nullopt;
    if (v->dtype() == dnn::dtype::Int32) {
        int32_t i = 0;
        hv->to_host(&i);
        return i;
    }
    if (v->dtype() == dnn::dtype::Float32) {
        float f = 0;
        hv->to_host(&f);
        return f;
    }
    return std::nullopt;
}

// Linspace(start, stop, num): MegEngine reads the three scalars' values when it infers the
// output (F.linspace writes them as constants, BERT's position ids among them), so they are known
// here too and become the param of NeoMeg's generator.
Outs linspace(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 3, 3);
    bool endpoint = param_of<fbs::Linspace>(op, fbs::OperatorParam::Linspace).endpoint();
    auto start = known_scalar(in[0]);
    auto stop = known_scalar(in[1]);
    auto num = c.int_value(in[2]);
    require(start && stop, "Linspace's start and stop are not int32 or float32 constants");
    require(num && num->size() == 1 && (*num)[0] >= 0,
            "Linspace's count is not a known non-negative int32 scalar");
    dnn::param::Linspace p;
    p.start = static_cast<float>(*start);
    p.stop = static_cast<float>(*stop);
    p.endpoint = endpoint;
    graph::InsertOptions o;
    o.output_shapes = {dnn::TensorShape{static_cast<size_t>((*num)[0])}};
    o.comp_node = c.comp_node();
    try {
        return c.graph().insert(ops::Linspace(p), {}, o);
    } catch (const dnn::Error& e) {
        fail(e.what());
    }
}

// ---- reductions ----

dnn::param::Reduce::Mode reduce_mode(uint32_t m) {
    using RM = dnn::param::Reduce::Mode;
    static constexpr RM kModes[] = {RM::SUM, RM::SUM_SQR, RM::PRODUCT, RM::MIN, RM::MAX, RM::MEAN};
    require(m < std::size(kModes), str_cat("Reduce mode ", m));
    return kModes[m];
}

// Reduce along one axis (kept with size 1, as NeoMeg's), or, with axis INT_MAX, to the shape
// held by the second input: every axis that shape has as 1 and the input does not.
Outs reduce(Converter& c, const fbs::Operator& op, Inputs in) {
    const auto& p = param_of<fbs::Reduce>(op, fbs::OperatorParam::Reduce);
    auto mode = reduce_mode(p.mode());
    // DEFAULT, or FLOAT_O32xC32 on float32 (the same computation).
    require(p.data_type() == 0 ||
                    (p.data_type() == 2 && in.size() >= 1 && in[0]->dtype() == dnn::dtype::Float32),
            str_cat("Reduce data_type ", p.data_type()));
    using RM = dnn::param::Reduce::Mode;
    auto reduce_axis = [&](VarNode* x, RM m, int32_t axis) {
        return c.insert1(ops::Reduce(dnn::param::Reduce{m, axis}), {x});
    };
    if (p.axis() != std::numeric_limits<int32_t>::max()) {
        require_inputs(in, 1, 1);
        return {reduce_axis(in[0], mode, axis_in(p.axis(), in[0]->shape().ndim, "Reduce axis"))};
    }
    require_inputs(in, 2, 2);
    auto target = c.int_value(in[1]);
    require(target.has_value(), "Reduce to a target shape not known when the model loads");
    const auto& s = in[0]->shape();
    // Later axes reduce what the first reduction gave: SUM_SQR squares only once.
    RM later = mode == RM::SUM_SQR ? RM::SUM : mode;
    size_t total = 1;
    for (int64_t d : *target) {
        require(d >= 0 && d <= (int64_t(1) << 40), str_cat("Reduce target dim ", d));
        total *= static_cast<size_t>(d);
    }
    VarNode* x = in[0];
    if (total == 1 && target->size() != s.ndim) {
        // To one element of another rank: over the flattened input.
        x = c.insert1(ops::Reshape(param::Reshape{{-1}}), {x});
        x = reduce_axis(x, mode, 0);
    } else {
        require(target->size() == s.ndim, "Reduce target shape of another rank");
        bool first = true;
        for (size_t i = 0; i < s.ndim; ++i) {
            if (static_cast<size_t>((*target)[i]) == s[i])
                continue;
            require((*target)[i] == 1, str_cat("Reduce target shape does not fit ", s.to_string()));
            x = reduce_axis(x, first ? mode : later, static_cast<int32_t>(i));
            first = false;
        }
    }
    std::vector<int32_t> shape(target->begin(), target->end());
    if (x->shape().ndim != shape.size())
        x = c.insert1(ops::Reshape(param::Reshape{shape}), {x});
    return {x};
}

template <class Op>
Outs arg_reduce(Converter& c, const fbs::Operator& op, Inputs in) {
    require_inputs(in, 1, 1);
    int32_t axis = param_of<fbs::Axis>(op, fbs::OperatorParam::Axis).axis();
    return {c.insert1(Op(dnn::param::ArgReduce{axis}), in)};
}

}  // namespace

void add_compute_conversions(ConversionTable& t) {
    t["Elemwise"] = elemwise_conv;
    t["ElemwiseMultiType"] = elemwise_multi_type;
    t["PowC"] = pow_c;
    for (const char* n : {"TypeCvt", "TypeCvtV1", "TypeCvtV2"})
        t[n] = type_cvt;
    for (const char* n : {"MatrixMul", "MatrixMulV1", "MatrixMulV2"})
        t[n] = matrix_mul;
    for (const char* n : {"BatchedMatrixMul", "BatchedMatrixMulV1", "BatchedMatrixMulV2"})
        t[n] = batched_matrix_mul;
    for (const char* n : {"Convolution", "ConvolutionV1", "ConvolutionV2"})
        t[n] = convolution_conv;
    for (const char* n :
         {"ConvolutionBackwardData", "ConvolutionBackwardDataV1", "ConvolutionBackwardDataV2"})
        t[n] = convolution_backward_data;
    for (const char* n : {"ConvBias", "ConvBiasForward", "ConvBiasV4"})
        t[n] = conv_bias;
    for (const char* n : {"Pooling", "PoolingV1"})
        t[n] = pooling;
    for (const char* n : {"AdaptivePooling", "AdaptivePoolingV1"})
        t[n] = adaptive_pooling;
    for (const char* n : {"BatchNorm", "BatchNormV1", "BatchNormForward"})
        t[n] = batch_norm;
    t["LayerNorm"] = layer_norm;
    t["Softmax"] = softmax;
    for (const char* n : {"Reduce", "ReduceV1", "ReduceV2"})
        t[n] = reduce;
    t["Argmax"] = arg_reduce<ops::Argmax>;
    t["Argmin"] = arg_reduce<ops::Argmin>;
    t["Linspace"] = linspace;
    t["TopK"] = top_k;
    t["Argsort"] = argsort;
}

}  // namespace neomeg::serialization::mge
