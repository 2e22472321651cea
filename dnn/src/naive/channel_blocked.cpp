// Naive kernels of ChannelBlock's layout: ChannelBlock and ChannelUnblock copy element by element
// (any dtype, any strides); ConvBiasBlocked unblocks src into its workspace and runs naive
// ConvBias's sum, writing bias, z and the nonlinearity through blocked offsets; PoolingBlocked
// runs the handle's PoolingForward once per channel block, on strided (N, block, spatial...)
// views of src and dst. Every blocked output gets zeros in the channels past C.
#include <cstring>

#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/common/channel_blocked.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/convolution.h"
#include "src/naive/handle.h"

namespace neomeg::dnn::naive {
namespace {

// The offset of plain index `idx` (N, C, spatial...) in a blocked layout.
ptrdiff_t blocked_offset(const TensorLayout& blocked, const size_t* idx, size_t block) {
    const size_t last = blocked.ndim - 1;
    ptrdiff_t off = static_cast<ptrdiff_t>(idx[0]) * blocked.stride[0] +
                    static_cast<ptrdiff_t>(idx[1] / block) * blocked.stride[1] +
                    static_cast<ptrdiff_t>(idx[1] % block) * blocked.stride[last];
    for (size_t d = 2; d < last; ++d)
        off += static_cast<ptrdiff_t>(idx[d]) * blocked.stride[d];
    return off;
}

class ChannelBlockImpl final : public ChannelBlock {
public:
    using ChannelBlock::ChannelBlock;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        const size_t esize = src.layout.dtype.size(), block = m_param.block;
        const size_t last = dst.layout.ndim - 1, channels = src.layout[1];
        auto* s = static_cast<const std::byte*>(src.raw_ptr());
        auto* d = static_cast<std::byte*>(dst.raw_ptr());
        for_each_index(dst.layout, [&](const auto& idx) {
            std::byte* to = d + offset_of(dst.layout, idx.data()) * static_cast<ptrdiff_t>(esize);
            std::array<size_t, TensorShape::MAX_NDIM> plain = idx;
            plain[1] = idx[1] * block + idx[last];
            if (plain[1] >= channels) {
                std::memset(to, 0, esize);
                return;
            }
            std::memcpy(to, s + offset_of(src.layout, plain.data()) * static_cast<ptrdiff_t>(esize),
                        esize);
        });
    }
};

class ChannelUnblockImpl final : public ChannelUnblock {
public:
    using ChannelUnblock::ChannelUnblock;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        const size_t esize = src.layout.dtype.size(), block = src.layout[src.layout.ndim - 1];
        auto* s = static_cast<const std::byte*>(src.raw_ptr());
        auto* d = static_cast<std::byte*>(dst.raw_ptr());
        for_each_index(dst.layout, [&](const auto& idx) {
            std::memcpy(d + offset_of(dst.layout, idx.data()) * static_cast<ptrdiff_t>(esize),
                        s + blocked_offset(src.layout, idx.data(), block) *
                                        static_cast<ptrdiff_t>(esize),
                        esize);
        });
    }
};

// Copies a blocked tensor's channels [0, plain's C) into the contiguous plain tensor.
template <class T>
void unblock_to(const TensorND& blocked, const TensorND& plain, size_t block) {
    for_each_index(plain.layout, [&](const auto& idx) {
        elem<T>(plain, offset_of(plain.layout, idx.data())) =
                elem<T>(blocked, blocked_offset(blocked.layout, idx.data(), block));
    });
}

class ConvBiasBlockedImpl final : public ConvBiasBlocked {
public:
    using ConvBiasBlocked::ConvBiasBlocked;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout>) override {
        BlockedConvShapes s = blocked_conv_shapes(*this, inputs);
        return s.src_blocked ? s.plain_src.access_bytes() : 0;
    }

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        std::array<TensorLayout, 4> layouts;
        for (size_t i = 0; i < 4; ++i)
            layouts[i] = inputs[i].layout;
        BlockedConvShapes s = blocked_conv_shapes(*this, layouts);
        const TensorND &filter = inputs[1], &bias = inputs[2], &z = inputs[3], &dst = outputs[0];
        const size_t block = m_param.block;
        const bool has_bias = bias.layout.ndim != 0, has_z = z.layout.ndim != 0;
        TensorLayout bias_l = bias.layout;
        for (size_t i = 0; i < bias_l.ndim; ++i)
            if (bias_l[i] == 1)
                bias_l.stride[i] = 0;
        const auto bs = has_bias ? conv_strides5(bias_l) : std::array<ptrdiff_t, 5>{};
        const ConvGeometry& g = s.geometry;
        const size_t spatial = g.spatial;
        // (n, c, o) of the padded-to-3-D output as a plain index of dst's rank.
        auto plain_index = [&](size_t n, size_t c, const std::array<size_t, kMaxConvSpatial>& o) {
            std::array<size_t, TensorShape::MAX_NDIM> idx{};
            idx[0] = n;
            idx[1] = c;
            for (size_t d = 0; d < spatial; ++d)
                idx[2 + d] = o[kMaxConvSpatial - spatial + d];
            return idx;
        };
        dispatch_float(dst.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            TensorND src = inputs[0];
            if (s.src_blocked) {
                src = TensorND(ws.ptr, s.plain_src);
                unblock_to<T>(inputs[0], src, block);
            }
            conv_forward_sums<T>(g, src, filter, [&](size_t n, size_t oc, const auto& o, double v) {
                auto idx = plain_index(n, oc, o);
                if (has_bias)
                    v += load_as_double<T>(bias, offset5(bs, n, oc, o));
                if (has_z)
                    v += load_as_double<T>(z, blocked_offset(z.layout, idx.data(), block));
                store_from_double<T>(
                        dst, blocked_offset(dst.layout, idx.data(), block),
                        conv_bias_nonlinearity(
                                static_cast<param::ConvBias::NonlineMode>(m_param.nonlineMode), v));
            });
            for (size_t n = 0; n < g.n; ++n)
                for (size_t oc = g.oc; oc < channel_blocks(g.oc, block) * block; ++oc)
                    for_each_pos3(g.out, [&](const auto& o) {
                        auto idx = plain_index(n, oc, o);
                        elem<T>(dst, blocked_offset(dst.layout, idx.data(), block)) = T(0);
                    });
        });
    }
};

// Block `cb` of a blocked tensor as a strided plain (N, block, spatial...) view.
TensorND block_view(const TensorND& t, size_t cb) {
    const TensorLayout& l = t.layout;
    TensorLayout v = l;
    v.ndim = l.ndim - 1;
    v[1] = l[l.ndim - 1];
    v.stride[1] = l.stride[l.ndim - 1];
    auto* base = static_cast<std::byte*>(t.raw_ptr()) +
                 static_cast<ptrdiff_t>(cb) * l.stride[1] * static_cast<ptrdiff_t>(l.dtype.size());
    return TensorND(base, v);
}

class PoolingBlockedImpl final : public PoolingBlocked {
public:
    using PoolingBlocked::PoolingBlocked;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) override {
        TensorLayout views[] = {block_view(TensorND(nullptr, inputs[0]), 0).layout,
                                block_view(TensorND(nullptr, outputs[0]), 0).layout};
        return pooling().get_workspace_in_bytes({views, 1}, {views + 1, 1});
    }

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) override {
        // Padding channels are zero in src, so pooling them keeps them zero in dst.
        for (size_t cb = 0; cb < inputs[0].layout[1]; ++cb) {
            TensorND in = block_view(inputs[0], cb), out = block_view(outputs[0], cb);
            pooling().exec_unchecked({&in, 1}, {&out, 1}, ws);
        }
    }

private:
    PoolingForward& pooling() {
        if (!m_pooling)
            m_pooling = handle()->create_operator<PoolingForward>();
        if (!(m_pooling->param() == m_param))
            m_pooling->param() = m_param;
        return *m_pooling;
    }
    std::unique_ptr<PoolingForward> m_pooling;
};

}  // namespace
NM_REGISTER_NAIVE(ChannelBlock, ChannelBlockImpl);
NM_REGISTER_NAIVE(ChannelUnblock, ChannelUnblockImpl);
NM_REGISTER_NAIVE(ConvBiasBlocked, ConvBiasBlockedImpl);
NM_REGISTER_NAIVE(PoolingBlocked, PoolingBlockedImpl);
}  // namespace neomeg::dnn::naive
