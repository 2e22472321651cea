#include "src/x86/elemwise_lowp.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include "src/x86/elemwise_lowp_hwy.h"
#include "src/x86/type_cvt_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

// Elements per chunk: the widened operands and result (up to 5 * 4 KiB) stay in L1.
constexpr size_t kChunk = 1024;
constexpr size_t kMaxInputs = 4;

bool is_lowp(DType dt) {
    return dt == dtype::Float16 || dt == dtype::BFloat16;
}

}  // namespace

bool elemwise_lowp_supported(elemwise::Mode mode, DType data, DType dst) {
    // COND reads a bool condition beside its data: not a float -> float mode.
    return is_lowp(data) && dst == data && elemwise::data_input(mode) == 0 &&
           elemwise_f32_supported(mode);
}

void elemwise_lowp_run(elemwise::Mode mode, DType dt, const ElemwiseSrc* srcs, void* dst,
                       size_t n) {
    if (elemwise_lowp_fused(mode, dt, srcs, dst, n))
        return;
    size_t arity = static_cast<size_t>(elemwise::arity(mode));
    alignas(64) float wide[kMaxInputs][kChunk];
    alignas(64) float out[kChunk];
    std::array<ElemwiseSrc, kMaxInputs> f32{};
    // A broadcast operand is widened once, outside the chunk loop.
    for (size_t k = 0; k < arity; ++k)
        if (srcs[k].broadcast) {
            type_cvt_run(dt, dtype::Float32, srcs[k].p, wide[k], 1);
            f32[k] = {wide[k], true};
        } else {
            f32[k] = {wide[k], false};
        }
    auto* dst16 = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; i += kChunk) {
        size_t len = std::min(kChunk, n - i);
        for (size_t k = 0; k < arity; ++k)
            if (!srcs[k].broadcast)
                type_cvt_run(dt, dtype::Float32, static_cast<const uint16_t*>(srcs[k].p) + i,
                             wide[k], len);
        elemwise_run(mode, dtype::Float32, dtype::Float32, f32.data(), out, len);
        type_cvt_run(dtype::Float32, dt, out, dst16 + i, len);
    }
}

}  // namespace neomeg::dnn::x86
