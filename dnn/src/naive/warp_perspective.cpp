// WarpPerspective and its gradients, in double. Each output pixel (n, h, w) maps through mat[n]
// to a source point (x, y); its bilinear taps are the rows floor(y) + {0, 1} and columns
// floor(x) + {0, 1}, each folded into the image by the border mode (warp_point.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/naive/handle.h"
#include "src/naive/indexing.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"
#include "src/naive/warp_point.h"

namespace neomeg::dnn::naive {
namespace {

using Param = param::WarpPerspective;
using BorderMode = Param::BorderMode;

using warp::Sample;
using warp::sample_of;

// mat[n] as 9 doubles.
void load_mat(const TensorND& mat, size_t n, double* m) {
    for (size_t k = 0; k < 9; ++k) {
        size_t idx[3] = {n, k / 3, k % 3};
        m[k] = load_scalar(mat, offset_of(mat.layout, idx)).f;
    }
}

// mat_idx after the range check naive's indexing kernels make.
std::vector<size_t> load_mat_idx(const TensorND& mat_idx, size_t batch, const char* who) {
    indexing::check_index_values(mat_idx, 0, batch, false, who);
    std::vector<size_t> b(mat_idx.layout.shape[0]);
    for (size_t n = 0; n < b.size(); ++n)
        b[n] = static_cast<size_t>(
                elem<int32_t>(mat_idx, static_cast<ptrdiff_t>(n) * mat_idx.layout.stride[0]));
    return b;
}

// The value of tap (i, j) of image (b, c).
double tap_value(const Param& p, const TensorND& src, size_t b, size_t c, const Sample& s, int i,
                 int j) {
    if (s.row[i] < 0 || s.col[j] < 0)
        return p.border_val;
    size_t idx[4] = {b, c, static_cast<size_t>(s.row[i]), static_cast<size_t>(s.col[j])};
    return load_scalar(src, offset_of(src.layout, idx)).f;
}

class WarpPerspectiveImpl final : public WarpPerspective {
public:
    using WarpPerspective::WarpPerspective;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &mat = inputs[1], &dst = outputs[0];
        auto batch = load_mat_idx(inputs[2], src.layout.shape[0], "WarpPerspective");
        auto ih = static_cast<int64_t>(src.layout.shape[2]);
        auto iw = static_cast<int64_t>(src.layout.shape[3]);
        double m[9];
        size_t loaded = SIZE_MAX;
        for_each_index(dst.layout, [&](const auto& idx) {
            if (idx[0] != loaded)
                load_mat(mat, loaded = idx[0], m);
            Sample s = sample_of(m_param, m, idx[2], idx[3], ih, iw);
            double v;
            if (!s.finite)
                v = m_param.bmode == BorderMode::CONSTANT
                            ? m_param.border_val
                            : std::numeric_limits<double>::quiet_NaN();
            else {
                v = 0;
                for (int i = 0; i < 2; ++i)
                    for (int j = 0; j < 2; ++j)
                        v += s.weight(i, j) *
                             tap_value(m_param, src, batch[idx[0]], idx[1], s, i, j);
            }
            store_scalar(dst, offset_of(dst.layout, idx.data()), Scalar::of_float(v));
        });
    }
};

// Scatters each diff element onto the in-image taps, summing in double in the workspace.
class WarpPerspectiveBackwardDataImpl final : public WarpPerspectiveBackwardData {
public:
    using WarpPerspectiveBackwardData::WarpPerspectiveBackwardData;
    size_t get_workspace_in_bytes(std::span<const TensorLayout>,
                                  std::span<const TensorLayout> outputs) override {
        return outputs[0].total_nr_elems() * sizeof(double);
    }
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace workspace) override {
        const TensorND &mat = inputs[0], &diff = inputs[2], &grad = outputs[0];
        auto batch = load_mat_idx(inputs[1], grad.layout.shape[0], "WarpPerspectiveBackwardData");
        TensorLayout acc_layout(grad.layout, grad.layout.dtype);  // contiguous index of grad
        auto* acc = reinterpret_cast<double*>(workspace.ptr);
        std::fill(acc, acc + grad.layout.total_nr_elems(), 0.0);
        auto ih = static_cast<int64_t>(grad.layout.shape[2]);
        auto iw = static_cast<int64_t>(grad.layout.shape[3]);
        double m[9];
        size_t loaded = SIZE_MAX;
        for_each_index(diff.layout, [&](const auto& idx) {
            if (idx[0] != loaded)
                load_mat(mat, loaded = idx[0], m);
            Sample s = sample_of(m_param, m, idx[2], idx[3], ih, iw);
            if (!s.finite)
                return;
            double g = load_scalar(diff, offset_of(diff.layout, idx.data())).f;
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) {
                    if (s.row[i] < 0 || s.col[j] < 0)
                        continue;
                    size_t gidx[4] = {batch[idx[0]], idx[1], static_cast<size_t>(s.row[i]),
                                      static_cast<size_t>(s.col[j])};
                    acc[offset_of(acc_layout, gidx)] += s.weight(i, j) * g;
                }
        });
        for_each_index(grad.layout, [&](const auto& idx) {
            store_scalar(grad, offset_of(grad.layout, idx.data()),
                         Scalar::of_float(acc[offset_of(acc_layout, idx.data())]));
        });
    }
};

// d dst / d (x, y) is the bilinear sample's slope between its taps (the right derivative where
// x or y is an integer); x = u / d and y = t / d carry it to the nine entries of mat.
class WarpPerspectiveBackwardMatImpl final : public WarpPerspectiveBackwardMat {
public:
    using WarpPerspectiveBackwardMat::WarpPerspectiveBackwardMat;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &mat = inputs[1], &diff = inputs[3], &grad = outputs[0];
        auto batch = load_mat_idx(inputs[2], src.layout.shape[0], "WarpPerspectiveBackwardMat");
        auto ih = static_cast<int64_t>(src.layout.shape[2]);
        auto iw = static_cast<int64_t>(src.layout.shape[3]);
        size_t channels = diff.layout.shape[1];
        for (size_t n = 0; n < diff.layout.shape[0]; ++n) {
            double m[9], gm[9] = {};
            load_mat(mat, n, m);
            for (size_t oh = 0; oh < m_param.out_h; ++oh)
                for (size_t ow = 0; ow < m_param.out_w; ++ow) {
                    Sample s = sample_of(m_param, m, oh, ow, ih, iw);
                    if (!s.finite)
                        continue;
                    double gx = 0, gy = 0;
                    for (size_t c = 0; c < channels; ++c) {
                        size_t didx[4] = {n, c, oh, ow};
                        double g = load_scalar(diff, offset_of(diff.layout, didx)).f;
                        double v[2][2];
                        for (int i = 0; i < 2; ++i)
                            for (int j = 0; j < 2; ++j)
                                v[i][j] = tap_value(m_param, src, batch[n], c, s, i, j);
                        gx += g * ((1 - s.fy) * (v[0][1] - v[0][0]) + s.fy * (v[1][1] - v[1][0]));
                        gy += g * ((1 - s.fx) * (v[1][0] - v[0][0]) + s.fx * (v[1][1] - v[0][1]));
                    }
                    auto h = static_cast<double>(oh), w = static_cast<double>(ow);
                    double proj = -(gx * s.x + gy * s.y);
                    double row[3] = {w / s.d, h / s.d, 1 / s.d};
                    for (int k = 0; k < 3; ++k) {
                        gm[k] += gx * row[k];
                        gm[3 + k] += gy * row[k];
                        gm[6 + k] += proj * row[k];
                    }
                }
            for (size_t k = 0; k < 9; ++k) {
                size_t gidx[3] = {n, k / 3, k % 3};
                store_scalar(grad, offset_of(grad.layout, gidx), Scalar::of_float(gm[k]));
            }
        }
    }
};

}  // namespace
NM_REGISTER_NAIVE(WarpPerspective, WarpPerspectiveImpl);
NM_REGISTER_NAIVE(WarpPerspectiveBackwardData, WarpPerspectiveBackwardDataImpl);
NM_REGISTER_NAIVE(WarpPerspectiveBackwardMat, WarpPerspectiveBackwardMatImpl);
}  // namespace neomeg::dnn::naive
