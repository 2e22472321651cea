// Backward rules of the image-geometry ops (dnn/ops/defs/vision.py): WarpPerspective's gradients
// for src (WarpPerspectiveBackwardData, the adjoint of the warp) and for mat
// (WarpPerspectiveBackwardMat); mat_idx has none. The backward ops have no rules of their own,
// so second derivatives of a warp are not available.
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

}  // namespace

NM_REGISTER_GRAD(WarpPerspective, warp_perspective_grad, true, false);

}  // namespace neomeg::imperative
