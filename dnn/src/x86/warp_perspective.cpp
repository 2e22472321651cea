// WarpPerspective and its gradients on x86. Naive maps every output element through the matrix
// again for each channel; here each output image's source points (naive/warp_point.h, naive's
// formulas) are computed once per call and its channels reuse them (warp_sampling.h, shared with
// Remap), split across OpenMP threads: whole output images where a batch shares evenly among the
// threads (parallel_items), else the forward by output row (channels-last) or (channel, output
// row), in float32 from a table of taps, the matrix gradient by output row for the per-pixel
// slopes and then summed over the pixels in naive's order; the data gradient by (image, channel)
// plane of grad (the outputs warping from that image in order). Both gradients in double in
// naive's order (naive's bits). float32 tensors, any strides; other dtypes run naive.
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/naive/indexing.h"
#include "src/naive/warp_point.h"
#include "src/x86/float32_loop.h"
#include "src/x86/grad_planes.h"
#include "src/x86/warp_sampling.h"

namespace neomeg::dnn::x86 {
namespace {

using naive::warp::Sample;
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

// Output image n's matrix, widened to double (naive's sample_of reads it so).
struct Matrix {
    double m[9];

    Matrix(const TensorND& mat, size_t n) {
        const TensorLayout& l = mat.layout;
        const auto* mp = static_cast<const float*>(mat.raw_ptr());
        for (size_t k = 0; k < 9; ++k)
            m[k] = mp[static_cast<ptrdiff_t>(n) * l.stride[0] +
                      static_cast<ptrdiff_t>(k / 3) * l.stride[1] +
                      static_cast<ptrdiff_t>(k % 3) * l.stride[2]];
    }
};

// Output image n's source points, row-major over (out_h, out_w).
std::vector<Sample> samples_of(const Param& p, const TensorND& mat, size_t n, int64_t ih,
                               int64_t iw) {
    const Matrix m(mat, n);
    return warp_x86::points_of(p.out_h, p.out_w, [&](size_t y, size_t x) {
        return naive::warp::sample_of(p, m.m, y, x, ih, iw);
    });
}

class WarpPerspectiveImpl final : public Float32Loop<WarpPerspective> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace) override {
        const TensorND &src = inputs[0], &mat = inputs[1], &dst = outputs[0];
        auto images = images_of(inputs[2], src.layout[0], "WarpPerspective");
        if (dst.layout.is_empty())
            return;
        const auto ih = static_cast<int64_t>(src.layout[2]);
        const auto iw = static_cast<int64_t>(src.layout[3]);
        // Images across threads where they share evenly: one parallel region instead of four
        // an image (its points, its channels-last copy, its table, its rows).
        parallel_items(dst.layout[0], dst.layout.total_nr_elems() * 8, kParallelGrain,
                       [&](size_t n) {
                           // The table's coordinates are the samples' own (naive's projection);
                           // this forward saves the per-channel work, not the projection.
                           const auto pts = samples_of(m_param, mat, n, ih, iw);
                           const size_t ow = dst.layout[3];
                           warp_x86::forward_image<Sample>(
                                   src, images[n], dst, n, true,
                                   [&](size_t y, size_t x) {
                                       const Sample& s = pts[y * ow + x];
                                       return std::pair<double, double>{s.x, s.y};
                                   },
                                   [&](size_t y, size_t x) { return pts[y * ow + x]; },
                                   m_param.bmode, m_param.border_val);
                       });
    }
};

// The planes of grad add the outputs warping from their image, in output order.
class WarpPerspectiveBackwardDataImpl final : public Float32Loop<WarpPerspectiveBackwardData> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace ws) override {
        const TensorND &mat = inputs[0], &diff = inputs[2], &grad = outputs[0];
        const size_t batch = grad.layout[0];
        auto images = images_of(inputs[1], batch, "WarpPerspectiveBackwardData");
        if (grad.layout.is_empty())
            return;
        const auto ih = static_cast<int64_t>(grad.layout[2]);
        const auto iw = static_cast<int64_t>(grad.layout[3]);
        const size_t oh = diff.layout[2], ow = diff.layout[3];
        const Nchw dp(diff.layout);
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        std::vector<Matrix> mats;
        std::vector<std::vector<size_t>> of_image(batch);
        for (size_t n = 0; n < images.size(); ++n) {
            mats.emplace_back(mat, n);
            of_image[images[n]].push_back(n);
        }
        // Every output's points formed as the taps are, all images in one parallel region (a
        // vector of points per image entered one each, and kept 80 bytes a point).
        const auto taps = warp_x86::scatter_taps(
                images.size(), oh, ow, iw, [&](size_t n, size_t y, size_t x) {
                    return naive::warp::sample_of(m_param, mats[n].m, y, x, ih, iw);
                });
        accumulate_plane_blocks<warp_x86::kScatterPlanes, true>(
                grad, reinterpret_cast<double*>(ws.ptr), diff.layout.total_nr_elems() * 8,
                [&](size_t img, size_t c0, size_t count, double* acc) {
                    for (size_t n : of_image[img])
                        warp_x86::scatter(taps.data() + n * oh * ow, oh, ow, dy + dp.plane(n, c0),
                                          dp.s[1], count, dp, acc);
                });
    }
};

// The per-pixel slopes (gx, gy: the channels in order), then the nine entries' sums over the
// pixels in naive's order; whole images or an image's output rows across threads.
class WarpPerspectiveBackwardMatImpl final : public Float32Loop<WarpPerspectiveBackwardMat> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace) override {
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
        // Images across threads where they share evenly (one parallel region, not one an image).
        const size_t work = oh * ow * (channels * 8 + 16) * diff.layout[0];
        parallel_items(diff.layout[0], work, kParallelGrain, [&](size_t n) {
            std::vector<double> slopes(oh * ow * 2);
            const auto pts = samples_of(m_param, mat, n, ih, iw);
            warp_x86::point_slopes([&](size_t i) -> const Sample& { return pts[i]; }, oh, ow,
                                   channels, in, sp, images[n], dy, dp, n, m_param.border_val,
                                   [](const Sample& s) { return s.finite; }, slopes.data());
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
        });
    }
};

}  // namespace
NM_REGISTER_X86(WarpPerspective, WarpPerspectiveImpl);
NM_REGISTER_X86(WarpPerspectiveBackwardData, WarpPerspectiveBackwardDataImpl);
NM_REGISTER_X86(WarpPerspectiveBackwardMat, WarpPerspectiveBackwardMatImpl);
}  // namespace neomeg::dnn::x86
