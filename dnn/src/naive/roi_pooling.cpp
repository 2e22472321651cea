// ROIPooling and its gradient. The bins are MegDNN's integer ones (src/common/roi_geometry.h); the
// values are pooled in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/roi.h"
#include "src/common/roi_geometry.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

using Param = param::ROIPooling;

using Box = roi::PoolBox;
using Bin = roi::PoolBin;

std::vector<Box> boxes_of(const Param& p, const TensorND& rois, size_t batch,
                          const std::string& who) {
    std::vector<Box> boxes(rois.layout.shape[0]);
    for (size_t k = 0; k < boxes.size(); ++k) {
        double r[5];
        for (size_t j = 0; j < 5; ++j) {
            size_t idx[2] = {k, j};
            r[j] = load_scalar(rois, offset_of(rois.layout, idx)).f;
        }
        int64_t b = roi::batch_index(r[0], batch);
        NM_THROW_IF(b < 0, IndexError, roi::bad_batch_message(who, k, r[0], batch));
        boxes[k] = roi::pool_box(p, r, static_cast<size_t>(b));
    }
    return boxes;
}

class ROIPoolingImpl final : public ROIPooling {
public:
    using ROIPooling::ROIPooling;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0], &index = outputs[1];
        auto boxes = boxes_of(m_param, inputs[1], src.layout.shape[0], param_str());
        auto h = static_cast<int64_t>(src.layout.shape[2]);
        auto w = static_cast<int64_t>(src.layout.shape[3]);
        bool max = m_param.mode == Param::Mode::MAX;
        for_each_index(dst.layout, [&](const auto& idx) {
            const Box& box = boxes[idx[0]];
            Bin bin = roi::pool_bin(box, idx[2], idx[3], h, w);
            double best = 0, sum = 0;
            int64_t arg = -1;
            for (int64_t y = bin.hs; y < bin.he; ++y)
                for (int64_t x = bin.ws; x < bin.we; ++x) {
                    size_t si[4] = {box.image, idx[1], static_cast<size_t>(y),
                                    static_cast<size_t>(x)};
                    double v = load_scalar(src, offset_of(src.layout, si)).f;
                    sum += v;
                    if (arg < 0 || v > best) {
                        best = v;
                        arg = y * w + x;
                    }
                }
            double out = bin.count() == 0 ? 0 : max ? best : sum / static_cast<double>(bin.count());
            store_scalar(dst, offset_of(dst.layout, idx.data()), Scalar::of_float(out));
            store_scalar(index, offset_of(index.layout, idx.data()),
                         Scalar::of_int(max ? arg : -1));
        });
    }
};

// Scatters each diff element onto its argmax pixel or evenly over its bin, summing in double in
// the workspace.
class ROIPoolingBackwardImpl final : public ROIPoolingBackward {
public:
    using ROIPoolingBackward::ROIPoolingBackward;
    size_t get_workspace_in_bytes(std::span<const TensorLayout>,
                                  std::span<const TensorLayout> outputs) override {
        return outputs[0].total_nr_elems() * sizeof(double);
    }
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace workspace) override {
        const TensorND &diff = inputs[0], &index = inputs[2], &grad = outputs[0];
        auto boxes = boxes_of(m_param, inputs[1], grad.layout.shape[0], param_str());
        TensorLayout acc_layout(grad.layout, grad.layout.dtype);  // contiguous index of grad
        auto* acc = reinterpret_cast<double*>(workspace.ptr);
        std::fill(acc, acc + grad.layout.total_nr_elems(), 0.0);
        auto h = static_cast<int64_t>(grad.layout.shape[2]);
        auto w = static_cast<int64_t>(grad.layout.shape[3]);
        bool max = m_param.mode == Param::Mode::MAX;
        auto add = [&](size_t b, size_t c, int64_t y, int64_t x, double g) {
            size_t gi[4] = {b, c, static_cast<size_t>(y), static_cast<size_t>(x)};
            acc[offset_of(acc_layout, gi)] += g;
        };
        for_each_index(diff.layout, [&](const auto& idx) {
            const Box& box = boxes[idx[0]];
            double d = load_scalar(diff, offset_of(diff.layout, idx.data())).f;
            Bin bin = roi::pool_bin(box, idx[2], idx[3], h, w);
            if (max) {
                int64_t s = elem<int32_t>(index, offset_of(index.layout, idx.data()));
                if (s == -1 && bin.count() == 0)
                    return;  // an empty bin took nothing
                int64_t y = s / std::max(w, int64_t(1)), x = s % std::max(w, int64_t(1));
                NM_THROW_IF(s < 0 || y < bin.hs || y >= bin.he || x < bin.ws || x >= bin.we,
                            IndexError, param_str(), ": index ", s, " is not a pixel of bin (",
                            idx[2], ", ", idx[3], ") of roi ", idx[0]);
                add(box.image, idx[1], y, x, d);
                return;
            }
            double share = bin.count() ? d / static_cast<double>(bin.count()) : 0;
            for (int64_t y = bin.hs; y < bin.he; ++y)
                for (int64_t x = bin.ws; x < bin.we; ++x)
                    add(box.image, idx[1], y, x, share);
        });
        for_each_index(grad.layout, [&](const auto& idx) {
            store_scalar(grad, offset_of(grad.layout, idx.data()),
                         Scalar::of_float(acc[offset_of(acc_layout, idx.data())]));
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(ROIPooling, ROIPoolingImpl);
NM_REGISTER_NAIVE(ROIPoolingBackward, ROIPoolingBackwardImpl);
}  // namespace neomeg::dnn::naive
