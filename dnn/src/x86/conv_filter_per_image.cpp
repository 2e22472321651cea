#include "src/x86/conv_filter_per_image.h"

#include <omp.h>

#include <string>

#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

// `image`, a plan for one image, run on each image's view of src and diff. The first image writes
// the caller's gradient; each later one writes a dense gradient in the workspace, after the image
// plan's own buffers, which is added to it.
class PerImagePlan final : public Plan {
public:
    PerImagePlan(std::unique_ptr<Plan> image, size_t batch, TensorLayout src, TensorLayout diff,
                 TensorLayout grad)
        : m_image(std::move(image)),
          m_batch(batch),
          m_src(src),
          m_diff(diff),
          m_grad(grad),
          m_name(std::string(m_image->name()) + " per image") {
        WorkspacePlan ws;
        ws.add(m_image->workspace_in_bytes());
        m_sum_off = ws.add(grad.access_bytes());
        m_ws = ws.total();
    }
    size_t workspace_in_bytes() const override { return m_ws; }
    size_t scratchpad_in_bytes() const override { return m_image->scratchpad_in_bytes(); }
    const char* name() const override { return m_name.c_str(); }

    void run(std::span<const TensorND> tensors, Workspace ws, dnnl::stream& stream) override {
        auto* src = static_cast<char*>(tensors[0].raw_ptr());
        auto* diff = static_cast<char*>(tensors[1].raw_ptr());
        auto* grad = static_cast<float*>(tensors[2].raw_ptr());
        auto* sum = reinterpret_cast<float*>(ws.ptr + m_sum_off);
        const size_t src_image = m_src.dtype.size(m_src.stride[0]);
        const size_t diff_image = m_diff.dtype.size(m_diff.stride[0]);
        const size_t n = m_grad.total_nr_elems();
        TensorLayout s = m_src, d = m_diff;
        s[0] = d[0] = 1;
        for (size_t i = 0; i < m_batch; ++i) {
            const TensorND part[] = {TensorND(src + i * src_image, s),
                                     TensorND(diff + i * diff_image, d),
                                     TensorND(i == 0 ? grad : sum, m_grad)};
            m_image->run(part, ws, stream);
            if (i == 0)
                continue;
            parallel_ranges(n, n, kParallelGrain, [&](size_t b, size_t e) {
                for (size_t k = b; k < e; ++k)
                    grad[k] += sum[k];
            });
        }
    }

private:
    std::unique_ptr<Plan> m_image;
    size_t m_batch;
    TensorLayout m_src, m_diff, m_grad;
    size_t m_sum_off = 0, m_ws = 0;
    std::string m_name;
};

size_t pixels_per_image(const TensorLayout& l) {
    size_t n = 1;
    for (size_t d = 2; d < l.ndim; ++d)
        n *= l[d];
    return n;
}

}  // namespace

bool pointwise_filter_per_image(const ConvDims& g, std::span<const TensorLayout> in,
                                std::span<const TensorLayout> out) {
    const TensorLayout &src = in[0], &diff = in[1], &grad = out[0];
    const size_t pixels = pixels_per_image(src);
    if (!g.pointwise || src[0] < 2 || pixels < kMinFilterPerImagePixels || !has_avx512_core())
        return false;
    if (omp_get_max_threads() > 1 && (src[1] + diff[1]) * pixels < kMinFilterPerImageFloatsThreaded)
        return false;
    for (const TensorLayout* l : {&src, &diff, &grad})
        if (l->dtype != dtype::Float32 || !l->is_contiguous())
            return false;
    return true;
}

std::unique_ptr<Plan> per_image_filter_plan(std::span<const TensorLayout> in,
                                            std::span<const TensorLayout> out,
                                            const FilterGradPlanner& make) {
    TensorLayout s = in[0], d = in[1];
    s[0] = d[0] = 1;
    s.init_contiguous_stride();
    d.init_contiguous_stride();
    const TensorLayout image[] = {s, d};
    auto plan = make(image, out);
    if (!plan)
        return nullptr;
    return std::make_unique<PerImagePlan>(std::move(plan), in[0][0], in[0], in[1], out[0]);
}

}  // namespace neomeg::dnn::x86
