// Naive kernels of the blocked training ops: each unblocks its blocked inputs into its workspace,
// runs the handle's plain operator (with the same param) there, and blocks the blocked outputs
// back (zeros in the channels past C), through the handle's ChannelUnblock and ChannelBlock. The
// relu fusions of the BatchNorms run the unfused op and the relu (or its mask) apart.
#include <functional>

#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/norm.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/common/channel_blocked.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

constexpr size_t kAlign = 64;

size_t aligned(size_t bytes) {
    return (bytes + kAlign - 1) / kAlign * kAlign;
}

// Which tensors are blocked: their channel counts (0: plain), inputs then outputs.
struct Roles {
    std::vector<size_t> in, out;
};

// The plain operator's tensors: a blocked tensor's plain copy lives in the workspace.
struct PlainLayouts {
    std::vector<TensorLayout> in, out;
    std::vector<size_t> in_offset, out_offset;  // in the workspace, for blocked tensors
    size_t staging_bytes = 0;
};

template <class Blocked, class Plain>
class ViaPlain : public Blocked {
public:
    using Blocked::Blocked;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> in,
                                  std::span<const TensorLayout> out) override {
        PlainLayouts p = plain_layouts(in, out);
        return p.staging_bytes + plain().get_workspace_in_bytes(p.in, p.out);
    }

    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out,
                 Workspace ws) override {
        std::vector<TensorLayout> in_l, out_l;
        for (const TensorND& t : in)
            in_l.push_back(t.layout);
        for (const TensorND& t : out)
            out_l.push_back(t.layout);
        PlainLayouts p = plain_layouts(in_l, out_l);
        Roles r = roles(in_l, out_l);
        std::vector<TensorND> pin(in.begin(), in.end()), pout(out.begin(), out.end());
        for (size_t i = 0; i < in.size(); ++i)
            if (r.in[i]) {
                pin[i] = TensorND(ws.ptr + p.in_offset[i], p.in[i]);
                unblock(r.in[i]).exec_unchecked({&in[i], 1}, {&pin[i], 1}, {});
            }
        for (size_t i = 0; i < out.size(); ++i)
            if (r.out[i])
                pout[i] = TensorND(ws.ptr + p.out_offset[i], p.out[i]);
        Workspace inner{ws.ptr + p.staging_bytes, ws.size - p.staging_bytes};
        plain().exec_unchecked(pin, pout, inner);
        for (size_t i = 0; i < out.size(); ++i)
            if (r.out[i])
                block(out[i].layout[out[i].layout.ndim - 1])
                        .exec_unchecked({&pout[i], 1}, {&out[i], 1}, {});
    }

private:
    virtual Roles roles(std::span<const TensorLayout> in,
                        std::span<const TensorLayout> out) const = 0;

    PlainLayouts plain_layouts(std::span<const TensorLayout> in,
                               std::span<const TensorLayout> out) const {
        Roles r = roles(in, out);
        PlainLayouts p;
        auto place = [&](const TensorLayout& l, size_t channels, std::vector<TensorLayout>& ls,
                         std::vector<size_t>& offsets) {
            offsets.push_back(p.staging_bytes);
            if (!channels) {
                ls.push_back(l);
                return;
            }
            ls.emplace_back(unblocked_shape(l, channels), l.dtype);
            p.staging_bytes += aligned(ls.back().access_bytes());
        };
        for (size_t i = 0; i < in.size(); ++i)
            place(in[i], r.in[i], p.in, p.in_offset);
        for (size_t i = 0; i < out.size(); ++i)
            place(out[i], r.out[i], p.out, p.out_offset);
        return p;
    }

    Plain& plain() {
        if (!m_plain)
            m_plain = this->handle()->template create_operator<Plain>();
        if (!(m_plain->param() == this->m_param))
            m_plain->param() = this->m_param;
        return *m_plain;
    }
    ChannelUnblock& unblock(size_t channels) {
        if (!m_unblock)
            m_unblock = this->handle()->template create_operator<ChannelUnblock>();
        m_unblock->param().channels = static_cast<uint32_t>(channels);
        return *m_unblock;
    }
    ChannelBlock& block(size_t block) {
        if (!m_block)
            m_block = this->handle()->template create_operator<ChannelBlock>();
        m_block->param().block = static_cast<uint32_t>(block);
        return *m_block;
    }

    std::unique_ptr<Plain> m_plain;
    std::unique_ptr<ChannelUnblock> m_unblock;
    std::unique_ptr<ChannelBlock> m_block;
};

class ConvolutionBackwardDataBlockedImpl final
    : public ViaPlain<ConvolutionBackwardDataBlocked, ConvolutionBackwardData> {
public:
    using ViaPlain::ViaPlain;

private:
    Roles roles(std::span<const TensorLayout> in, std::span<const TensorLayout>) const override {
        const TensorLayout& filter = in[0];
        return {{0, filter[0]}, {filter[1] * m_param.group}};
    }
};

class ConvolutionBackwardFilterBlockedImpl final
    : public ViaPlain<ConvolutionBackwardFilterBlocked, ConvolutionBackwardFilter> {
public:
    using ViaPlain::ViaPlain;

private:
    Roles roles(std::span<const TensorLayout>, std::span<const TensorLayout> out) const override {
        const TensorLayout& grad = out[0];
        return {{grad[1] * m_param.group, grad[0]}, {0}};
    }
};

class BatchNormForwardBlockedImpl final
    : public ViaPlain<BatchNormForwardBlocked, BatchNormForward> {
public:
    using ViaPlain::ViaPlain;

private:
    Roles roles(std::span<const TensorLayout> in, std::span<const TensorLayout>) const override {
        const size_t c = bn_channels(in[1]);
        return {{c, 0, 0, 0, 0}, {c, 0, 0, 0, 0}};
    }
};

class BatchNormBackwardBlockedImpl final
    : public ViaPlain<BatchNormBackwardBlocked, BatchNormBackward> {
public:
    using ViaPlain::ViaPlain;

private:
    Roles roles(std::span<const TensorLayout> in, std::span<const TensorLayout>) const override {
        const size_t c = bn_channels(in[2]);
        return {{c, c, 0, 0, 0}, {c, 0, 0}};
    }
};

// relu(BatchNormForwardBlocked): the unfused op, then the relu on its dst.
class BatchNormReluForwardBlockedImpl final : public BatchNormReluForwardBlocked {
public:
    using BatchNormReluForwardBlocked::BatchNormReluForwardBlocked;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> in,
                                  std::span<const TensorLayout> out) override {
        return unfused().get_workspace_in_bytes(in, out);
    }

    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out,
                 Workspace ws) override {
        unfused().exec_unchecked(in, out, ws);
        for_each_offset(out[0].layout, [&](ptrdiff_t off) {
            if (!(load(out[0], off) > 0))
                store(out[0], off, 0.0);
        });
    }

private:
    BatchNormForwardBlocked& unfused() {
        if (!m_unfused)
            m_unfused = handle()->create_operator<BatchNormForwardBlocked>();
        m_unfused->param() = m_param;
        return *m_unfused;
    }
    std::unique_ptr<BatchNormForwardBlocked> m_unfused;
};

// BatchNormBackwardBlocked of SWITCH_GT0(relu_dst, diff), the masked diff in the workspace.
class BatchNormReluBackwardBlockedImpl final : public BatchNormReluBackwardBlocked {
public:
    using BatchNormReluBackwardBlocked::BatchNormReluBackwardBlocked;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> in,
                                  std::span<const TensorLayout> out) override {
        return aligned(masked_layout(in[0]).access_bytes()) +
               unfused().get_workspace_in_bytes(unfused_inputs(in, masked_layout(in[0])), out);
    }

    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out,
                 Workspace ws) override {
        TensorLayout ml = masked_layout(in[0].layout);
        TensorND masked(ws.ptr, ml);
        const std::vector<ptrdiff_t> diff_off = offsets_of(in[0].layout),
                                     mask_off = offsets_of(in[5].layout),
                                     masked_off = offsets_of(ml);
        for (size_t i = 0; i < diff_off.size(); ++i)
            store(masked, masked_off[i],
                  load(in[5], mask_off[i]) > 0 ? load(in[0], diff_off[i]) : 0.0);
        std::vector<TensorND> unfused_in(in.begin(), in.begin() + 5);
        unfused_in[0] = masked;
        const size_t used = aligned(ml.access_bytes());
        unfused().exec_unchecked(unfused_in, out, {ws.ptr + used, ws.size - used});
    }

private:
    static TensorLayout masked_layout(const TensorLayout& diff) {
        return TensorLayout(diff, diff.dtype);
    }
    static std::vector<TensorLayout> unfused_inputs(std::span<const TensorLayout> in,
                                                    const TensorLayout& masked) {
        std::vector<TensorLayout> r(in.begin(), in.begin() + 5);
        r[0] = masked;
        return r;
    }
    BatchNormBackwardBlocked& unfused() {
        if (!m_unfused)
            m_unfused = handle()->create_operator<BatchNormBackwardBlocked>();
        m_unfused->param() = m_param;
        return *m_unfused;
    }
    std::unique_ptr<BatchNormBackwardBlocked> m_unfused;
};

}  // namespace
NM_REGISTER_NAIVE(ConvolutionBackwardDataBlocked, ConvolutionBackwardDataBlockedImpl);
NM_REGISTER_NAIVE(ConvolutionBackwardFilterBlocked, ConvolutionBackwardFilterBlockedImpl);
NM_REGISTER_NAIVE(BatchNormForwardBlocked, BatchNormForwardBlockedImpl);
NM_REGISTER_NAIVE(BatchNormBackwardBlocked, BatchNormBackwardBlockedImpl);
NM_REGISTER_NAIVE(BatchNormReluForwardBlocked, BatchNormReluForwardBlockedImpl);
NM_REGISTER_NAIVE(BatchNormReluBackwardBlocked, BatchNormReluBackwardBlockedImpl);
}  // namespace neomeg::dnn::naive
