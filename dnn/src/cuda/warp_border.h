// The kernels' border mode (kernels/args.h) of a Remap or WarpPerspective param's BorderMode:
// both enums have OpenCV's five members, in the kernels' order.
#pragma once

#include "src/cuda/kernels/args.h"

namespace neomeg::dnn::cuda {

template <class Mode>
kern::WarpBorder warp_border(Mode m) {
    using B = kern::WarpBorder;
    static_assert(static_cast<uint32_t>(B::REPLICATE) == static_cast<uint32_t>(Mode::REPLICATE));
    static_assert(static_cast<uint32_t>(B::REFLECT) == static_cast<uint32_t>(Mode::REFLECT));
    static_assert(static_cast<uint32_t>(B::REFLECT_101) ==
                  static_cast<uint32_t>(Mode::REFLECT_101));
    static_assert(static_cast<uint32_t>(B::WRAP) == static_cast<uint32_t>(Mode::WRAP));
    static_assert(static_cast<uint32_t>(B::CONSTANT) == static_cast<uint32_t>(Mode::CONSTANT));
    return static_cast<B>(m);
}

}  // namespace neomeg::dnn::cuda
