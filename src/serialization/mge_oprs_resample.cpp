// Conversions of MegEngine's resampling operators: Resize (F.nn.interpolate's nearest and
// bilinear), WarpPerspective (F.vision.warp_perspective, and F.nn.interpolate's bilinear with
// align_corners, which MegEngine computes as a warp), Padding (F.nn.pad), and the RoI poolings of
// detection heads, ROIAlign and ROIPooling (F.vision.roi_align, F.vision.roi_pooling), with their
// box selection, NMSKeep (F.vision.nms). Output sizes
// are input values (MegEngine's shape vars): the import needs them known when the model loads, as
// NeoMeg's ops take them as params. MegEngine's enums are mapped by meaning
// (dnn/scripts/opr_param_defs.py); NHWC formats and other interpolations are refused by name.
#include <cmath>

#include "mge_convert.h"
#include "neomeg/op/op_defs.h"

namespace neomeg::serialization::mge {
namespace {

using dnn::str_cat;
using graph::VarNode;
using Inputs = std::span<VarNode* const>;
using Outs = std::vector<VarNode*>;

// MegEngine's InterpolationMode (WarpPerspectiveV1) and Convolution's Format values.
constexpr uint32_t kNearest = 0, kLinear = 1, kCubic = 3, kNCHW = 0;  // MegDNN's numbers

// The (height, width) a shape input holds: int32, or float32 of whole numbers (F.nn.interpolate's
// scale_factor makes MegEngine compute the size in float).
std::pair<uint32_t, uint32_t> out_size(Converter& c, VarNode* shape, const char* op) {
    std::optional<std::vector<int64_t>> v = c.int_value(shape);
    const DeviceTensor* hv = shape->host_value();
    if (!v && hv && shape->dtype() == dnn::dtype::Float32 && hv->layout().is_contiguous()) {
        std::vector<float> f(shape->shape().total_nr_elems());
        if (!f.empty())
            hv->to_host(f.data());
        v.emplace();
        for (float x : f) {
            require(std::isfinite(x) && x == std::floor(x) && std::fabs(x) <= float(1 << 20),
                    str_cat(op, " output size ", x));
            v->push_back(static_cast<int64_t>(x));
        }
    }
    require(v && v->size() == 2,
            str_cat(op, "'s output size is not two values known when the model loads"));
    for (int64_t d : *v)
        require(d >= 1 && d <= (int64_t(1) << 20), str_cat(op, " output size ", d));
    return {static_cast<uint32_t>((*v)[0]), static_cast<uint32_t>((*v)[1])};
}

void require_nchw(const VarNode* src, uint32_t format, const char* op) {
    require(format == kNCHW, str_cat(op, " format ", format, "; NeoMeg imports NCHW"));
    require(src->shape().ndim == 4, str_cat(op, " of ", src->shape().to_string(), ", not NCHW"));
}

// Resize(src, (out_h, out_w)): MegEngine's LINEAR samples at half-pixel centres, which is
// NeoMeg's LINEAR without align_corners.
Outs resize(Converter& c, const fbs::Operator& op, Inputs in) {
    require(in.size() == 2, str_cat("takes 2 inputs, the file gives ", in.size()));
    const auto& p = param_of<fbs::Resize>(op, fbs::OperatorParam::Resize);
    require_nchw(in[0], p.format(), "Resize");
    using IM = dnn::param::Resize::InterpolationMode;
    dnn::param::Resize q;
    if (p.imode() == kNearest)
        q.mode = IM::NEAREST;
    else if (p.imode() == kLinear)
        q.mode = IM::LINEAR;
    else if (p.imode() == kCubic)
        q.mode = IM::CUBIC;
    else
        fail(str_cat("Resize interpolation mode ", p.imode(),
                     "; NeoMeg has NEAREST, LINEAR and CUBIC"));
    std::tie(q.out_h, q.out_w) = out_size(c, in[1], "Resize");
    return {c.insert1(ops::Resize(q), {in[0]})};
}

// MegEngine's BorderMode (WarpPerspectiveV1) by meaning: REPLICATE 0, REFLECT 1, REFLECT_101 2,
// WRAP 3, CONSTANT 4; TRANSPARENT and ISOLATED have no counterpart.
dnn::param::WarpPerspective::BorderMode border_mode(uint32_t v) {
    using BM = dnn::param::WarpPerspective::BorderMode;
    switch (v) {
        case 0:
            return BM::REPLICATE;
        case 1:
            return BM::REFLECT;
        case 2:
            return BM::REFLECT_101;
        case 3:
            return BM::WRAP;
        case 4:
            return BM::CONSTANT;
        default:
            fail(str_cat("WarpPerspective border mode ", v));
    }
}

// WarpPerspective(src, mat[, mat_idx], (out_h, out_w)); without mat_idx, matrix n warps image n.
Outs warp_perspective(Converter& c, const fbs::Operator& op, Inputs in) {
    require(in.size() == 3 || in.size() == 4,
            str_cat("takes 3 or 4 inputs, the file gives ", in.size()));
    const auto& p = param_of<fbs::WarpPerspective>(op, fbs::OperatorParam::WarpPerspective);
    require_nchw(in[0], p.format(), "WarpPerspective");
    require(p.imode() == kLinear,
            str_cat("WarpPerspective interpolation mode ", p.imode(), "; NeoMeg's is LINEAR"));
    dnn::param::WarpPerspective q;
    q.bmode = border_mode(p.bmode());
    q.border_val = p.border_val();
    std::tie(q.out_h, q.out_w) = out_size(c, in.back(), "WarpPerspective");
    VarNode* mat_idx = nullptr;
    if (in.size() == 4) {
        mat_idx = in[2];
    } else {
        const VarNode* mat = in[1];
        require(mat->shape().ndim == 3, str_cat("WarpPerspective mat ", mat->shape().to_string()));
        std::vector<int32_t> idx(mat->shape()[0]);
        for (size_t i = 0; i < idx.size(); ++i)
            idx[i] = static_cast<int32_t>(i);
        mat_idx = c.int_vector(idx);
    }
    return {c.insert1(ops::WarpPerspective(q), {in[0], in[1], mat_idx})};
}

// Padding: MegEngine's PaddingMode is REPLICATE 0, REFLECT 1, CONSTANT 2; offsets per dim.
Outs padding(Converter& c, const fbs::Operator& op, Inputs in) {
    require(in.size() == 1, str_cat("takes 1 input, the file gives ", in.size()));
    const auto& p = param_of<fbs::Padding>(op, fbs::OperatorParam::Padding);
    using PM = dnn::param::Padding::Mode;
    dnn::param::Padding q;
    switch (p.padding_mode()) {
        case 0:
            q.mode = PM::REPLICATE;
            break;
        case 1:
            q.mode = PM::REFLECT;
            break;
        case 2:
            q.mode = PM::CONSTANT;
            break;
        default:
            fail(str_cat("Padding mode ", p.padding_mode()));
    }
    q.value = p.padding_val();
    const uint32_t front[] = {p.front_offset_dim0(), p.front_offset_dim1(), p.front_offset_dim2(),
                              p.front_offset_dim3(), p.front_offset_dim4(), p.front_offset_dim5(),
                              p.front_offset_dim6()};
    const uint32_t back[] = {p.back_offset_dim0(), p.back_offset_dim1(), p.back_offset_dim2(),
                             p.back_offset_dim3(), p.back_offset_dim4(), p.back_offset_dim5(),
                             p.back_offset_dim6()};
    const size_t ndim = in[0]->shape().ndim;
    require(ndim <= 7, str_cat("Padding of ", in[0]->shape().to_string()));
    for (size_t d = 0; d < 7; ++d) {
        require(front[d] <= (1u << 20) && back[d] <= (1u << 20),
                str_cat("Padding offset of dim ", d, " is out of range"));
        if (d < ndim) {
            q.front_offsets.push_back(static_cast<int32_t>(front[d]));
            q.back_offsets.push_back(static_cast<int32_t>(back[d]));
        } else {
            require(front[d] == 0 && back[d] == 0,
                    str_cat("Padding offset of dim ", d, " of a ", ndim, "-dim tensor"));
        }
    }
    return {c.insert1(ops::Padding(q), in)};
}

// MegEngine's ROIAlign and ROIPooling Mode: MAX 0, AVERAGE 1 (the same in both).
template <class Mode>
Mode roi_mode(uint32_t v, const char* op) {
    require(v <= 1, str_cat(op, " mode ", v));
    return v == 0 ? Mode::MAX : Mode::AVERAGE;
}

// ROIAlign(src, rois) -> (dst, index): the param is NeoMeg's, field for field. A sample count of
// 0 ("dense") is refused: MegEngine 1.13's kernel gives zeros there, NeoMeg's op samples about
// once per pixel, so the imported model would not give MegEngine's outputs.
Outs roi_align(Converter& c, const fbs::Operator& op, Inputs in) {
    require(in.size() == 2, str_cat("takes 2 inputs, the file gives ", in.size()));
    const auto& p = param_of<fbs::ROIAlign>(op, fbs::OperatorParam::ROIAlign);
    require_nchw(in[0], p.format(), "ROIAlign");
    dnn::param::ROIAlign q;
    q.mode = roi_mode<dnn::param::ROIAlign::Mode>(p.mode(), "ROIAlign");
    q.spatial_scale = p.spatial_scale();
    q.offset = p.offset();
    require(std::isfinite(q.spatial_scale) && std::isfinite(q.offset),
            str_cat("ROIAlign spatial_scale ", q.spatial_scale, ", offset ", q.offset));
    q.pooled_height = p.pooled_height();
    q.pooled_width = p.pooled_width();
    for (uint32_t d : {q.pooled_height, q.pooled_width})
        require(d >= 1 && d <= (1u << 20), str_cat("ROIAlign output size ", d));
    q.sample_height = p.sample_height();
    q.sample_width = p.sample_width();
    require(q.sample_height >= 1 && q.sample_width >= 1,
            str_cat("ROIAlign sample points (", q.sample_height, ", ", q.sample_width,
                    "): MegEngine's dense sampling (0) gives zeros, NeoMeg does not import it"));
    for (uint32_t d : {q.sample_height, q.sample_width})
        require(d <= 1024, str_cat("ROIAlign sample points ", d));
    // MegEngine computes roi_align in float32 (F.vision.roi_align converts its input first).
    VarNode* src = c.convert(in[0], dnn::dtype::Float32);
    return c.insert(ops::ROIAlign(q), std::vector<VarNode*>{src, in[1]});
}

// ROIPooling(src, rois, (pooled_h, pooled_w)) -> (dst, index); the output size is a shape input.
Outs roi_pooling(Converter& c, const fbs::Operator& op, Inputs in) {
    require(in.size() == 3, str_cat("takes 3 inputs, the file gives ", in.size()));
    const auto& p = param_of<fbs::ROIPooling>(op, fbs::OperatorParam::ROIPooling);
    require_nchw(in[0], kNCHW, "ROIPooling");
    dnn::param::ROIPooling q;
    q.mode = roi_mode<dnn::param::ROIPooling::Mode>(p.mode(), "ROIPooling");
    q.scale = p.scale();
    require(std::isfinite(q.scale), str_cat("ROIPooling scale ", q.scale));
    std::tie(q.pooled_height, q.pooled_width) = out_size(c, in[2], "ROIPooling");
    return c.insert(ops::ROIPooling(q), in.first(2));
}

// NMSKeep(boxes (B, N, 4)): indices (B, max_output) and count (B,), as NeoMeg's op. F.vision.nms
// writes its Argsort and gathers around it, and cuts the indices by the count with a Subtensor
// whose end is computed (mge_oprs_shape.cpp's computed_prefix).
Outs nms_keep(Converter& c, const fbs::Operator& op, Inputs in) {
    require(in.size() == 1, str_cat("takes 1 input, the file gives ", in.size()));
    const auto& p = param_of<fbs::NMSKeep>(op, fbs::OperatorParam::NMSKeep);
    dnn::param::NMSKeep q;
    q.iou_thresh = p.iou_thresh();
    q.max_output = p.max_output();
    return c.insert(ops::NMSKeep(q), in);
}

}  // namespace

void add_resample_conversions(ConversionTable& t) {
    for (const char* n : {"Resize", "ResizeV1", "ResizeV2", "ResizeForward"})
        t[n] = resize;
    for (const char* n :
         {"WarpPerspective", "WarpPerspectiveV1", "WarpPerspectiveV2", "WarpPerspectiveForward"})
        t[n] = warp_perspective;
    for (const char* n : {"Padding", "PaddingForward"})
        t[n] = padding;
    // ROIAlignV1 is MegEngine 1.13's registry name (its param's format is Convolution's newer
    // enum; NCHW is 0 in both).
    for (const char* n : {"ROIAlign", "ROIAlignV1", "ROIAlignForward"})
        t[n] = roi_align;
    for (const char* n : {"ROIPooling", "ROIPoolingForward"})
        t[n] = roi_pooling;
    // NMSKeepMGB is the name MegEngine registers it under (nms_opr.cpp's MGB_SEREG_OPR).
    for (const char* n : {"NMSKeep", "NMSKeepMGB"})
        t[n] = nms_keep;
}

}  // namespace neomeg::serialization::mge
