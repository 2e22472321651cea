// GroupNormForward and GroupNormBackward on x86: float32 with every tensor contiguous. The
// forward splits the (sample, group) runs across OpenMP threads, each run's moments summed in
// double vector lanes (group_norm_hwy.h; naive's formulas, another summation order); the backward
// keeps naive's arithmetic (double, the same summation orders, so bit for bit its results) over
// raw pointers, splitting the runs for grad, and the channels for dweight/dbias, each channel
// summing its samples in naive's order. Other dtypes and strided tensors go to naive.
#include <cmath>
#include <vector>

#include "neomeg/dnn/operators/norm.h"
#include "src/x86/group_norm_hwy.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

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
        parallel_ranges(g.count, g.count * g.size * 3, kParallelGrain, [&](size_t lo, size_t hi) {
            group_norm_runs(f32(in[0]), w, b, f32_out(out[0]), f32_out(out[1]), f32_out(out[2]), lo,
                            hi, g.group, g.cpg, g.spatial, double(m_param.eps));
        });
        m_last = "loop";
    }
};

class GroupNormBackwardImpl final : public LoopKernel<GroupNormBackward> {
public:
    using LoopKernel::LoopKernel;

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
        float* dx = f32_out(out[0]);
        // grad: rstd * (gr - mean(gr) - xhat * mean(gr * xhat)), gr = dy * weight, per run.
        parallel_ranges(g.count, g.count * g.size * 4, kParallelGrain, [&](size_t lo, size_t hi) {
            std::vector<double> gr(g.size), xhat(g.size);
            for (size_t r = lo; r < hi; ++r) {
                double mu = mean[r], rs = rstd[r], g_mean = 0, gx_mean = 0;
                size_t base = r * g.size, c0 = (r % g.group) * g.cpg;
                for (size_t k = 0; k < g.size; ++k) {
                    double dyk = dy[base + k];
                    xhat[k] = (double(x[base + k]) - mu) * rs;
                    gr[k] = w ? dyk * double(w[c0 + k / g.spatial]) : dyk;
                    g_mean += gr[k];
                    gx_mean += gr[k] * xhat[k];
                }
                if (g.size) {
                    g_mean /= double(g.size);
                    gx_mean /= double(g.size);
                }
                for (size_t k = 0; k < g.size; ++k)
                    dx[base + k] = static_cast<float>(rs * (gr[k] - g_mean - xhat[k] * gx_mean));
            }
        });
        if (!w) {
            m_last = "loop";
            return;
        }
        // dweight, dbias: channel c sums its samples in order, each over its spatial elements.
        float *dw = f32_out(out[1]), *db = f32_out(out[2]);
        size_t samples = g.count / g.group;
        parallel_ranges(g.channels, g.count * g.size, kParallelGrain, [&](size_t lo, size_t hi) {
            for (size_t c = lo; c < hi; ++c) {
                double sw = 0, sb = 0;
                for (size_t n = 0; n < samples; ++n) {
                    size_t r = n * g.group + c / g.cpg;
                    size_t base = r * g.size + (c % g.cpg) * g.spatial;
                    double mu = mean[r], rs = rstd[r];
                    for (size_t s = 0; s < g.spatial; ++s) {
                        double dyk = dy[base + s];
                        sw += dyk * ((double(x[base + s]) - mu) * rs);
                        sb += dyk;
                    }
                }
                dw[c] = static_cast<float>(sw);
                db[c] = static_cast<float>(sb);
            }
        });
        m_last = "loop";
    }
};

}  // namespace
NM_REGISTER_X86(GroupNormForward, GroupNormForwardImpl);
NM_REGISTER_X86(GroupNormBackward, GroupNormBackwardImpl);
}  // namespace neomeg::dnn::x86
