#include "src/x86/conv_pointwise_lowp.h"

#include <cstring>
#include <string>
#include <utility>

#include "neomeg/dnn/channels_last.h"

namespace neomeg::dnn::x86 {
namespace {

class SubsampledGradPlan final : public Plan {
public:
    SubsampledGradPlan(std::unique_ptr<Plan> inner, const TensorLayout& view)
        : m_inner(std::move(inner)),
          m_view(view),
          m_name(std::string(m_inner->name()) + ":subsampled") {}

    size_t workspace_in_bytes() const override { return m_inner->workspace_in_bytes(); }
    const char* name() const override { return m_name.c_str(); }

    void run(std::span<const TensorND> tensors, Workspace ws, dnnl::stream& stream) override {
        const TensorND& grad = tensors[2];
        // Dense (subsampled_grad checked): the positions the view skips are zeros.
        std::memset(grad.raw_ptr(), 0, grad.layout.total_nr_elems() * grad.layout.dtype.size());
        const TensorND call[] = {tensors[0], tensors[1],
                                 TensorND(grad.raw_ptr(), m_view, grad.storage)};
        m_inner->run(call, ws, stream);
    }

private:
    std::unique_ptr<Plan> m_inner;
    TensorLayout m_view;
    std::string m_name;
};

}  // namespace

std::optional<SubsampledGrad> subsampled_grad(const TensorLayout& filter, const TensorLayout& diff,
                                              const TensorLayout& grad, const ConvDims& g) {
    bool strided = false;
    for (auto s : g.stride)
        strided |= s > 1;
    if (!strided || !pointwise_bf16(filter, g) || !(grad.is_contiguous() || is_channels_last(grad)))
        return std::nullopt;
    SubsampledGrad out{g, grad};
    for (size_t d = 2; d < grad.ndim; ++d) {
        const auto s = g.stride[d - 2];
        // A 1x1 filter without padding reads input (i * s) for output i: diff's size is how many.
        // oneDNN takes strides only when each axis's extent fits in the next larger stride,
        // which a size that the stride does not divide breaks (rows 0, 2, .., 8 of 9 span 10).
        if (diff[d] != (grad[d] - 1) / s + 1 || grad[d] % s != 0)
            return std::nullopt;
        out.view.shape[d] = diff[d];
        out.view.stride[d] = grad.stride[d] * s;
        out.g.stride[d - 2] = 1;
    }
    return out;
}

std::unique_ptr<Plan> subsampled_grad_plan(std::unique_ptr<Plan> inner, const TensorLayout& view) {
    if (!inner)
        return nullptr;
    return std::make_unique<SubsampledGradPlan>(std::move(inner), view);
}

}  // namespace neomeg::dnn::x86
