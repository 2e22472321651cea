// FakeQuant, TQT, LSQ and their backward operators on the CUDA handle (kernels/fake_quant.cu):
// every operand is broadcast to src's shape, so one elementwise walk serves all six.
#include "neomeg/dnn/operators/quantization.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

template <class Op, kern::FakeQuantKind kKind, size_t kSrcIndex>
class FakeQuantFamilyImpl final : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorLayout& src = in[kSrcIndex].layout;
        std::vector<TensorLayout> layouts;
        for (const TensorND& t : in)
            layouts.push_back(t.layout.broadcast(src));
        for (const TensorND& t : out)
            layouts.push_back(t.layout);
        auto c = collapse_jointly(layouts);
        kern::FakeQuantArgs a{};
        a.kind = kKind;
        a.nr_in = static_cast<int>(in.size());
        a.nr_out = static_cast<int>(out.size());
        for (size_t k = 0; k < in.size(); ++k) {
            a.in[k] = in[k].raw_ptr();
            a.in_dt[k] = to_kern(in[k].layout.dtype);
            a.in_layout[k] = c[k];
        }
        for (size_t k = 0; k < out.size(); ++k) {
            a.out[k] = out[k].raw_ptr();
            a.out_layout[k] = c[in.size() + k];
        }
        a.out_dt = to_kern(out[0].layout.dtype);
        a.qmin = static_cast<float>(this->m_param.qmin);
        a.qmax = static_cast<float>(this->m_param.qmax);
        kern::fake_quant(a, static_cast<int64_t>(src.total_nr_elems()), this->stream());
        return "cuda";
    }
};

using K = kern::FakeQuantKind;
using FakeQuantImpl = FakeQuantFamilyImpl<FakeQuant, K::FakeQuant, 0>;
using FakeQuantBackwardImpl = FakeQuantFamilyImpl<FakeQuantBackward, K::FakeQuantBackward, 1>;
using TQTImpl = FakeQuantFamilyImpl<TQT, K::TQT, 0>;
using TQTBackwardImpl = FakeQuantFamilyImpl<TQTBackward, K::TQTBackward, 1>;
using LSQImpl = FakeQuantFamilyImpl<LSQ, K::LSQ, 0>;
using LSQBackwardImpl = FakeQuantFamilyImpl<LSQBackward, K::LSQBackward, 1>;

}  // namespace
NM_REGISTER_CUDA(FakeQuant, FakeQuantImpl);
NM_REGISTER_CUDA(FakeQuantBackward, FakeQuantBackwardImpl);
NM_REGISTER_CUDA(TQT, TQTImpl);
NM_REGISTER_CUDA(TQTBackward, TQTBackwardImpl);
NM_REGISTER_CUDA(LSQ, LSQImpl);
NM_REGISTER_CUDA(LSQBackward, LSQBackwardImpl);
}  // namespace neomeg::dnn::cuda
