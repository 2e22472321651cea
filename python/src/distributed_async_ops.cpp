#if NEOMEG_WITH_GLOO
#include "distributed_async_ops.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace neomeg::python {

namespace {

namespace dist = neomeg::distributed;

// Waits for the all-reduce a slot holds, if any (a replay that failed between start and wait
// leaves one behind: its buffers must not be reused while the worker writes into them).
void settle(AsyncAllReduceSlot& slot) {
    if (auto work = std::exchange(slot.work, nullptr))
        without_gil([&] { work->wait(); });
}

class AllReduceStartOpDef final : public imperative::CustomOpDef {
public:
    AllReduceStartOpDef(std::shared_ptr<dist::Communicator> comm, dist::ReduceOp op, int index,
                        std::shared_ptr<AsyncAllReduceSlot> slot)
        : m_comm(std::move(comm)), m_op(op), m_index(index), m_slot(std::move(slot)) {}

    const char* name() const override { return "AllReduceStart"; }
    size_t hash() const override {
        return std::hash<const void*>()(m_comm.get()) ^ (static_cast<size_t>(m_op) << 8) ^
               (static_cast<size_t>(m_index) << 16);
    }
    bool is_same(const OpDef& rhs) const override {
        auto* r = dynamic_cast<const AllReduceStartOpDef*>(&rhs);
        return r && r->m_comm == m_comm && r->m_op == m_op && r->m_index == m_index;
    }
    std::string to_string() const override {
        return "AllReduceStart(" + std::to_string(m_index) + ")";
    }
    std::shared_ptr<OpDef> clone() const override {
        return std::make_shared<AllReduceStartOpDef>(m_comm, m_op, m_index, m_slot);
    }
    bool graph_capable() const override { return true; }

    std::vector<imperative::Tensor> run(std::span<const imperative::Tensor> inputs) const override {
        settle(*m_slot);
        auto in = inputs[0].contiguous();
        auto out = imperative::Tensor::empty(in.shape(), in.dtype(), in.comp_node());
        m_slot->work =
                m_comm->all_reduce_async(in.dnn_tensor().raw_ptr(), out.dnn_tensor().raw_ptr(),
                                         in.shape().total_nr_elems(), in.dtype(), m_op);
        m_slot->input = in;
        m_slot->output = out;
        return {out};
    }
    std::vector<dnn::TensorLayout> infer_layouts(CompNode, std::span<const dnn::TensorLayout> in,
                                                 std::span<const dnn::TensorShape>) const override {
        return {dnn::TensorLayout(in[0], in[0].dtype)};
    }
    size_t workspace_in_bytes(CompNode, std::span<const dnn::TensorLayout>,
                              std::span<const dnn::TensorLayout>) const override {
        return 0;
    }
    // The graph's input is contiguous (a bucket's concat); its memory and the output's live
    // until the wait step, which reads both.
    void exec(CompNode, std::span<const dnn::TensorND> inputs,
              std::span<const dnn::TensorND> outputs, dnn::Workspace) const override {
        settle(*m_slot);
        if (!inputs[0].layout.is_contiguous())
            throw std::invalid_argument("AllReduceStart: the graph gave a strided input");
        m_slot->work = m_comm->all_reduce_async(inputs[0].raw_ptr(), outputs[0].raw_ptr(),
                                                inputs[0].layout.total_nr_elems(),
                                                inputs[0].layout.dtype, m_op);
    }

private:
    std::shared_ptr<dist::Communicator> m_comm;
    dist::ReduceOp m_op;
    int m_index;
    std::shared_ptr<AsyncAllReduceSlot> m_slot;
};

// Inputs: the start's output and the start's input (read to keep its memory in use until the
// all-reduce is done); output: a copy of the result.
class AllReduceWaitOpDef final : public imperative::CustomOpDef {
public:
    AllReduceWaitOpDef(std::shared_ptr<dist::Communicator> comm, int index,
                       std::shared_ptr<AsyncAllReduceSlot> slot)
        : m_comm(std::move(comm)), m_index(index), m_slot(std::move(slot)) {}

    const char* name() const override { return "AllReduceWait"; }
    size_t hash() const override {
        return std::hash<const void*>()(m_comm.get()) ^ (static_cast<size_t>(m_index) << 16) ^ 1;
    }
    bool is_same(const OpDef& rhs) const override {
        auto* r = dynamic_cast<const AllReduceWaitOpDef*>(&rhs);
        return r && r->m_comm == m_comm && r->m_index == m_index;
    }
    std::string to_string() const override {
        return "AllReduceWait(" + std::to_string(m_index) + ")";
    }
    std::shared_ptr<OpDef> clone() const override {
        return std::make_shared<AllReduceWaitOpDef>(m_comm, m_index, m_slot);
    }
    bool graph_capable() const override { return true; }

    std::vector<imperative::Tensor> run(std::span<const imperative::Tensor> inputs) const override {
        if (!m_slot->work)
            throw std::logic_error("AllReduceWait: no all-reduce started for bucket " +
                                   std::to_string(m_index));
        settle(*m_slot);
        auto result = std::exchange(m_slot->output, imperative::Tensor());
        m_slot->input = imperative::Tensor();
        auto out = imperative::Tensor::empty(inputs[0].shape(), inputs[0].dtype(),
                                             inputs[0].comp_node());
        copy(result.dnn_tensor(), out.dnn_tensor());
        return {out};
    }
    std::vector<dnn::TensorLayout> infer_layouts(CompNode, std::span<const dnn::TensorLayout> in,
                                                 std::span<const dnn::TensorShape>) const override {
        return {dnn::TensorLayout(in[0], in[0].dtype)};
    }
    size_t workspace_in_bytes(CompNode, std::span<const dnn::TensorLayout>,
                              std::span<const dnn::TensorLayout>) const override {
        return 0;
    }
    void exec(CompNode, std::span<const dnn::TensorND> inputs,
              std::span<const dnn::TensorND> outputs, dnn::Workspace) const override {
        if (!m_slot->work)
            throw std::logic_error("AllReduceWait: no all-reduce started for bucket " +
                                   std::to_string(m_index));
        settle(*m_slot);
        copy(inputs[0], outputs[0]);
    }

private:
    static void copy(const dnn::TensorND& from, const dnn::TensorND& to) {
        size_t n = from.layout.total_nr_elems();
        if (n)
            std::memcpy(to.raw_ptr(), from.raw_ptr(), from.layout.dtype.size(n));
    }

    std::shared_ptr<dist::Communicator> m_comm;
    int m_index;
    std::shared_ptr<AsyncAllReduceSlot> m_slot;
};

}  // namespace

std::shared_ptr<imperative::OpDef> make_all_reduce_start(std::shared_ptr<dist::Communicator> comm,
                                                         dist::ReduceOp op, int index,
                                                         std::shared_ptr<AsyncAllReduceSlot> slot) {
    return std::make_shared<AllReduceStartOpDef>(std::move(comm), op, index, std::move(slot));
}

std::shared_ptr<imperative::OpDef> make_all_reduce_wait(std::shared_ptr<dist::Communicator> comm,
                                                        int index,
                                                        std::shared_ptr<AsyncAllReduceSlot> slot) {
    return std::make_shared<AllReduceWaitOpDef>(std::move(comm), index, std::move(slot));
}

}  // namespace neomeg::python
#endif
