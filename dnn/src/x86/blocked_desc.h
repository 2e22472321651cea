// ChannelBlock's layout (src/common/channel_blocked.h) in oneDNN's terms: a dense
// (N, ceil(C/block), spatial..., block) tensor is oneDNN's nCw<b>c / nChw<b>c / nCdhw<b>c memory
// of dims (N, C, spatial...), whose padded channels it keeps at zero.
#pragma once

#include "src/common/channel_blocked.h"
#include "src/x86/dnnl_util.h"

namespace neomeg::dnn::x86 {

// The descriptor of a blocked tensor with `channels` real channels, or nullopt where oneDNN has no
// tag for it (a block other than 4, 8 or 16, a spatial rank outside 1 to 3, a dtype it lacks).
std::optional<memory::desc> blocked_desc(const TensorLayout& blocked, size_t channels);

// An operand over a blocked tensor: staged into a dense copy when its layout is strided.
Operand blocked_operand(const TensorLayout& blocked, size_t channels);

}  // namespace neomeg::dnn::x86
