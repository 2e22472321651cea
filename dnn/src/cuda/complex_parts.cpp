// CreateComplex and ComplexPart on the CUDA handle: float32 copies (kernels/copy.cu) between a
// complex64 tensor's part views (src/common/complex_view.h) and the float32 parts.
#include "neomeg/dnn/operators/elemwise.h"
#include "src/common/complex_view.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

// dst = src, both float32 of one shape (src possibly broadcast).
void copy_float32(const TensorND& src, const TensorND& dst, cudaStream_t stream) {
    auto c = collapse_jointly({src.layout, dst.layout});
    kern::convert(src.raw_ptr(), kern::DT::Float32, c[0], dst.raw_ptr(), kern::DT::Float32, c[1],
                  static_cast<int64_t>(dst.layout.total_nr_elems()), stream);
}

class CreateComplexImpl final : public CudaKernel<CreateComplex> {
public:
    using CudaKernel<CreateComplex>::CudaKernel;

private:
    bool takes_complex() const override { return true; }
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                    Workspace) override {
        const TensorND& dst = outputs[0];
        for (int part = 0; part < 2; ++part) {
            const TensorND& src = inputs[part];
            copy_float32(TensorND(src.raw_ptr(), src.layout.broadcast(dst.layout)),
                         complex_part_view(dst, part), stream());
        }
        return "cuda";
    }
};

class ComplexPartImpl final : public CudaKernel<ComplexPart> {
public:
    using CudaKernel<ComplexPart>::CudaKernel;

private:
    bool takes_complex() const override { return true; }
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                    Workspace) override {
        int part = m_param.part == Param::Part::REAL ? 0 : 1;
        copy_float32(complex_part_view(inputs[0], part), outputs[0], stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(CreateComplex, CreateComplexImpl);
NM_REGISTER_CUDA(ComplexPart, ComplexPartImpl);
}  // namespace neomeg::dnn::cuda
