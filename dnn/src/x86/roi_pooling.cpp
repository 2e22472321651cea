// ROIPooling and its gradient on x86: each roi's bins (src/common/roi_geometry.h, naive's
// integer bins) computed once per call instead of once per output element, the (roi, channel)
// planes of the forward and the (image, channel) planes of the backward split across OpenMP
// threads. The forward pools each bin's pixels over all channels at once in float32 (roi_common.h,
// roi_bins_hwy.h): the maximum is naive's bits (a maximum rounds nothing), the mean differs from
// naive's double sum by the float32 sum's rounding (the bound is derived in
// dnn/test/x86/vision_loops.h). The gradient sums in double in naive's order (grad_planes.h):
// naive's bits. float32 tensors, any strides; other dtypes run naive.
#include <algorithm>
#include <array>
#include <mutex>
#include <optional>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/roi_geometry.h"
#include "src/x86/float32_loop.h"
#include "src/x86/grad_planes.h"
#include "src/x86/roi_common.h"

namespace neomeg::dnn::x86 {
namespace {

using Span = std::pair<int64_t, int64_t>;

// Every roi's bins: rows [first, last) of bin row ph at hs[k * ph_n + ph], columns likewise.
struct Bins {
    std::vector<size_t> image;
    std::vector<Span> hs, ws;
    size_t ph_n = 0, pw_n = 0;
    size_t work = 0;  // pixels over all rois' bins, per channel

    roi::PoolBin bin(size_t k, size_t ph, size_t pw) const {
        auto [h0, h1] = hs[k * ph_n + ph];
        auto [w0, w1] = ws[k * pw_n + pw];
        return {h0, h1, w0, w1};
    }
};

Bins bins_of(const param::ROIPooling& p, const std::vector<roi_x86::RoiRow>& rois, int64_t h,
             int64_t w) {
    Bins b;
    b.ph_n = p.pooled_height;
    b.pw_n = p.pooled_width;
    for (const auto& row : rois) {
        roi::PoolBox box = roi::pool_box(p, row.r, row.image);
        b.image.push_back(row.image);
        size_t rows = 0, cols = 0;
        for (size_t ph = 0; ph < p.pooled_height; ++ph) {
            b.hs.push_back(roi::pool_span(ph, box.bin_h, box.h0, h));
            rows += static_cast<size_t>(b.hs.back().second - b.hs.back().first);
        }
        for (size_t pw = 0; pw < p.pooled_width; ++pw) {
            b.ws.push_back(roi::pool_span(pw, box.bin_w, box.w0, w));
            cols += static_cast<size_t>(b.ws.back().second - b.ws.back().first);
        }
        b.work += rows * cols + static_cast<size_t>(p.pooled_height) * p.pooled_width;
    }
    return b;
}

class ROIPoolingImpl final : public Float32Loop<ROIPooling> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0], &index = outputs[1];
        auto rois = roi_x86::read_rois(inputs[1], src.layout[0], param_str());
        if (dst.layout.is_empty())
            return;
        const auto h = static_cast<int64_t>(src.layout[2]), w = static_cast<int64_t>(src.layout[3]);
        const Bins bins = bins_of(m_param, rois, h, w);
        // Each pixel of a bin one sample of weight 1, in naive's order.
        auto build = [&](size_t k, roi_x86::RoiTaps& t) {
            for (size_t ph = 0; ph < bins.ph_n; ++ph)
                for (size_t pw = 0; pw < bins.pw_n; ++pw) {
                    roi::PoolBin b = bins.bin(k, ph, pw);
                    for (int64_t y = b.hs; y < b.he; ++y)
                        for (int64_t x = b.ws; x < b.we; ++x) {
                            t.tap(y * w + x, 1.f);
                            t.end_sample(y * w + x);
                        }
                    t.end_bin();
                }
        };
        roi_x86::roi_forward(src, rois, dst, index, m_param.mode == Param::Mode::MAX,
                             bins.work * dst.layout[1], build);
    }
};

// The gradient's planes add, roi by roi of their image, each bin's gradient to its argmax
// pixel (the index is y * w + x, the double plane's own offset) or an equal share to its pixels.
// Each (image, channel) plane is one thread's (grad_planes.h), in naive's order: naive's bits.
class ROIPoolingBackwardImpl final : public Float32Loop<ROIPoolingBackward> {
public:
    using Float32Loop::Float32Loop;

protected:
    void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
             Workspace ws) override {
        const TensorND &diff = inputs[0], &index = inputs[2], &grad = outputs[0];
        const size_t channels = grad.layout[1];
        auto rois = roi_x86::read_rois(inputs[1], grad.layout[0], param_str());
        if (grad.layout.is_empty())
            return;
        const auto h = static_cast<int64_t>(grad.layout[2]);
        const auto w = static_cast<int64_t>(grad.layout[3]);
        const Bins bins = bins_of(m_param, rois, h, w);
        const size_t ph_n = diff.layout[2], pw_n = diff.layout[3];
        const Nchw dp(diff.layout), ip(index.layout);
        const auto* dy = static_cast<const float*>(diff.raw_ptr());
        const auto* idx = static_cast<const int32_t*>(index.raw_ptr());
        const bool max = m_param.mode == Param::Mode::MAX;
        // Whether pixel s (y * w + x) lies in a bin, its row from a table (a division per index
        // cost more than the whole scatter) and each bin's rows and columns as a start and a
        // length, tested by one unsigned comparison each; per roi and bin, computed once for all
        // channels.
        std::vector<int32_t> row_of(static_cast<size_t>(h * w));
        for (int64_t y = 0; y < h; ++y)
            std::fill_n(row_of.begin() + y * w, w, static_cast<int32_t>(y));
        struct Cell {
            int32_t hs, ws;
            uint32_t hl, wl;  // rows and columns; 0 for an empty bin
        };
        const size_t cells_n = ph_n * pw_n;
        std::vector<Cell> cells(rois.size() * cells_n);
        std::vector<ptrdiff_t> d_at(cells_n), i_at(cells_n);
        for (size_t k = 0; k < rois.size(); ++k)
            for (size_t i = 0; i < cells_n; ++i) {
                roi::PoolBin b = bins.bin(k, i / pw_n, i % pw_n);
                cells[k * cells_n + i] = {static_cast<int32_t>(b.hs), static_cast<int32_t>(b.ws),
                                          static_cast<uint32_t>(b.he - b.hs),
                                          static_cast<uint32_t>(b.we - b.ws)};
            }
        for (size_t i = 0; i < cells_n; ++i) {
            auto p = static_cast<int64_t>(i / pw_n), q = static_cast<int64_t>(i % pw_n);
            d_at[i] = dp.at(p, q);
            i_at[i] = ip.at(p, q);
        }
        const auto plane_n = static_cast<uint32_t>(row_of.size());
        // The first bad index a thread meets, raised after the loop as naive raises it (the
        // check shares the scatter's pass over the indices).
        std::mutex bad_lock;
        std::optional<std::array<int64_t, 4>> bad;
        auto report = [&](size_t k, size_t i, int64_t s) {
            std::lock_guard lock(bad_lock);
            if (!bad)
                bad = {int64_t(k), int64_t(i / pw_n), int64_t(i % pw_n), s};
        };
        const auto of_image = roi_x86::rois_of_images(rois, grad.layout[0]);
        size_t work = (max ? rois.size() * cells_n : bins.work) * channels;
        accumulate_planes(grad, reinterpret_cast<double*>(ws.ptr), work,
                          [&](size_t n, size_t c, double* acc) {
                              // Locals: through the captures, every store to acc reloaded them.
                              const int32_t* rows = row_of.data();
                              const ptrdiff_t *da = d_at.data(), *ia = i_at.data();
                              const auto wi = static_cast<int32_t>(w);
                              const uint32_t pn = plane_n;
                              for (size_t k : of_image[n]) {
                                  const float* d = dy + dp.plane(k, c);
                                  const Cell* cell = cells.data() + k * cells_n;
                                  if (max) {
                                      const int32_t* a = idx + ip.plane(k, c);
                                      for (size_t i = 0; i < cells_n; ++i) {
                                          const int32_t s = a[ia[i]];
                                          const Cell& b = cell[i];
                                          if (static_cast<uint32_t>(s) < pn) {
                                              const int32_t y = rows[static_cast<uint32_t>(s)];
                                              const int32_t x = s - y * wi;
                                              if (static_cast<uint32_t>(y - b.hs) < b.hl &&
                                                  static_cast<uint32_t>(x - b.ws) < b.wl) {
                                                  acc[s] += static_cast<double>(d[da[i]]);
                                                  continue;
                                              }
                                          }
                                          // -1 marks an empty bin's index (naive's); anything else
                                          // is bad.
                                          if (s != -1 || (b.hl != 0 && b.wl != 0))
                                              report(k, i, s);
                                      }
                                      continue;
                                  }
                                  for (size_t i = 0; i < cells_n; ++i) {
                                      const Cell& b = cell[i];
                                      if (b.hl == 0 || b.wl == 0)
                                          continue;
                                      double share = static_cast<double>(d[d_at[i]]) /
                                                     static_cast<double>(b.hl * b.wl);
                                      for (int64_t y = b.hs; y < b.hs + b.hl; ++y)
                                          for (int64_t x = b.ws; x < b.ws + b.wl; ++x)
                                              acc[y * w + x] += share;
                                  }
                              }
                          });
        NM_THROW_IF(bad, IndexError, param_str(), ": index ", (*bad)[3], " is not a pixel of bin (",
                    (*bad)[1], ", ", (*bad)[2], ") of roi ", (*bad)[0]);
    }
};

}  // namespace
NM_REGISTER_X86(ROIPooling, ROIPoolingImpl);
NM_REGISTER_X86(ROIPoolingBackward, ROIPoolingBackwardImpl);
}  // namespace neomeg::dnn::x86
