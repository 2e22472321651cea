// NMSKeep: MegEngine's greedy loop, box by box in input order against the boxes kept so far, with
// its overlap test in float32 (src/common/nms_keep.h).
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/nms_keep.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

using nms::Box;

class NMSKeepImpl final : public NMSKeep {
public:
    using NMSKeep::NMSKeep;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &boxes = inputs[0], &indices = outputs[0], &count = outputs[1];
        const TensorLayout& bl = boxes.layout;
        size_t batch = bl.shape[0], n = bl.shape[1], cap = m_param.max_output;
        std::vector<Box> box(n);
        std::vector<size_t> kept;
        for (size_t b = 0; b < batch; ++b) {
            for (size_t i = 0; i < n; ++i) {
                float v[4];
                for (size_t c = 0; c < 4; ++c) {
                    size_t idx[3] = {b, i, c};
                    v[c] = elem<float>(boxes, offset_of(bl, idx));
                }
                box[i] = {v[0], v[1], v[2], v[3]};
            }
            kept.clear();
            for (size_t i = 0; i < n && kept.size() < cap; ++i) {
                bool suppressed = false;
                for (size_t j : kept)
                    suppressed = suppressed || nms::overlaps(box[i], nms::area(box[i]), box[j],
                                                             nms::area(box[j]), m_param.iou_thresh);
                if (!suppressed)
                    kept.push_back(i);
            }
            for (size_t k = 0; k < cap; ++k) {
                size_t idx[2] = {b, k};
                size_t v = k < kept.size() ? kept[k] : (kept.empty() ? 0 : kept.back());
                elem<int32_t>(indices, offset_of(indices.layout, idx)) = static_cast<int32_t>(v);
            }
            size_t ci[1] = {b};
            elem<int32_t>(count, offset_of(count.layout, ci)) = static_cast<int32_t>(kept.size());
        }
    }
};

}  // namespace
NM_REGISTER_NAIVE(NMSKeep, NMSKeepImpl);
}  // namespace neomeg::dnn::naive
