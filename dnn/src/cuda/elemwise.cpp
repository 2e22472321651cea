// Elemwise on the CUDA handle: every mode and dtype, inputs broadcast through stride-0 axes and
// read through any strides, contiguous aligned tensors in 128-bit accesses (kernels/elemwise.cu;
// last_kernel() says "cuda(vector)" for those).
#include "src/common/elemwise.h"
#include "neomeg/dnn/operators/elemwise.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

using Mode = dnn::elemwise::Mode;

#define NM_CB(m) \
    static_assert(static_cast<uint32_t>(kern::EwMode::m) == static_cast<uint32_t>(Mode::m));
NM_CUDA_ELEMWISE_MODES(NM_CB)
#undef NM_CB
static_assert(param::Elemwise::kModeCount == static_cast<size_t>(kern::EwMode::PRELU) + 1);
static_assert(dnn::elemwise::max_arity() <= kern::kMaxArity);

class ElemwiseImpl final : public CudaKernel<Elemwise> {
public:
    using CudaKernel<Elemwise>::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }

    const char* run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                    Workspace) override {
        const TensorND& dst = outputs[0];
        Mode mode = m_param.mode;
        std::vector<TensorLayout> layouts{dst.layout};
        for (auto& t : inputs)
            layouts.push_back(t.layout.broadcast(dst.layout));
        auto collapsed = collapse_jointly(layouts);
        kern::ElemwiseArgs args{};
        args.mode = static_cast<kern::EwMode>(mode);
        args.arity = static_cast<int>(inputs.size());
        DType data = inputs[dnn::elemwise::data_input(mode)].layout.dtype;
        args.in_float = dnn::elemwise::computes_in_float(mode, data);
        args.data_bits = static_cast<int>(data.size() * 8);
        for (size_t i = 0; i < inputs.size(); ++i) {
            args.src[i] = inputs[i].raw_ptr();
            args.src_dt[i] = to_kern(inputs[i].layout.dtype);
            args.src_layout[i] = collapsed[i + 1];
        }
        args.dst = dst.raw_ptr();
        args.dst_dt = to_kern(dst.layout.dtype);
        args.dst_layout = collapsed[0];
        args.nr_elems = static_cast<int64_t>(dst.layout.total_nr_elems());
        return kern::elemwise(args, stream()) > 1 ? "cuda(vector)" : "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(Elemwise, ElemwiseImpl);
}  // namespace neomeg::dnn::cuda
