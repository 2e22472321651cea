// GroupNormForward and GroupNormBackward on x86: float32 with every tensor contiguous, our float
// lane loops (group_norm_hwy.h) over the (sample, group) runs split across OpenMP threads. The
// backward leaves each (sample, channel)'s sums in the workspace and then adds them per channel
// in sample order for dweight/dbias, the channels split across threads: the results do not
// depend on the thread count. Other dtypes and strided tensors go to naive.
#include <algorithm>

#include "neomeg/dnn/operators/norm.h"
#include "src/x86/group_norm_hwy.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/stream_copy_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

// Each (sample, group) is one run of `size` = channels_per_group * spatial elements.
struct Groups {
    size_t count, size, spatial, cpg, group, channels;
};

Groups groups_of(const TensorLayout& src, uint32_t group) {
    size_t spatial = 1;
    for (size_t i = 2; i < src.ndim; ++i)
        spatial *= src[i];
    size_t cpg = src[1] / group;
    return {src[0] * group, cpg * spatial, spatial, cpg, group, src[1]};
}

bool all_float32_contiguous(std::span<const TensorND> a, std::span<const TensorND> b) {
    for (auto s : {a, b})
        for (const TensorND& t : s)
            if (t.layout.dtype != dtype::Float32 || !t.layout.is_contiguous())
                return false;
    return true;
}

const float* f32(const TensorND& t) {
    return static_cast<const float*>(t.raw_ptr());
}
float* f32_out(const TensorND& t) {
    return static_cast<float*>(t.raw_ptr());
}

class GroupNormForwardImpl final : public LoopKernel<GroupNormForward> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out,
                 Workspace ws) override {
        if (!all_float32_contiguous(in, out)) {
            run_naive(in, out, ws);
            return;
        }
        Groups g = groups_of(in[0].layout, m_param.group);
        const float* w = m_param.affine ? f32(in[1]) : nullptr;
        const float* b = m_param.affine ? f32(in[2]) : nullptr;
        const bool stream = g.count * g.size * sizeof(float) >= kStreamBytes;
        parallel_ranges(g.count, g.count * g.size * 3, kParallelGrain, [&](size_t lo, size_t hi) {
            group_norm_runs(f32(in[0]), w, b, f32_out(out[0]), f32_out(out[1]), f32_out(out[2]), lo,
                            hi, g.group, g.cpg, g.spatial, double(m_param.eps), stream);
        });
        m_last = "loop";
    }
};

class GroupNormBackwardImpl final : public LoopKernel<GroupNormBackward> {
public:
    using LoopKernel::LoopKernel;

    // Each (sample, channel)'s sum(dy) and sum(dy * xhat), in double.
    size_t get_workspace_in_bytes(std::span<const TensorLayout> in,
                                  std::span<const TensorLayout> out) override {
        return std::max(LoopKernel::get_workspace_in_bytes(in, out),
                        2 * in[1][0] * in[1][1] * sizeof(double));
    }

protected:
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out,
                 Workspace ws) override {
        if (!all_float32_contiguous(in, out)) {
            run_naive(in, out, ws);
            return;
        }
        Groups g = groups_of(in[1].layout, m_param.group);
        const float *dy = f32(in[0]), *x = f32(in[1]), *mean = f32(in[2]), *rstd = f32(in[3]);
        const float* w = m_param.affine ? f32(in[4]) : nullptr;
        auto* sums = reinterpret_cast<double*>(ws.ptr);
        const bool stream = g.count * g.size * sizeof(float) >= kStreamBytes;
        parallel_ranges(g.count, g.count * g.size * 4, kParallelGrain, [&](size_t lo, size_t hi) {
            group_norm_grad_runs(dy, x, mean, rstd, w, f32_out(out[0]), sums, lo, hi, g.group,
                                 g.cpg, g.spatial, stream);
        });
        m_last = "loop";
        if (!w)
            return;
        // dweight, dbias: each channel's sums over the samples in sample order, whatever the
        // threads.
        float *dw = f32_out(out[1]), *db = f32_out(out[2]);
        size_t samples = g.count / g.group;
        parallel_ranges(g.channels, 2 * samples * g.channels, kParallelGrain,
                        [&](size_t lo, size_t hi) {
                            for (size_t c = lo; c < hi; ++c) {
                                double sw = 0, sb = 0;
                                for (size_t n = 0; n < samples; ++n) {
                                    sb += sums[2 * (n * g.channels + c)];
                                    sw += sums[2 * (n * g.channels + c) + 1];
                                }
                                dw[c] = static_cast<float>(sw);
                                db[c] = static_cast<float>(sb);
                            }
                        });
    }
};

}  // namespace
NM_REGISTER_X86(GroupNormForward, GroupNormForwardImpl);
NM_REGISTER_X86(GroupNormBackward, GroupNormBackwardImpl);
}  // namespace neomeg::dnn::x86
