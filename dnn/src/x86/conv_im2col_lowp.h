// bfloat16 2-D convolutions whose output rows are short, as one matrix product over the im2col
// matrix (oneDNN's AMX matmul) instead of oneDNN 2.6's direct kernels. Those kernels put output
// pixels of one row along an AMX tile's 16 rows, so a 4-pixel row leaves three quarters of each
// tile empty; the im2col matrix has N*OH*OW rows whatever the width. Raw primitives, one thread,
// CIFAR ResNet-18 at batch 32 on channels-last memory (docs/x86-backend-log.md, "Short output
// rows", has the table):
// 512->512 at 4x4, direct 5.4/6.8/14.2 ms (forward, input gradient, filter gradient) against
// matmuls of 2.6/1.9/2.2 ms; 256->512 stride 2 from 8x8, 2.1/4.8/13.0 against 1.0/1.0/1.2 ms;
// the filter gradient of 256->256 at 8x8, 5.5 against 3.2 ms. At 16x16 and 32x32 the direct
// kernels win (1.1-1.5 ms against 2-3 ms forward), and so keep those shapes.
//
// The plans work on channels-last (NHWC-dense) data, which autocast gives every 16-bit
// convolution of 32 or more output channels in eager mode: the im2col rows are then channel runs
// copied whole, the output matrix is dst itself (forward), and the gradient matrix is diff
// itself. Other layouts (a traced graph's row-major tensors) are copied into that order and back
// by the tiled relayout, which costs little beside the product on these small images. The filter,
// any strides, is copied into OHWI order per call (a training step's weights are new each step; the
// direct kernels reorder them per call too) unless it lies so already. Accumulation is float32
// throughout and each output is rounded once: the input gradient sums its taps from a float32
// product, the filter gradient comes out of the product in float32.
#pragma once

#include <memory>

#include "src/x86/conv_algo.h"

namespace neomeg::dnn::x86 {

// Whether the rule sends this pass of the convolution (src, filter, dst: the tensors in those
// roles, as conv_geometry takes them) to im2col + matmul: bfloat16, 2-D, one group, no dilation,
// the cross-correlation mode, a filter larger than 1x1, at least 16 channels in and out, and
// output rows of at most 4 pixels (forward, input gradient) or 8 (filter gradient); with a stride
// above 1 also the filter gradient at any width and the input gradient up to 8 pixels (at 16 its
// sum over the taps cost more than it saved).
bool im2col_lowp_chosen(ConvPass pass, const ConvDims& g, const TensorLayout& src,
                        const TensorLayout& filter, const TensorLayout& dst);

// The plan for a case im2col_lowp_chosen takes, or nullptr where oneDNN's bfloat16 matmul is not
// an AMX kernel on this CPU (the direct kernels plan instead). Its tensors are
// the operator's: (src, filter, dst), (filter, diff, grad) or (src, diff, grad).
std::unique_ptr<Plan> im2col_lowp_plan(ConvPass pass, const dnnl::engine& engine, const ConvDims& g,
                                       const TensorLayout& src, const TensorLayout& filter,
                                       const TensorLayout& dst);

}  // namespace neomeg::dnn::x86
