// TypeCvt on x86: the dtype pairs type_cvt_hwy.cpp and type_cvt_quant_hwy.cpp vectorise, and a
// copy where src and dst are of one integer or bool dtype, for src and dst whose rows are dense
// (contiguous tensors, padded or reversed outer axes; see dense_rows.h). Large tensors split across
// OpenMP threads. Complex dtypes, quantized pairs type_cvt_quant_hwy.cpp lacks, broadcast sources
// and layouts without a unit-stride run go to naive.
#include <array>
#include <cstring>
#include <optional>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/x86/dense_rows.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/type_cvt_hwy.h"
#include "src/x86/type_cvt_quant_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

class TypeCvtImpl final : public LoopKernel<TypeCvt> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        DType from = src.layout.dtype, to = dst.layout.dtype;
        // Same integer or bool dtype: a copy (float dtypes convert, as naive makes NaNs quiet;
        // a quantized one too, since naive's float32 value of a large QuantizedS32 is rounded).
        bool copy = from == to && !from.is_float() && !from.is_quantized();
        bool quantized = quantized_cvt_supported(from, to);
        std::optional<Rows> rows;
        if ((copy || quantized || type_cvt_supported(from, to)) && !dst.layout.is_empty()) {
            std::array<TensorLayout, 2> layouts = {src.layout, dst.layout};
            rows = rows_of(layouts);
        }
        // A broadcast source row would need a fill, not a conversion.
        if (!rows || rows->broadcast[0]) {
            run_naive(inputs, outputs, ws);
            return;
        }
        parallel_for_rows(*rows, [&](size_t b, size_t e) {
            for_each_run(*rows, b, e, [&](std::span<const ptrdiff_t> off, size_t n) {
                const void* s = element_at(src.raw_ptr(), off[0], from.size());
                void* d = element_at(dst.raw_ptr(), off[1], to.size());
                if (copy)
                    std::memcpy(d, s, n * from.size());
                else if (quantized)
                    quantized_cvt_run(from, to, s, d, n);
                else
                    type_cvt_run(from, to, s, d, n);
            });
        });
        m_last = copy ? "copy" : "hwy";
    }
};

}  // namespace
NM_REGISTER_X86(TypeCvt, TypeCvtImpl);
}  // namespace neomeg::dnn::x86
