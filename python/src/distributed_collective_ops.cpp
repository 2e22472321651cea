#if NEOMEG_WITH_GLOO
#include "distributed_collective_ops.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "distributed_async_ops.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/op/defs/indexing.h"
#include "neomeg/op/defs/views.h"
#include "trace.h"

namespace neomeg::python {

namespace {

namespace dist = neomeg::distributed;
using imperative::Tensor;

const char* kind_name(CollectiveKind k) {
    switch (k) {
        case CollectiveKind::Broadcast:
            return "Broadcast";
        case CollectiveKind::ReduceSum:
            return "Reduce";
        case CollectiveKind::Gather:
            return "Gather";
        case CollectiveKind::Scatter:
            return "Scatter";
        case CollectiveKind::AllToAll:
            return "AllToAll";
        case CollectiveKind::Send:
            return "Send";
        case CollectiveKind::Recv:
            return "Recv";
    }
    return "?";
}

dnn::TensorShape with_first_dim(const dnn::TensorShape& s, size_t first) {
    std::vector<size_t> dims = s.to_vector();
    dims.at(0) = first;
    return dnn::TensorShape(dims);
}

class CollectiveOpDef final : public imperative::CustomOpDef {
public:
    CollectiveOpDef(CollectiveTarget target, CollectiveParams params)
        : m_target(std::move(target)), m_params(std::move(params)) {}

    const char* name() const override { return kind_name(m_params.kind); }
    size_t hash() const override {
        return std::hash<const void*>()(m_target.group) ^
               (static_cast<size_t>(m_params.kind) << 4) ^
               (static_cast<size_t>(m_params.peer) << 8) ^
               (static_cast<size_t>(m_params.tag) << 20);
    }
    // Two of them are one only for the same group, kind, peer and message: CSE never merges two
    // sends, and a trace's check compares ops with it.
    bool is_same(const OpDef& rhs) const override {
        auto* r = dynamic_cast<const CollectiveOpDef*>(&rhs);
        return r && r->m_target.group == m_target.group && r->m_params.kind == m_params.kind &&
               r->m_params.peer == m_params.peer && r->m_params.tag == m_params.tag &&
               r->m_params.shape.eq_shape(m_params.shape) && r->m_params.dtype == m_params.dtype;
    }
    std::string to_string() const override {
        std::string s = kind_name(m_params.kind);
        switch (m_params.kind) {
            case CollectiveKind::AllToAll:
                return s;
            case CollectiveKind::Send:
                return s + "(to=" + std::to_string(m_params.peer) +
                       ", tag=" + std::to_string(m_params.tag) + ")";
            case CollectiveKind::Recv:
                return s + "(from=" + std::to_string(m_params.peer) +
                       ", tag=" + std::to_string(m_params.tag) + ")";
            case CollectiveKind::ReduceSum:
                return s + "(sum, root=" + std::to_string(m_params.peer) + ")";
            default:
                return s + "(root=" + std::to_string(m_params.peer) + ")";
        }
    }
    std::shared_ptr<OpDef> clone() const override {
        return std::make_shared<CollectiveOpDef>(m_target, m_params);
    }
    bool graph_capable() const override { return true; }
    const imperative::GradRule* grad_rule() const override { return &kRule; }

    std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
        auto in = inputs[0].contiguous();
        CompNode cn = in.comp_node();
        dnn::TensorLayout in_layout = in.layout();
        auto layout = infer_layouts(cn, {&in_layout, 1}, {})[0];
        auto out = Tensor::empty(layout, layout.dtype, cn);
        dnn::TensorND src = in.dnn_tensor(), dst = out.dnn_tensor();
        exec(cn, {&src, 1}, {&dst, 1}, {});
        trace::keep(out);
        return {out};
    }
    std::vector<dnn::TensorLayout> infer_layouts(CompNode, std::span<const dnn::TensorLayout> in,
                                                 std::span<const dnn::TensorShape>) const override {
        const auto& x = in[0];
        auto size = static_cast<size_t>(m_target.host->size());
        switch (m_params.kind) {
            case CollectiveKind::Broadcast:
            case CollectiveKind::ReduceSum:
                return {dnn::TensorLayout(x, x.dtype)};
            case CollectiveKind::Gather:
                return {dnn::TensorLayout(with_first_dim(x, first_dim(x) * size), x.dtype)};
            case CollectiveKind::Scatter:
                return {dnn::TensorLayout(with_first_dim(x, first_dim(x) / split(x)), x.dtype)};
            case CollectiveKind::AllToAll:
                split(x);
                return {dnn::TensorLayout(x, x.dtype)};
            case CollectiveKind::Send:
                return {dnn::TensorLayout(dnn::TensorShape(), dnn::dtype::Float32)};
            case CollectiveKind::Recv:
                return {dnn::TensorLayout(m_params.shape, m_params.dtype)};
        }
        throw std::logic_error("unknown collective");
    }
    size_t workspace_in_bytes(CompNode, std::span<const dnn::TensorLayout>,
                              std::span<const dnn::TensorLayout>) const override {
        return 0;
    }
    void exec(CompNode cn, std::span<const dnn::TensorND> inputs,
              std::span<const dnn::TensorND> outputs, dnn::Workspace) const override {
        const auto& in = inputs[0];
        const auto& out = outputs[0];
        if (!in.layout.is_contiguous())
            throw std::invalid_argument(std::string(name()) + ": the graph gave a strided input");
        if (cn.device_type() == CompNode::DeviceType::CUDA)
            exec_device(m_target.device(cn), cn.stream_handle(), in, out);
        else
            without_gil([&] { exec_host(in, out); });
    }

private:
    static size_t first_dim(const dnn::TensorShape& s) { return s.ndim ? s[0] : 1; }

    // The group size, after checking that the first axis of `x` splits into that many parts.
    size_t split(const dnn::TensorShape& x) const {
        auto size = static_cast<size_t>(m_target.host->size());
        if (x.ndim == 0 || x[0] % size)
            throw std::invalid_argument(std::string("distributed ") + name() +
                                        ": the first axis of shape " + x.to_string() +
                                        " does not split into " + std::to_string(size) +
                                        " equal parts");
        return size;
    }

    void exec_host(const dnn::TensorND& in, const dnn::TensorND& out) const {
        auto& comm = *m_target.host;
        int root = m_params.peer;
        bool is_root = comm.rank() == root;
        size_t n_in = in.layout.total_nr_elems(), n_out = out.layout.total_nr_elems();
        auto dtype = in.layout.dtype;
        size_t out_bytes = out.layout.dtype.size(n_out);
        switch (m_params.kind) {
            case CollectiveKind::Broadcast:
                // The root copies its input while its messages go out from it.
                comm.broadcast(in.raw_ptr(), out.raw_ptr(), n_in, dtype, root);
                return;
            case CollectiveKind::ReduceSum:
                if (!is_root && out_bytes)  // what backward starts from there: zeros
                    std::memset(out.raw_ptr(), 0, out_bytes);
                comm.reduce(in.raw_ptr(), out.raw_ptr(), n_in, dtype, dist::ReduceOp::Sum, root);
                return;
            case CollectiveKind::Gather:
                if (!is_root && out_bytes)
                    std::memset(out.raw_ptr(), 0, out_bytes);
                comm.gather(in.raw_ptr(), out.raw_ptr(), n_in, dtype, root);
                return;
            case CollectiveKind::Scatter:
                comm.scatter(in.raw_ptr(), out.raw_ptr(), n_out, dtype, root);
                return;
            case CollectiveKind::AllToAll:
                comm.all_to_all(in.raw_ptr(), out.raw_ptr(),
                                n_in / static_cast<size_t>(comm.size()), dtype);
                return;
            case CollectiveKind::Send:
                std::memset(out.raw_ptr(), 0, out_bytes);
                comm.send(in.raw_ptr(), n_in, dtype, m_params.peer, m_params.tag);
                return;
            case CollectiveKind::Recv:
                comm.recv(out.raw_ptr(), n_out, out.layout.dtype, m_params.peer, m_params.tag);
                return;
        }
    }

    // NCCL, queued on the node's stream. A non-root's reduce or gather output, and a send's
    // token, are left unwritten: only backward reads them, as a start with a zero gradient.
    void exec_device(dist::DeviceCommunicator& comm, void* stream, const dnn::TensorND& in,
                     const dnn::TensorND& out) const {
        int root = m_params.peer;
        size_t n_in = in.layout.total_nr_elems(), n_out = out.layout.total_nr_elems();
        auto dtype = in.layout.dtype;
        switch (m_params.kind) {
            case CollectiveKind::Broadcast:
                comm.broadcast(in.raw_ptr(), out.raw_ptr(), n_in, dtype, root, stream);
                return;
            case CollectiveKind::ReduceSum:
                comm.reduce(in.raw_ptr(), out.raw_ptr(), n_in, dtype, dist::ReduceOp::Sum, root,
                            stream);
                return;
            case CollectiveKind::AllToAll:
                comm.all_to_all(in.raw_ptr(), out.raw_ptr(),
                                n_in / static_cast<size_t>(comm.size()), dtype, stream);
                return;
            case CollectiveKind::Send:
                comm.send(in.raw_ptr(), n_in, dtype, m_params.peer, stream);
                return;
            case CollectiveKind::Recv:
                comm.recv(out.raw_ptr(), n_out, out.layout.dtype, m_params.peer, stream);
                return;
            case CollectiveKind::Gather:
            case CollectiveKind::Scatter:
                break;
        }
        throw std::invalid_argument(std::string("distributed ") + name() +
                                    ": NCCL has no such collective for GPU tensors");
    }

    // The adjoint collective of the output gradient: broadcast <-> reduce, gather <-> scatter,
    // all-to-all <-> itself; a send's gradient is received from its destination and a recv's
    // sent back to its source, under the next tag.
    static std::vector<Tensor> backward(const imperative::OpDef& op, std::span<const Tensor>,
                                        std::span<const Tensor>, std::span<const Tensor> dys,
                                        std::span<const bool>) {
        const auto& self = static_cast<const CollectiveOpDef&>(op);
        CollectiveParams p = self.m_params;
        switch (p.kind) {
            case CollectiveKind::Broadcast:
                p.kind = CollectiveKind::ReduceSum;
                break;
            case CollectiveKind::ReduceSum:
                p.kind = CollectiveKind::Broadcast;
                break;
            case CollectiveKind::Gather:
                p.kind = CollectiveKind::Scatter;
                break;
            case CollectiveKind::Scatter:
                p.kind = CollectiveKind::Gather;
                break;
            case CollectiveKind::AllToAll:
                break;
            case CollectiveKind::Send:
                p.kind = CollectiveKind::Recv;
                p.tag += 1;
                break;
            case CollectiveKind::Recv:
                // The token it returns is the gradient of the recv's dummy input: a zero scalar.
                p.kind = CollectiveKind::Send;
                p.tag += 1;
                p.shape = dys[0].shape();
                p.dtype = dys[0].dtype();
                break;
        }
        CollectiveOpDef adjoint(self.m_target, p);
        return imperative::apply(adjoint, dys.subspan(0, 1));
    }
    static constexpr imperative::GradRule kRule{&CollectiveOpDef::backward, false, false};

    CollectiveTarget m_target;
    CollectiveParams m_params;
};

}  // namespace

std::shared_ptr<imperative::OpDef> make_collective_op(CollectiveTarget target,
                                                      CollectiveParams params) {
    return std::make_shared<CollectiveOpDef>(std::move(target), std::move(params));
}

CollectiveKind collective_kind(const std::string& name) {
    if (name == "broadcast")
        return CollectiveKind::Broadcast;
    if (name == "reduce_sum")
        return CollectiveKind::ReduceSum;
    if (name == "gather")
        return CollectiveKind::Gather;
    if (name == "scatter")
        return CollectiveKind::Scatter;
    if (name == "all_to_all")
        return CollectiveKind::AllToAll;
    if (name == "send")
        return CollectiveKind::Send;
    if (name == "recv")
        return CollectiveKind::Recv;
    throw std::invalid_argument("distributed: unknown collective '" + name +
                                "' (broadcast, reduce_sum, gather, scatter, all_to_all, send "
                                "or recv)");
}

}  // namespace neomeg::python
#endif
