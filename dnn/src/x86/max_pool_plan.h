// MAX pooling's plans that follow naive's NaN rule (a window holding a NaN has a NaN maximum, its
// first NaN, which also gets the window's gradient), where oneDNN's kernels skip NaNs:
// - the float32 and bfloat16 forward in our loops (max_pool_hwy.h) on plain NC[D]HW with unit
//   stride along W, on channels-last views and on channel-blocked tensors (other strides one
//   window at a time); bfloat16 compares as float32 (exactly) and writes the maxima's own bits;
// - the float32 and bfloat16 backward that oneDNN runs (rerun and scatter), wrapped: when dst, the
//   forward's output, holds a NaN (so some window did) or -inf (a window of nothing but -inf,
//   to which oneDNN gives no gradient where naive gives its first element one), the call takes a
//   loop of naive's rule instead.
#pragma once

#include <memory>

#include "neomeg/dnn/params/pooling.h"
#include "src/x86/dnnl_util.h"

namespace neomeg::dnn::x86 {

// The forward of MAX pooling from src into dst (NC[D]HW shapes, float32 or bfloat16), in vectors
// where the layouts have unit stride along W or adjacent channels, one window at a time otherwise.
std::unique_ptr<Plan> max_pool_forward_plan(const param::Pooling& p, const TensorLayout& src,
                                            const TensorLayout& dst);

// The forward on channel-blocked tensors (N, C / b, [D,] H, W, b), contiguous.
std::unique_ptr<Plan> max_pool_blocked_plan(const param::Pooling& p, const TensorLayout& src,
                                            const TensorLayout& dst);

// MAX pooling's backward (src, dst, diff -> grad) in our loops, naive's NaN rule kept (dst
// unread): float32 with the channels adjacent (channels-last, blocked seen as planes), windows
// that tile the plane or are 3x3/2 pad 1, bfloat16 so for 3x3/2 pad 1
// (max_pool_lanes_backward_hwy.h), and float32 and
// bfloat16 planes with unit stride along W for 3x3/2 pad 1 (max_pool_rows_backward_hwy.h); nullptr
// for others.
std::unique_ptr<Plan> max_pool_backward_plan(const param::Pooling& p, const TensorLayout& src,
                                             const TensorLayout& diff, const TensorLayout& grad);

// `inner`, MAX pooling's backward (src, dst, diff -> grad), run unless dst (the forward's output)
// holds a NaN or -inf, where a loop of naive's rule runs instead.
std::unique_ptr<Plan> nan_checked_max_backward(std::unique_ptr<Plan> inner, const param::Pooling& p,
                                               const TensorLayout& src, const TensorLayout& dst,
                                               const TensorLayout& diff, const TensorLayout& grad);

}  // namespace neomeg::dnn::x86
