#include "src/cuda/layout_util.h"

#include <string>

#include "neomeg/dnn/errors.h"

namespace neomeg::dnn::cuda {

#define NM_CB(e, t, n) \
    static_assert(static_cast<int>(kern::DT::e) == static_cast<int>(DTypeEnum::e));
NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB

kern::DT to_kern(DType dt) {
    // The frame (kernel.h) keeps such tensors from the kernels that would ask.
    if (dt.is_quantized() || dt.is_complex())
        throw UnsupportedDTypeError(std::string("no CUDA launcher dtype for ") + dt.name());
    return static_cast<kern::DT>(dt.enumv());
}

kern::DT storage_kern(DType dt) {
    return to_kern(dt.is_quantized() ? dt.storage() : dt);
}

std::vector<kern::Strided> collapse_jointly(const std::vector<TensorLayout>& layouts) {
    const TensorShape& shape = layouts.at(0);
    // Axes kept, outermost first: (size, stride per layout).
    std::vector<size_t> sizes;
    std::vector<std::vector<ptrdiff_t>> strides(layouts.size());
    for (size_t d = 0; d < shape.ndim; ++d) {
        if (shape[d] == 1)
            continue;
        bool merge = !sizes.empty();
        for (size_t k = 0; k < layouts.size() && merge; ++k)
            merge = strides[k].back() == layouts[k].stride[d] * static_cast<ptrdiff_t>(shape[d]);
        if (merge) {
            sizes.back() *= shape[d];
            for (size_t k = 0; k < layouts.size(); ++k)
                strides[k].back() = layouts[k].stride[d];
        } else {
            sizes.push_back(shape[d]);
            for (size_t k = 0; k < layouts.size(); ++k)
                strides[k].push_back(layouts[k].stride[d]);
        }
    }
    std::vector<kern::Strided> out(layouts.size());
    for (size_t k = 0; k < layouts.size(); ++k) {
        out[k].ndim = static_cast<int>(sizes.size());
        for (size_t d = 0; d < sizes.size(); ++d) {
            out[k].shape[d] = static_cast<int64_t>(sizes[d]);
            out[k].stride[d] = strides[k][d];
        }
    }
    return out;
}

bool dense_float32(std::span<const TensorLayout> inputs, std::span<const TensorLayout> outputs) {
    for (auto ls : {inputs, outputs})
        for (const TensorLayout& l : ls)
            if (l.dtype != dtype::Float32 || !l.is_contiguous())
                return false;
    return true;
}

}  // namespace neomeg::dnn::cuda
