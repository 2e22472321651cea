// Which kernel an x86 operator ran last: "onednn:<implementation>" (onednn:gemm:jit,
// onednn:jit:avx2, ...) or "naive" when it delegated to the reference kernel. Tests use it to show
// that the fast path ran; it needs no oneDNN header.
#pragma once

namespace neomeg::dnn::x86 {

class KernelReport {
public:
    virtual ~KernelReport() = default;
    // Empty before the first exec.
    virtual const char* last_kernel() const = 0;
};

}  // namespace neomeg::dnn::x86
