// NMSKeep on x86: any strides. Each batch item's boxes are gathered once into planes (x1, y1, x2,
// y2 and the area), and a candidate is tested against the kept boxes' planes a block at a time
// without a branch per box, which the compiler vectorises; naive gathers every box through its
// strides and recomputes both areas per pair. The overlap test is naive's (src/common/nms_keep.h),
// so the indices and counts match naive exactly.
#include <algorithm>
#include <vector>

#include "neomeg/dnn/operators/vision.h"
#include "src/common/nms_keep.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"

namespace neomeg::dnn::x86 {
namespace {

// Kept boxes tested per step before looking whether one of them overlapped: long enough for the
// vector loop, short enough that a suppressed candidate (usually hit by an early, high-scoring
// box) stops soon.
constexpr size_t kBlock = 32;

struct Planes {
    std::vector<float> x1, y1, x2, y2, area;

    void resize(size_t n) {
        for (auto* p : {&x1, &y1, &x2, &y2, &area})
            p->resize(n);
    }
    nms::Box box(size_t i) const { return {x1[i], y1[i], x2[i], y2[i]}; }
};

class NMSKeepImpl final : public LoopKernel<NMSKeep> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &boxes = inputs[0], &indices = outputs[0], &count = outputs[1];
        const TensorLayout &bl = boxes.layout, &il = indices.layout;
        size_t batch = bl.shape[0], n = bl.shape[1], cap = m_param.max_output;
        const float thresh = m_param.iou_thresh;
        const auto* src = static_cast<const float*>(boxes.raw_ptr());
        auto* idx = static_cast<int32_t*>(indices.raw_ptr());
        auto* cnt = static_cast<int32_t*>(count.raw_ptr());
        m_last = "loop";
        Planes all, kept;
        all.resize(n);
        kept.resize(std::min(n, cap));
        std::vector<int32_t> kept_idx(std::min(n, cap));
        for (size_t b = 0; b < batch; ++b) {
            const float* row = src + static_cast<ptrdiff_t>(b) * bl.stride[0];
            for (size_t i = 0; i < n; ++i) {
                const float* p = row + static_cast<ptrdiff_t>(i) * bl.stride[1];
                nms::Box box{p[0], p[bl.stride[2]], p[2 * bl.stride[2]], p[3 * bl.stride[2]]};
                all.x1[i] = box.x1;
                all.y1[i] = box.y1;
                all.x2[i] = box.x2;
                all.y2[i] = box.y2;
                all.area[i] = nms::area(box);
            }
            size_t nk = 0;
            for (size_t i = 0; i < n && nk < cap; ++i) {
                const nms::Box a = all.box(i);
                const float aa = all.area[i];
                bool hit = false;
                for (size_t j0 = 0; j0 < nk && !hit; j0 += kBlock) {
                    size_t j1 = std::min(j0 + kBlock, nk);
                    int any = 0;
                    for (size_t j = j0; j < j1; ++j)
                        any |= nms::overlaps(a, aa, kept.box(j), kept.area[j], thresh) ? 1 : 0;
                    hit = any != 0;
                }
                if (hit)
                    continue;
                kept.x1[nk] = a.x1;
                kept.y1[nk] = a.y1;
                kept.x2[nk] = a.x2;
                kept.y2[nk] = a.y2;
                kept.area[nk] = aa;
                kept_idx[nk++] = static_cast<int32_t>(i);
            }
            int32_t* out = idx + static_cast<ptrdiff_t>(b) * il.stride[0];
            int32_t last = nk == 0 ? 0 : kept_idx[nk - 1];
            for (size_t k = 0; k < cap; ++k)
                out[static_cast<ptrdiff_t>(k) * il.stride[1]] = k < nk ? kept_idx[k] : last;
            cnt[static_cast<ptrdiff_t>(b) * count.layout.stride[0]] = static_cast<int32_t>(nk);
        }
    }
};

}  // namespace
NM_REGISTER_X86(NMSKeep, NMSKeepImpl);
}  // namespace neomeg::dnn::x86
