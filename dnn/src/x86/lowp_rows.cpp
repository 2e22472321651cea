#include "src/x86/lowp_rows.h"

#include <cstdint>

#include "src/x86/type_cvt_hwy.h"

namespace neomeg::dnn::x86 {

bool is_lowp_float(DType dt) {
    return dt == dtype::Float16 || dt == dtype::BFloat16;
}

void widen_channel(DType dt, const void* src, ChannelRows r, size_t c, float* buf) {
    const auto* s = static_cast<const uint16_t*>(src) + c * r.len;
    for (size_t n = 0; n < r.rows; ++n)
        type_cvt_run(dt, dtype::Float32, s + n * r.row_stride, buf + n * r.len, r.len);
}

void narrow_channel(DType dt, const float* buf, ChannelRows r, size_t c, void* dst) {
    auto* d = static_cast<uint16_t*>(dst) + c * r.len;
    for (size_t n = 0; n < r.rows; ++n)
        type_cvt_run(dtype::Float32, dt, buf + n * r.len, d + n * r.row_stride, r.len);
}

}  // namespace neomeg::dnn::x86
