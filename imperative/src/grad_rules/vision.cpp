// Backward rules of the image-geometry ops (dnn/ops/defs/vision.py): WarpPerspective's gradients
// for src (WarpPerspectiveBackwardData, the adjoint of the warp) and for mat
// (WarpPerspectiveBackwardMat), mat_idx having none; Remap's likewise (RemapBackwardData,
// RemapBackwardMat); ROIAlign's and ROIPooling's for src (their Backward ops, with the forward's
// argmax index, a saved output), the rois having none (MegEngine's rule); Correlation's for both
// data (CorrelationBackwardData1, CorrelationBackwardData2); DeformablePSROIPooling's for src and
// trans (its Backward op, with the forward's saved count), the rois having none. The backward
// ops have no rules of their own, so second derivatives are not available.
#include "neomeg/op/defs/vision.h"
#include "neomeg/imperative/op_def.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

std::vector<Tensor> warp_perspective_grad(const OpDef& def, std::span<const Tensor> x,
                                          std::span<const Tensor>, std::span<const Tensor> dy,
                                          std::span<const bool> needs) {
    const auto& p = static_cast<const ops::WarpPerspective&>(def).param();
    const Tensor &src = x[0], &mat = x[1], &mat_idx = x[2];
    std::vector<Tensor> grads(3);
    if (needs[0]) {
        // BackwardData cannot deduce its grad shape from diff: src's shape is preset.
        dnn::TensorShape shape = src.shape();
        Tensor in[] = {mat, mat_idx, dy[0]};
        grads[0] = imperative::apply(ops::WarpPerspectiveBackwardData(p), in, {&shape, 1})[0];
    }
    if (needs[1]) {
        Tensor in[] = {src, mat, mat_idx, dy[0]};
        grads[1] = imperative::apply(ops::WarpPerspectiveBackwardMat(p), in)[0];
    }
    return grads;
}

std::vector<Tensor> remap_grad(const OpDef& def, std::span<const Tensor> x, std::span<const Tensor>,
                               std::span<const Tensor> dy, std::span<const bool> needs) {
    const auto& p = static_cast<const ops::Remap&>(def).param();
    const Tensor &src = x[0], &map_xy = x[1];
    std::vector<Tensor> grads(2);
    if (needs[0]) {
        dnn::TensorShape shape = src.shape();
        Tensor in[] = {map_xy, dy[0]};
        grads[0] = imperative::apply(ops::RemapBackwardData(p), in, {&shape, 1})[0];
    }
    if (needs[1]) {
        Tensor in[] = {src, map_xy, dy[0]};
        grads[1] = imperative::apply(ops::RemapBackwardMat(p), in)[0];
    }
    return grads;
}

// ROIAlign and ROIPooling (outputs: dst, index): the Backward op of the same params scatters dy
// through the saved index onto src's shape.
template <class Forward, class Backward>
std::vector<Tensor> roi_grad(const OpDef& def, std::span<const Tensor> x, std::span<const Tensor> y,
                             std::span<const Tensor> dy, std::span<const bool> needs) {
    std::vector<Tensor> grads(2);
    if (!needs[0])
        return grads;
    const auto& p = static_cast<const Forward&>(def).param();
    dnn::TensorShape shape = x[0].shape();
    Tensor in[] = {dy[0], x[1], y[1]};
    grads[0] = imperative::apply(Backward(p), in, {&shape, 1})[0];
    return grads;
}

std::vector<Tensor> correlation_grad(const OpDef& def, std::span<const Tensor> x,
                                     std::span<const Tensor>, std::span<const Tensor> dy,
                                     std::span<const bool> needs) {
    const auto& p = static_cast<const ops::Correlation&>(def).param();
    std::vector<Tensor> grads(2);
    Tensor in[] = {dy[0], x[0], x[1]};
    if (needs[0])
        grads[0] = imperative::apply(ops::CorrelationBackwardData1(p), in)[0];
    if (needs[1])
        grads[1] = imperative::apply(ops::CorrelationBackwardData2(p), in)[0];
    return grads;
}

// Outputs (dst, count): the Backward op divides dy by the saved count. With no_trans, trans gets
// no gradient (MegEngine's rule), not zeros.
std::vector<Tensor> deformable_psroi_pooling_grad(const OpDef& def, std::span<const Tensor> x,
                                                  std::span<const Tensor> y,
                                                  std::span<const Tensor> dy,
                                                  std::span<const bool> needs) {
    std::vector<Tensor> grads(3);
    if (!needs[0] && !needs[2])
        return grads;
    const auto& p = static_cast<const ops::DeformablePSROIPooling&>(def).param();
    Tensor in[] = {x[0], x[1], x[2], dy[0], y[1]};
    auto g = imperative::apply(ops::DeformablePSROIPoolingBackward(p), in);
    if (needs[0])
        grads[0] = g[0];
    if (needs[2] && !p.no_trans)
        grads[2] = g[1];
    return grads;
}

}  // namespace

NM_REGISTER_GRAD(Correlation, correlation_grad);
NM_REGISTER_GRAD(DeformablePSROIPooling, deformable_psroi_pooling_grad);
NM_REGISTER_GRAD(WarpPerspective, warp_perspective_grad);
NM_REGISTER_GRAD(Remap, remap_grad);
NM_REGISTER_GRAD(ROIAlign, (roi_grad<ops::ROIAlign, ops::ROIAlignBackward>));
NM_REGISTER_GRAD(ROIPooling, (roi_grad<ops::ROIPooling, ops::ROIPoolingBackward>));

}  // namespace neomeg::imperative
