// WarpPerspective and its gradients on x86. Naive maps every output element through the matrix
// again for each channel; here each output image's source points (naive/warp_point.h, naive's
// formulas) are computed once per call and its channels reuse them, split across OpenMP threads:
// the forward by (channel, output row), the data gradient by (image, channel) plane of grad (the
// outputs warping from that image in order), the matrix gradient by output row for the per-pixel
// slopes and then summed over the pixels in naive's order. Values are summed in double in naive's
// order, so results are naive's bits; the taps are scattered reads folded by the border mode,
// which is why the loops are scalar. float32 tensors, any strides; other dtypes run naive.
#include <algorithm>
#include <limits>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/naive/indexing.h"
#include "src/naive/warp_point.h"
#include "src/x86/from_double.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"
#include "src/x86/roi_common.h"

namespace neomeg::dnn::x86 {
namespace {

using naive::warp::Sample;
using roi_x86::Nchw;
using Param = param::WarpPerspective;

// mat_idx's images, after naive's range check.
std::vector<size_t> images_of(const TensorND& mat_idx, size_t batch, const char* who) {
    naive::indexing::check_index_values(mat_idx, 0, batch, false, who);
    const auto* p = static_cast<const int32_t*>(mat_idx.raw_ptr());
    std::vector<size_t> b(mat_idx.layout[0]);
    for (size_t n = 0; n < b.size(); ++n)
        b[n] = static_cast<size_t>(p[static_cast<ptrdiff_t>(n) * mat_idx.layout.stride[0]]);
    return b;
}

// Output image n's source points, row-major over (out_h, out_w), computed across threads.
std::vector<Sample> samples_of(const Param& p, const TensorND& mat, size_t n, int64_t ih,
                               int64_t iw) {
    const TensorLayout& l = mat.layout;
    const auto* mp = static_cast<const float*>(mat.raw_ptr());
    double m[9];
    for (size_t k = 0; k < 9; ++k)
        m[k] = mp[static_cast<ptrdiff_t>(n) * l.stride[0] +
                  static_cast<ptrdiff_t>(k / 3) * l.stride[1] +
                  static_cast<ptrdiff_t>(k % 3) * l.stride[2]];
    const size_t oh = p.out_h, ow = p.out_w;
    std::vector<Sample> s(oh * ow);
    parallel_ranges(oh, oh * ow * 16, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t y = b; y < e; ++y)
            for (size_t x = 0; x < ow; ++x)
                s[y * ow + x] = naive::warp::sample_of(p, m, y, x, ih, iw);
    });
    return s;
}

double tap_value(const Param& p, const float* plane, const Nchw& sp, const Sample& s, int i,
                 int j) {
    if (s.row[i] < 0 || s.col[j] < 0)
        return p.border_val;
    return plane[sp.at(s.row[i], s.col[j])];
}

class WarpPerspectiveImpl final : public LoopKernel<WarpPerspective> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (!roi_x86::all_float32(inputs, outputs)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        m_last = "loop";
        const TensorND &src = inputs[0], &mat = inputs[1], &dst = outputs[0];
        auto images = images_of(inputs[2], src.layout[0], "WarpPerspective");
        if (dst.layout.is_empty())
            return;
        const auto ih = static_cast<int64_t>(src.layout[2]);
        const auto iw = static_cast<int64_t>(src.layout[3]);
        const size_t channels = dst.layout[1], oh = dst.layout[2], ow = dst.layout[3];
        const Nchw sp(src.layout), dp(dst.layout);
        const auto* in = static_cast<const float*>(src.raw_ptr());
        auto* out = static_cast<float*>(dst.raw_ptr());
        const double outside = m_param.bmode == Param::BorderMode::CONSTANT
                                       ? static_cast<double>(m_param.border_val)
                                       : std::numeric_limits<double>::quiet_NaN();
        for (size_t n = 0; n < dst.layout[0]; ++n) {
            const auto pts = samples_of(m_param, mat, n, ih, iw);
            parallel_ranges(
                    channels * oh, channels * oh * ow * 8, kParallelGrain, [&](size_t b, size_t e) {
                        for (size_t u = b; u < e; ++u) {
                            size_t c = u / oh, y = u % oh;
                            const float* plane = in + sp.plane(images[n], c);
                            float* row = out + dp.plane(n, c) + dp.at(static_cast<int64_t>(y), 0);
                            for (size_t x = 0; x < ow; ++x) {
                                const Sample& s = pts[y * ow + x];
                                double v = outside;
                                if (s.finite) {
                                    v = 0;
                                    for (int i = 0; i < 2; ++i)
                                        for (int j = 0; j < 2; ++j)
                                            v += s.weight(i, j) *
                                                 tap_value(m_param, plane, sp, s, i, j);
                                }
                                row[static_cast<ptrdiff_t>(x) * dp.s[3]] = from_double<float>(v);
                            }
                        }
                    });
        }
    }
};

// Each (image, channel) plane of grad sums, in double in the workspace, the contributions of the
// outputs warping from that image, in output order, then is rounded once.
class WarpPerspectiveBackwardDataImpl final : public LoopKernel<WarpPerspectiveBackwardData> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (!roi_x86::all_float32(inputs, outputs)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        m_last = "loop";
        const TensorND &mat = inputs[0], &diff = inputs[2], &grad = outputs[0];
        const size_t batch = grad.layout[0], channels = grad.layout[1];
        auto images = images_of(inputs[1], batch, "WarpPerspectiveBackwardData");
        if (grad.layout.is_empty())
            return;
        const auto ih = static_cast<int64_t>(grad.layout[2]);
        const auto iw = static_cast<int64_t>(grad.layout[3]);
        const size_t oh = diff.layout[2], ow = diff.layout[3];
        const Nchw dp(diff.layout), gp(grad.layout);
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        auto* gr = static_cast<float*>(grad.raw_ptr());
        std::vector<std::vector<Sample>> pts;
        for (size_t n = 0; n < diff.layout[0]; ++n)
            pts.push_back(samples_of(m_param, mat, n, ih, iw));
        std::vector<std::vector<size_t>> of_image(batch);
        for (size_t n = 0; n < images.size(); ++n)
            of_image[images[n]].push_back(n);
        const auto plane_n = static_cast<size_t>(ih * iw);
        auto* acc_all = reinterpret_cast<double*>(ws.ptr);
        size_t work = channels * (images.size() * oh * ow * 8 + batch * plane_n);
        parallel_ranges(batch * channels, work, kParallelGrain, [&](size_t b, size_t e) {
            for (size_t u = b; u < e; ++u) {
                size_t img = u / channels, c = u % channels;
                double* acc = acc_all + u * plane_n;
                std::fill(acc, acc + plane_n, 0.0);
                for (size_t n : of_image[img]) {
                    const float* d = dy + dp.plane(n, c);
                    for (size_t y = 0; y < oh; ++y)
                        for (size_t x = 0; x < ow; ++x) {
                            const Sample& s = pts[n][y * ow + x];
                            if (!s.finite)
                                continue;
                            double g = d[dp.at(static_cast<int64_t>(y), static_cast<int64_t>(x))];
                            for (int i = 0; i < 2; ++i)
                                for (int j = 0; j < 2; ++j) {
                                    if (s.row[i] < 0 || s.col[j] < 0)
                                        continue;
                                    acc[s.row[i] * iw + s.col[j]] += s.weight(i, j) * g;
                                }
                        }
                }
                float* plane = gr + gp.plane(img, c);
                for (int64_t y = 0; y < ih; ++y)
                    for (int64_t x = 0; x < iw; ++x)
                        plane[gp.at(y, x)] = from_double<float>(acc[y * iw + x]);
            }
        });
    }
};

// The per-pixel slopes (gx, gy: the channels in order) across threads by output row, then the
// nine entries' sums over the pixels in naive's order.
class WarpPerspectiveBackwardMatImpl final : public LoopKernel<WarpPerspectiveBackwardMat> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        if (!roi_x86::all_float32(inputs, outputs)) {
            run_naive(inputs, outputs, ws);
            return;
        }
        m_last = "loop";
        const TensorND &src = inputs[0], &mat = inputs[1], &diff = inputs[3];
        const TensorND& grad = outputs[0];
        auto images = images_of(inputs[2], src.layout[0], "WarpPerspectiveBackwardMat");
        const auto ih = static_cast<int64_t>(src.layout[2]);
        const auto iw = static_cast<int64_t>(src.layout[3]);
        const size_t channels = diff.layout[1], oh = m_param.out_h, ow = m_param.out_w;
        const Nchw sp(src.layout), dp(diff.layout);
        const auto* in = static_cast<const float*>(src.raw_ptr());
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        auto* gr = static_cast<float*>(grad.raw_ptr());
        const TensorLayout& gl = grad.layout;
        std::vector<double> slopes(oh * ow * 2);
        for (size_t n = 0; n < diff.layout[0]; ++n) {
            const auto pts = samples_of(m_param, mat, n, ih, iw);
            parallel_ranges(
                    oh, oh * ow * (channels * 16 + 16), kParallelGrain, [&](size_t b, size_t e) {
                        for (size_t y = b; y < e; ++y)
                            for (size_t x = 0; x < ow; ++x) {
                                const Sample& s = pts[y * ow + x];
                                double gx = 0, gy = 0;
                                if (s.finite)
                                    for (size_t c = 0; c < channels; ++c) {
                                        const float* plane = in + sp.plane(images[n], c);
                                        double g =
                                                dy[dp.plane(n, c) + dp.at(static_cast<int64_t>(y),
                                                                          static_cast<int64_t>(x))];
                                        double v[2][2];
                                        for (int i = 0; i < 2; ++i)
                                            for (int j = 0; j < 2; ++j)
                                                v[i][j] = tap_value(m_param, plane, sp, s, i, j);
                                        gx += g * ((1 - s.fy) * (v[0][1] - v[0][0]) +
                                                   s.fy * (v[1][1] - v[1][0]));
                                        gy += g * ((1 - s.fx) * (v[1][0] - v[0][0]) +
                                                   s.fx * (v[1][1] - v[0][1]));
                                    }
                                slopes[(y * ow + x) * 2] = gx;
                                slopes[(y * ow + x) * 2 + 1] = gy;
                            }
                    });
            double gm[9] = {};
            for (size_t y = 0; y < oh; ++y)
                for (size_t x = 0; x < ow; ++x) {
                    const Sample& s = pts[y * ow + x];
                    if (!s.finite)
                        continue;
                    double gx = slopes[(y * ow + x) * 2], gy = slopes[(y * ow + x) * 2 + 1];
                    auto h = static_cast<double>(y), w = static_cast<double>(x);
                    double proj = -(gx * s.x + gy * s.y);
                    double row[3] = {w / s.d, h / s.d, 1 / s.d};
                    for (int k = 0; k < 3; ++k) {
                        gm[k] += gx * row[k];
                        gm[3 + k] += gy * row[k];
                        gm[6 + k] += proj * row[k];
                    }
                }
            for (size_t k = 0; k < 9; ++k)
                gr[static_cast<ptrdiff_t>(n) * gl.stride[0] +
                   static_cast<ptrdiff_t>(k / 3) * gl.stride[1] +
                   static_cast<ptrdiff_t>(k % 3) * gl.stride[2]] = from_double<float>(gm[k]);
        }
    }
};

}  // namespace
NM_REGISTER_X86(WarpPerspective, WarpPerspectiveImpl);
NM_REGISTER_X86(WarpPerspectiveBackwardData, WarpPerspectiveBackwardDataImpl);
NM_REGISTER_X86(WarpPerspectiveBackwardMat, WarpPerspectiveBackwardMatImpl);
}  // namespace neomeg::dnn::x86
