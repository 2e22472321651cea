#include "neomeg/dnn/operators/indexing.h"
#include "src/common/indexing.h"
#include "src/naive/handle.h"
#include "src/naive/indexing.h"

namespace neomeg::dnn::naive {
namespace {

class GatherImpl final : public Gather {
public:
    using Gather::Gather;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &index = inputs[1], &dst = outputs[0];
        size_t ax = dnn::indexing::normalize_axis(m_param.axis, src.layout.ndim, *this);
        indexing::check_index_values(index, ax, src.layout.shape[ax], false, *this);
        for_each_index(index.layout, [&](const auto& idx) {
            auto sidx = idx;
            sidx[ax] =
                    static_cast<size_t>(elem<int32_t>(index, offset_of(index.layout, idx.data())));
            indexing::copy_elem(dst, offset_of(dst.layout, idx.data()), src,
                                offset_of(src.layout, sidx.data()));
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Gather, GatherImpl);
}  // namespace neomeg::dnn::naive
