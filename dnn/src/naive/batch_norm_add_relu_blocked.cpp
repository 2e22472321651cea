// Naive kernels of the blocked BatchNorms' residual add + relu fusions: the unfused
// BatchNormForwardBlocked or BatchNormBackwardBlocked (the handle's), and the add, relu or mask
// apart, each element as the unfused graph's Elemwise ops compute it (float rounding per op).
#include "neomeg/dnn/operators/norm.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

// The handle's `Unfused` operator with `param`, made once.
template <class Unfused>
class UnfusedOp {
public:
    Unfused& get(Handle* handle, const param::BatchNorm& param) {
        if (!m_op)
            m_op = handle->create_operator<Unfused>();
        m_op->param() = param;
        return *m_op;
    }

private:
    std::unique_ptr<Unfused> m_op;
};

// dst = max(BatchNormForwardBlocked(src...) + z, 0).
class BatchNormAddReluForwardBlockedImpl final : public BatchNormAddReluForwardBlocked {
public:
    using BatchNormAddReluForwardBlocked::BatchNormAddReluForwardBlocked;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> in,
                                  std::span<const TensorLayout> out) override {
        return m_unfused.get(handle(), m_param).get_workspace_in_bytes(in.first(5), out);
    }

    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out,
                 Workspace ws) override {
        m_unfused.get(handle(), m_param).exec_unchecked(in.first(5), out, ws);
        const std::vector<ptrdiff_t> dst_off = offsets_of(out[0].layout),
                                     z_off = offsets_of(in[5].layout);
        for (size_t i = 0; i < dst_off.size(); ++i) {
            // The ADD's float sum, then the relu.
            const float sum = static_cast<float>(load(out[0], dst_off[i]) + load(in[5], z_off[i]));
            store(out[0], dst_off[i], sum > 0 ? sum : 0.0);
        }
    }

private:
    UnfusedOp<BatchNormForwardBlocked> m_unfused;
};

// masked_diff = SWITCH_GT0(relu_dst, diff + diff_add), then BatchNormBackwardBlocked of it.
class BatchNormAddReluBackwardBlockedImpl final : public BatchNormAddReluBackwardBlocked {
public:
    using BatchNormAddReluBackwardBlocked::BatchNormAddReluBackwardBlocked;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> in,
                                  std::span<const TensorLayout> out) override {
        const std::array<TensorLayout, 5> bn_in{out[3], in[2], in[3], in[4], in[5]};
        return m_unfused.get(handle(), m_param).get_workspace_in_bytes(bn_in, out.first(3));
    }

    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out,
                 Workspace ws) override {
        const TensorND& masked = out[3];
        const std::vector<ptrdiff_t> diff_off = offsets_of(in[0].layout),
                                     add_off = offsets_of(in[1].layout),
                                     mask_off = offsets_of(in[6].layout),
                                     masked_off = offsets_of(masked.layout);
        for (size_t i = 0; i < diff_off.size(); ++i) {
            const float sum =
                    static_cast<float>(load(in[0], diff_off[i]) + load(in[1], add_off[i]));
            store(masked, masked_off[i], load(in[6], mask_off[i]) > 0 ? sum : 0.0);
        }
        const std::array<TensorND, 5> bn_in{masked, in[2], in[3], in[4], in[5]};
        m_unfused.get(handle(), m_param).exec_unchecked(bn_in, out.first(3), ws);
    }

private:
    UnfusedOp<BatchNormBackwardBlocked> m_unfused;
};

}  // namespace
NM_REGISTER_NAIVE(BatchNormAddReluForwardBlocked, BatchNormAddReluForwardBlockedImpl);
NM_REGISTER_NAIVE(BatchNormAddReluBackwardBlocked, BatchNormAddReluBackwardBlockedImpl);
}  // namespace neomeg::dnn::naive
