#if NEOMEG_WITH_GLOO
#include "distributed_async_ops.h"

#include <algorithm>
#include <cstddef>
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
        auto out = imperative::Tensor::empty(dnn::TensorShape({total(inputs)}), inputs[0].dtype(),
                                             inputs[0].comp_node());
        std::vector<imperative::Tensor> parts;
        std::vector<dnn::TensorND> views;
        for (const auto& in : inputs) {
            parts.push_back(in.contiguous());
            views.push_back(parts.back().dnn_tensor());
        }
        start(views, out.dnn_tensor());
        m_slot->output = out;
        return {out};
    }
    std::vector<dnn::TensorLayout> infer_layouts(CompNode, std::span<const dnn::TensorLayout> in,
                                                 std::span<const dnn::TensorShape>) const override {
        size_t n = 0;
        for (const auto& layout : in) {
            if (layout.dtype != in[0].dtype)
                throw std::invalid_argument(std::string("AllReduceStart: a bucket of ") +
                                            in[0].dtype.name() + " got a " + layout.dtype.name() +
                                            " gradient");
            n += layout.total_nr_elems();
        }
        return {dnn::TensorLayout(dnn::TensorShape({n}), in[0].dtype)};
    }
    size_t workspace_in_bytes(CompNode, std::span<const dnn::TensorLayout>,
                              std::span<const dnn::TensorLayout>) const override {
        return 0;
    }
    // Graph vars are contiguous. The output, which the wait step reads, lives until then.
    void exec(CompNode, std::span<const dnn::TensorND> inputs,
              std::span<const dnn::TensorND> outputs, dnn::Workspace) const override {
        settle(*m_slot);
        for (const auto& in : inputs)
            if (!in.layout.is_contiguous())
                throw std::invalid_argument("AllReduceStart: the graph gave a strided input");
        start(inputs, outputs[0]);
    }

private:
    static size_t total(std::span<const imperative::Tensor> inputs) {
        size_t n = 0;
        for (const auto& in : inputs)
            n += in.shape().total_nr_elems();
        return n;
    }

    // The gradients are copied into the bucket, which is then all-reduced in place on the
    // worker thread. The bucket is this op's own output, never a graph input or a folded
    // constant (passes leave custom ops alone), so reducing in place changes nothing that a
    // replay reads again; the gradients themselves are only read, before this returns.
    void start(std::span<const dnn::TensorND> parts, const dnn::TensorND& bucket) const {
        auto* dst = static_cast<std::byte*>(bucket.raw_ptr());
        for (const auto& part : parts) {
            size_t bytes = part.layout.dtype.size(part.layout.total_nr_elems());
            if (bytes)
                std::memcpy(dst, part.raw_ptr(), bytes);
            dst += bytes;
        }
        m_slot->work =
                m_comm->all_reduce_async(bucket.raw_ptr(), bucket.raw_ptr(),
                                         bucket.layout.total_nr_elems(), bucket.layout.dtype, m_op);
    }

    std::shared_ptr<dist::Communicator> m_comm;
    dist::ReduceOp m_op;
    int m_index;
    std::shared_ptr<AsyncAllReduceSlot> m_slot;
};

// Input: the start's output (the bucket, read to keep its memory in use until the all-reduce is
// done); outputs: the bucket's gradients, each its part of the result in its own
// shape, divided by `divisor` (the group's size for a mean; 1 for a sum). One pass over the
// bucket: the copy out of the result, the mean's division and the slices of the gradients are
// this op, not three ops of the graph with a bucket-sized buffer between each.
class AllReduceWaitOpDef final : public imperative::CustomOpDef {
public:
    AllReduceWaitOpDef(std::shared_ptr<dist::Communicator> comm, int index,
                       std::shared_ptr<AsyncAllReduceSlot> slot,
                       std::vector<dnn::TensorShape> shapes, int divisor)
        : m_comm(std::move(comm)),
          m_index(index),
          m_slot(std::move(slot)),
          m_shapes(std::move(shapes)),
          m_divisor(divisor) {}

    const char* name() const override { return "AllReduceWait"; }
    size_t hash() const override {
        return std::hash<const void*>()(m_comm.get()) ^ (static_cast<size_t>(m_index) << 16) ^
               (static_cast<size_t>(m_divisor) << 40) ^ m_shapes.size() ^ 1;
    }
    bool is_same(const OpDef& rhs) const override {
        auto* r = dynamic_cast<const AllReduceWaitOpDef*>(&rhs);
        return r && r->m_comm == m_comm && r->m_index == m_index && r->m_divisor == m_divisor &&
               std::equal(m_shapes.begin(), m_shapes.end(), r->m_shapes.begin(), r->m_shapes.end(),
                          [](const auto& a, const auto& b) { return a.eq_shape(b); });
    }
    std::string to_string() const override {
        return "AllReduceWait(" + std::to_string(m_index) + ")";
    }
    std::shared_ptr<OpDef> clone() const override {
        return std::make_shared<AllReduceWaitOpDef>(m_comm, m_index, m_slot, m_shapes, m_divisor);
    }
    bool graph_capable() const override { return true; }

    std::vector<imperative::Tensor> run(std::span<const imperative::Tensor> inputs) const override {
        if (!m_slot->work)
            throw std::logic_error("AllReduceWait: no all-reduce started for bucket " +
                                   std::to_string(m_index));
        settle(*m_slot);
        auto result = std::exchange(m_slot->output, imperative::Tensor());
        std::vector<imperative::Tensor> outs;
        std::vector<dnn::TensorND> dsts;
        for (const auto& shape : m_shapes) {
            outs.push_back(
                    imperative::Tensor::empty(shape, inputs[0].dtype(), inputs[0].comp_node()));
            dsts.push_back(outs.back().dnn_tensor());
        }
        split(result.dnn_tensor(), dsts);
        return outs;
    }
    std::vector<dnn::TensorLayout> infer_layouts(CompNode, std::span<const dnn::TensorLayout> in,
                                                 std::span<const dnn::TensorShape>) const override {
        std::vector<dnn::TensorLayout> out;
        for (const auto& shape : m_shapes)
            out.emplace_back(shape, in[0].dtype);
        return out;
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
        split(inputs[0], outputs);
    }

private:
    // Output i is the next part of `from` (contiguous outputs, as the graph and run give them).
    void split(const dnn::TensorND& from, std::span<const dnn::TensorND> to) const {
        auto dtype = from.layout.dtype;
        const auto* src = static_cast<const std::byte*>(from.raw_ptr());
        for (const auto& dst : to) {
            size_t n = dst.layout.total_nr_elems();
            if (m_divisor == 1)
                std::memcpy(dst.raw_ptr(), src, dtype.size(n));
            else
                divide(src, dst.raw_ptr(), n, dtype);
            src += dtype.size(n);
        }
    }

    // x / divisor in float, rounded once to the dtype: what Elemwise's TRUE_DIV by the group's
    // size gives (naive and x86 alike), so a mean equals the unfused graph's bit for bit.
    void divide(const void* src, void* dst, size_t n, dnn::DType dtype) const {
        auto each = [&](auto zero) {
            using T = decltype(zero);
            const auto* s = static_cast<const T*>(src);
            auto* d = static_cast<T*>(dst);
            const float div = static_cast<float>(m_divisor);
            for (size_t i = 0; i < n; ++i)
                d[i] = static_cast<T>(static_cast<float>(s[i]) / div);
        };
        switch (dtype.enumv()) {
            case dnn::DTypeEnum::Float32:
                return each(dnn::dt_float32{});
            case dnn::DTypeEnum::Float16:
                return each(dnn::dt_float16{});
            case dnn::DTypeEnum::BFloat16:
                return each(dnn::dt_bfloat16{});
            default:
                throw std::invalid_argument(
                        std::string("AllReduceWait: a divisor applies to float dtypes, got ") +
                        dtype.name());
        }
    }

    std::shared_ptr<dist::Communicator> m_comm;
    int m_index;
    std::shared_ptr<AsyncAllReduceSlot> m_slot;
    std::vector<dnn::TensorShape> m_shapes;
    int m_divisor;
};

}  // namespace

std::shared_ptr<imperative::OpDef> make_all_reduce_start(std::shared_ptr<dist::Communicator> comm,
                                                         dist::ReduceOp op, int index,
                                                         std::shared_ptr<AsyncAllReduceSlot> slot) {
    return std::make_shared<AllReduceStartOpDef>(std::move(comm), op, index, std::move(slot));
}

std::shared_ptr<imperative::OpDef> make_all_reduce_wait(std::shared_ptr<dist::Communicator> comm,
                                                        int index,
                                                        std::shared_ptr<AsyncAllReduceSlot> slot,
                                                        std::vector<dnn::TensorShape> shapes,
                                                        int divisor) {
    return std::make_shared<AllReduceWaitOpDef>(std::move(comm), index, std::move(slot),
                                                std::move(shapes), divisor);
}

}  // namespace neomeg::python
#endif
