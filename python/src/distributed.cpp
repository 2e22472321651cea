// megengine.core._imperative_rt.distributed: the Communicator (src/distributed/) on eager
// tensors, and NCCL's (device_communicator.h) on GPU tensors, queued on their comp node's
// stream. Inputs are made contiguous; outputs are new tensors on the input's comp node. The
// rendezvous store is the Python client of megengine.distributed.server, called with the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "dtype_convert.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/indexing.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "tensor.h"

#if NEOMEG_WITH_GLOO
#include <cstring>
#include <mutex>
#include <optional>
#include <tuple>

#include "distributed_async_ops.h"
#include "distributed_collective_ops.h"
#include "neomeg/distributed/communicator.h"
#include "neomeg/distributed/device_communicator.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "trace.h"
#endif

namespace neomeg::python {

#if NEOMEG_WITH_GLOO
namespace {

namespace dist = neomeg::distributed;
using Millis = std::chrono::milliseconds;

// Our Store over a Python object with set(key, bytes), get(key, timeout_s) -> bytes and
// wait(keys, timeout_s), which raise TimeoutError when a key does not come in time.
class PyStore final : public dist::Store {
public:
    explicit PyStore(py::object client) : m_client(std::move(client)) {}
    ~PyStore() override {
        py::gil_scoped_acquire gil;
        m_client = py::object();
    }

    void set(const std::string& key, const std::vector<char>& value) override {
        call([&] { m_client.attr("set")(key, py::bytes(value.data(), value.size())); });
    }
    std::vector<char> get(const std::string& key, Millis timeout) override {
        std::vector<char> out;
        call([&] {
            std::string s = m_client.attr("get")(key, timeout.count() / 1000.0).cast<py::bytes>();
            out.assign(s.begin(), s.end());
        });
        return out;
    }
    void wait(const std::vector<std::string>& keys, Millis timeout) override {
        call([&] { m_client.attr("wait")(keys, timeout.count() / 1000.0); });
    }

private:
    // Python errors become C++ ones here, with the GIL held, so that they cross Gloo's frames
    // as plain exceptions.
    template <class F>
    void call(F&& f) {
        py::gil_scoped_acquire gil;
        try {
            f();
        } catch (py::error_already_set& e) {
            std::string msg = e.what();
            if (e.matches(PyExc_TimeoutError))
                throw dist::StoreTimeout(msg);
            throw std::runtime_error(msg);
        }
    }
    py::object m_client;
};

// A group's communicators: Gloo's for CPU tensors, and NCCL's for GPU tensors, opened when the
// group first communicates on a GPU (every rank reaches that collective, so the rendezvous meets).
// Shared with the ops of traced graphs, which may outlive the Python object.
struct GroupComms {
    std::unique_ptr<PyStore> store;  // first: the communicators go before it
    std::shared_ptr<dist::Communicator> host;
    std::string prefix;
    Millis timeout{};
    std::mutex mutex;
    std::unique_ptr<dist::DeviceCommunicator> gpu;

    // NCCL's communicator on `cn`'s device; a group communicates on one GPU per process.
    dist::DeviceCommunicator& device(CompNode cn) {
        std::lock_guard lock(mutex);
        if (!gpu) {
            without_gil([&] {
                gpu = dist::open_nccl_communicator(*store, prefix + "nccl/", host->rank(),
                                                   host->size(), cn.device_index(), timeout);
            });
        } else if (gpu->device() != cn.device_index()) {
            throw py::value_error("distributed: this process group communicates on gpu" +
                                  std::to_string(gpu->device()) + ", got a tensor on " +
                                  cn.to_string());
        }
        return *gpu;
    }
};

bool on_gpu(const imperative::Tensor& t) {
    return t.comp_node().device_type() == CompNode::DeviceType::CUDA;
}

dist::ReduceOp reduce_op(const std::string& name) {
    if (name == "sum")
        return dist::ReduceOp::Sum;
    if (name == "max")
        return dist::ReduceOp::Max;
    if (name == "min")
        return dist::ReduceOp::Min;
    throw py::value_error("distributed: unknown reduce op '" + name + "' (sum, max or min)");
}

imperative::Tensor host_input(const TensorWrapper& t, const char* what) {
    if (t.value.comp_node().device_type() != CompNode::DeviceType::CPU)
        throw py::type_error(std::string("distributed ") + what +
                             ": on GPU tensors NCCL has no such collective (all_gather or "
                             "all_to_all can express it); got a tensor on " +
                             t.value.comp_node().to_string());
    return t.value.contiguous();
}

void* ptr(const imperative::Tensor& t) {
    return t.dnn_tensor().raw_ptr();
}

dnn::TensorShape with_first_dim(const dnn::TensorShape& s, size_t first) {
    std::vector<size_t> dims = s.to_vector();
    if (dims.empty())
        dims.push_back(first);
    else
        dims[0] = first;
    return dnn::TensorShape(dims);
}

size_t first_dim(const dnn::TensorShape& s) {
    return s.ndim ? s[0] : 1;
}

// The part of a tensor's first axis that goes to one rank; the first axis must split evenly.
size_t part_of(const imperative::Tensor& t, int size, const char* what) {
    size_t d0 = first_dim(t.shape());
    if (t.shape().ndim == 0 || d0 % size)
        throw py::value_error(std::string("distributed ") + what + ": the first axis of shape " +
                              t.shape().to_string() + " does not split into " +
                              std::to_string(size) + " equal parts");
    return d0 / size;
}

py::object wrap(imperative::Tensor t) {
    return py::cast(TensorWrapper{std::move(t)});
}

// All-reduce as an op of the eager runtime, which a traced graph holds and runs on every replay
// (its exec calls the communicator). Constant folding runs it only where its input is a constant,
// the same on every rank that traced the same code, so that its result is a constant too.
class AllReduceOpDef final : public imperative::CustomOpDef {
public:
    AllReduceOpDef(std::shared_ptr<GroupComms> comms, dist::ReduceOp op)
        : m_comms(std::move(comms)), m_op(op) {}

    const char* name() const override { return "AllReduce"; }
    size_t hash() const override {
        return std::hash<const void*>()(m_comms.get()) ^ static_cast<size_t>(m_op);
    }
    // Two all-reduces of one var give one value on every rank: CSE may merge them (each rank's
    // graph the same way), and a trace's check compares ops with it.
    bool is_same(const OpDef& rhs) const override {
        auto* r = dynamic_cast<const AllReduceOpDef*>(&rhs);
        return r && r->m_comms == m_comms && r->m_op == m_op;
    }
    std::string to_string() const override {
        return std::string("AllReduce(") +
               (m_op == dist::ReduceOp::Sum   ? "sum"
                : m_op == dist::ReduceOp::Max ? "max"
                                              : "min") +
               ")";
    }
    std::shared_ptr<OpDef> clone() const override {
        return std::make_shared<AllReduceOpDef>(m_comms, m_op);
    }
    bool graph_capable() const override { return true; }
    const imperative::GradRule* grad_rule() const override {
        return m_op == dist::ReduceOp::Sum ? &kSumRule : &kExtremeRule;
    }

    std::vector<imperative::Tensor> run(std::span<const imperative::Tensor> inputs) const override {
        auto in = inputs[0].contiguous();
        // A strided input was just copied into `in`, which nothing else sees: reduced in place,
        // it saves the communicator's copy of input into output.
        auto out = ptr(in) != ptr(inputs[0])
                           ? in
                           : imperative::Tensor::empty(in.shape(), in.dtype(), in.comp_node());
        all_reduce(in.comp_node(), ptr(in), ptr(out), in.shape().total_nr_elems(), in.dtype());
        return {out};
    }
    std::vector<dnn::TensorLayout> infer_layouts(CompNode, std::span<const dnn::TensorLayout> in,
                                                 std::span<const dnn::TensorShape>) const override {
        dnn::TensorLayout out(in[0], in[0].dtype);  // contiguous
        return {out};
    }
    size_t workspace_in_bytes(CompNode, std::span<const dnn::TensorLayout>,
                              std::span<const dnn::TensorLayout>) const override {
        return 0;
    }
    // A graph's replay (TraceSession::run).
    void exec(CompNode cn, std::span<const dnn::TensorND> inputs,
              std::span<const dnn::TensorND> outputs, dnn::Workspace) const override {
        all_reduce(cn, inputs[0].raw_ptr(), outputs[0].raw_ptr(), inputs[0].layout.total_nr_elems(),
                   inputs[0].layout.dtype);
    }

private:
    // On a GPU node: NCCL, queued on the node's stream after the work that computed `in`.
    void all_reduce(CompNode cn, const void* in, void* out, size_t n, dnn::DType dtype) const {
        if (cn.device_type() == CompNode::DeviceType::CUDA)
            m_comms->device(cn).all_reduce(in, out, n, dtype, m_op, cn.stream_handle());
        else
            without_gil([&] { m_comms->host->all_reduce(in, out, n, dtype, m_op); });
    }

    // The adjoint of a sum over ranks is the sum of the ranks' output gradients.
    static std::vector<imperative::Tensor> sum_backward(const imperative::OpDef& op,
                                                        std::span<const imperative::Tensor>,
                                                        std::span<const imperative::Tensor>,
                                                        std::span<const imperative::Tensor> dys,
                                                        std::span<const bool>) {
        return imperative::apply(op, dys.subspan(0, 1));
    }
    static constexpr imperative::GradRule kSumRule{&AllReduceOpDef::sum_backward, false, false};

    // Max and min: the summed output gradient reaches the ranks that held the extreme value.
    static std::vector<imperative::Tensor> extreme_backward(
            const imperative::OpDef& op, std::span<const imperative::Tensor> inputs,
            std::span<const imperative::Tensor> outputs, std::span<const imperative::Tensor> dys,
            std::span<const bool>) {
        const auto& self = static_cast<const AllReduceOpDef&>(op);
        AllReduceOpDef sum(self.m_comms, dist::ReduceOp::Sum);
        auto total = imperative::apply(sum, dys.subspan(0, 1))[0];
        dnn::param::Elemwise eq, mul;
        eq.mode = dnn::param::Elemwise::Mode::EQ;
        mul.mode = dnn::param::Elemwise::Mode::MUL;
        std::array<imperative::Tensor, 2> xy{inputs[0], outputs[0]};
        auto held = imperative::apply(imperative::ops::Elemwise(eq), xy)[0];
        dnn::param::TypeCvt cvt;
        cvt.dtype = total.dtype().enumv();
        auto mask = imperative::apply(imperative::ops::TypeCvt(cvt), {&held, 1})[0];
        std::array<imperative::Tensor, 2> tm{total, mask};
        return {imperative::apply(imperative::ops::Elemwise(mul), tm)[0]};
    }
    static constexpr imperative::GradRule kExtremeRule{&AllReduceOpDef::extreme_backward, true,
                                                       true};

    std::shared_ptr<GroupComms> m_comms;
    dist::ReduceOp m_op;
};

// All-gather and reduce-scatter (sum) along the first axis as ops of the eager runtime, which
// traced graphs hold like the all-reduce; each is the other's adjoint.
class GatherScatterOpDef final : public imperative::CustomOpDef {
public:
    enum class Kind { AllGather, ReduceScatterSum };
    GatherScatterOpDef(std::shared_ptr<GroupComms> comms, Kind kind)
        : m_comms(std::move(comms)), m_kind(kind) {}

    const char* name() const override {
        return m_kind == Kind::AllGather ? "AllGather" : "ReduceScatter";
    }
    size_t hash() const override {
        return std::hash<const void*>()(m_comms.get()) ^ (static_cast<size_t>(m_kind) + 7);
    }
    bool is_same(const OpDef& rhs) const override {
        auto* r = dynamic_cast<const GatherScatterOpDef*>(&rhs);
        return r && r->m_comms == m_comms && r->m_kind == m_kind;
    }
    std::string to_string() const override {
        return m_kind == Kind::AllGather ? "AllGather" : "ReduceScatter(sum)";
    }
    std::shared_ptr<OpDef> clone() const override {
        return std::make_shared<GatherScatterOpDef>(m_comms, m_kind);
    }
    bool graph_capable() const override { return true; }
    const imperative::GradRule* grad_rule() const override { return &kRule; }

    std::vector<imperative::Tensor> run(std::span<const imperative::Tensor> inputs) const override {
        auto in = inputs[0].contiguous();
        auto out = imperative::Tensor::empty(out_shape(in.shape()), in.dtype(), in.comp_node());
        imperative::Tensor scratch;
        if (size_t bytes = workspace(in.comp_node(), in.layout()))
            scratch = imperative::Tensor::empty(dnn::TensorShape({bytes}), dnn::dtype::Uint8,
                                                in.comp_node());
        dnn::TensorND src = in.dnn_tensor(), dst = out.dnn_tensor();
        dnn::Workspace ws;
        if (scratch.valid())
            ws = {static_cast<std::byte*>(ptr(scratch)), scratch.shape()[0]};
        exec(in.comp_node(), {&src, 1}, {&dst, 1}, ws);
        return {out};
    }
    std::vector<dnn::TensorLayout> infer_layouts(CompNode, std::span<const dnn::TensorLayout> in,
                                                 std::span<const dnn::TensorShape>) const override {
        return {dnn::TensorLayout(out_shape(in[0]), in[0].dtype)};
    }
    size_t workspace_in_bytes(CompNode cn, std::span<const dnn::TensorLayout> in,
                              std::span<const dnn::TensorLayout>) const override {
        return workspace(cn, in[0]);
    }
    void exec(CompNode cn, std::span<const dnn::TensorND> inputs,
              std::span<const dnn::TensorND> outputs, dnn::Workspace ws) const override {
        const auto& in = inputs[0];
        const auto& out = outputs[0];
        size_t n_in = in.layout.total_nr_elems(), n_out = out.layout.total_nr_elems();
        auto dtype = in.layout.dtype;
        bool gpu = cn.device_type() == CompNode::DeviceType::CUDA;
        if (m_kind == Kind::AllGather) {
            if (gpu)
                m_comms->device(cn).all_gather(in.raw_ptr(), out.raw_ptr(), n_in, dtype,
                                               cn.stream_handle());
            else
                without_gil([&] {
                    m_comms->host->all_gather(in.raw_ptr(), out.raw_ptr(), n_in, dtype);
                });
        } else if (gpu) {
            m_comms->device(cn).reduce_scatter(in.raw_ptr(), out.raw_ptr(), n_out, dtype,
                                               dist::ReduceOp::Sum, cn.stream_handle());
        } else {  // Gloo: the whole sum into the workspace, then this rank's part
            without_gil([&] {
                m_comms->host->all_reduce(in.raw_ptr(), ws.ptr, n_in, dtype, dist::ReduceOp::Sum);
            });
            if (n_out)
                std::memcpy(out.raw_ptr(), ws.ptr + dtype.size(n_out) * static_cast<size_t>(rank()),
                            dtype.size(n_out));
        }
    }

private:
    int rank() const { return m_comms->host->rank(); }
    int size() const { return m_comms->host->size(); }

    dnn::TensorShape out_shape(const dnn::TensorShape& in) const {
        if (m_kind == Kind::AllGather)
            return with_first_dim(in, first_dim(in) * static_cast<size_t>(size()));
        size_t d0 = first_dim(in);
        if (in.ndim == 0 || d0 % static_cast<size_t>(size()))
            throw py::value_error("distributed reduce_scatter: the first axis of shape " +
                                  in.to_string() + " does not split into " +
                                  std::to_string(size()) + " equal parts");
        return with_first_dim(in, d0 / static_cast<size_t>(size()));
    }
    size_t workspace(CompNode cn, const dnn::TensorLayout& in) const {
        bool host_sum =
                m_kind == Kind::ReduceScatterSum && cn.device_type() != CompNode::DeviceType::CUDA;
        return host_sum ? in.dtype.size(in.total_nr_elems()) : 0;
    }

    static std::vector<imperative::Tensor> backward(const imperative::OpDef& op,
                                                    std::span<const imperative::Tensor>,
                                                    std::span<const imperative::Tensor>,
                                                    std::span<const imperative::Tensor> dys,
                                                    std::span<const bool>) {
        const auto& self = static_cast<const GatherScatterOpDef&>(op);
        GatherScatterOpDef adjoint(self.m_comms, self.m_kind == Kind::AllGather
                                                         ? Kind::ReduceScatterSum
                                                         : Kind::AllGather);
        return imperative::apply(adjoint, dys.subspan(0, 1));
    }
    static constexpr imperative::GradRule kRule{&GatherScatterOpDef::backward, false, false};

    std::shared_ptr<GroupComms> m_comms;
    Kind m_kind;
};

// An all-reduce in flight: keeps its tensors alive until it is done.
class PyWork {
public:
    PyWork(std::shared_ptr<dist::Work> work, imperative::Tensor in, imperative::Tensor out)
        : m_work(std::move(work)), m_in(std::move(in)), m_out(std::move(out)) {}
    ~PyWork() {
        // The worker may still write into m_out: release the tensors only after it is done.
        if (m_work && !m_work->completed()) {
            py::gil_scoped_release nogil;
            try {
                m_work->wait();
            } catch (const std::exception&) {  // the error was the caller's to collect
            }
        }
    }

    py::object wait() {
        {
            py::gil_scoped_release nogil;
            m_work->wait();
        }
        return wrap(m_out);
    }
    bool completed() const { return m_work->completed(); }

private:
    std::shared_ptr<dist::Work> m_work;
    imperative::Tensor m_in, m_out;
};

// A bucket's all-reduce between its start op and its wait op.
struct PendingAllReduce {
    std::shared_ptr<AsyncAllReduceSlot> slot;
    int index;
};

class PyCommunicator {
public:
    PyCommunicator(py::object client, const std::string& prefix, int rank, int size,
                   double timeout_s, const std::string& hostname)
        : m_comms(std::make_shared<GroupComms>()) {
        if (!(timeout_s > 0))
            throw py::value_error("distributed: the timeout must be positive");
        m_comms->store = std::make_unique<PyStore>(std::move(client));
        m_comms->prefix = prefix;
        m_comms->timeout = Millis(static_cast<int64_t>(timeout_s * 1000));
        py::gil_scoped_release nogil;
        m_comm = std::make_shared<dist::Communicator>(*m_comms->store, prefix, rank, size,
                                                      m_comms->timeout, hostname);
        m_comms->host = m_comm;
    }

    int rank() const { return m_comm->rank(); }
    int size() const { return m_comm->size(); }

    py::object all_reduce(const TensorWrapper& x, const std::string& op) {
        auto in = x.value.contiguous();
        // In place when `in` is a fresh contiguous copy (see AllReduceOpDef::run).
        auto out = ptr(in) != ptr(x.value)
                           ? in
                           : imperative::Tensor::empty(in.shape(), in.dtype(), in.comp_node());
        auto rop = reduce_op(op);
        if (on_gpu(in)) {
            gpu(in).all_reduce(ptr(in), ptr(out), in.shape().total_nr_elems(), in.dtype(), rop,
                               stream(in));
            return wrap(out);
        }
        {
            py::gil_scoped_release nogil;
            m_comm->all_reduce(ptr(in), ptr(out), in.shape().total_nr_elems(), in.dtype(), rop);
        }
        return wrap(out);
    }

    // all_reduce through apply(): differentiable (sum), and recorded by an active trace.
    py::object all_reduce_op(const py::object& x, const std::string& op) {
        const auto& t = x.cast<const TensorWrapper&>();
        trace::note_if_tracing(x.ptr());
        AllReduceOpDef def(m_comms, reduce_op(op));
        std::array<imperative::Tensor, 1> in{t.value};
        return wrap(imperative::apply(def, in)[0]);
    }

    // The all-reduce as a start op and a wait op (distributed_async_ops.h): both recorded by an
    // active trace, which then overlaps the communication with the ops recorded between them.
    // The start takes the bucket's gradients and returns the bucket (their values, in order).
    py::tuple all_reduce_start_op(const py::list& grads, const std::string& op, int index) {
        if (grads.empty())
            throw py::value_error("distributed all_reduce_start_op: a bucket needs a gradient");
        std::vector<imperative::Tensor> in;
        for (const auto& g : grads) {
            if (!py::isinstance<TensorWrapper>(g))
                throw py::type_error("distributed all_reduce_start_op: takes a list of Tensors");
            const auto& t = g.cast<const TensorWrapper&>().value;
            if (on_gpu(t))  // NCCL is asynchronous on the stream already: all_reduce_op
                throw py::type_error(
                        "distributed all_reduce_start_op: takes CPU tensors, got one on " +
                        t.comp_node().to_string());
            if (!in.empty() && (t.dtype() != in[0].dtype() || t.comp_node() != in[0].comp_node()))
                throw py::value_error(
                        std::string("distributed all_reduce_start_op: one bucket holds one dtype "
                                    "on one device, got ") +
                        in[0].dtype().name() + " on " + in[0].comp_node().to_string() + " and " +
                        t.dtype().name() + " on " + t.comp_node().to_string());
            trace::note_if_tracing(g.ptr());
            in.push_back(t);
        }
        auto slot = std::make_shared<AsyncAllReduceSlot>();
        auto def = make_all_reduce_start(m_comm, reduce_op(op), index, slot);
        auto out = imperative::apply(*def, in)[0];
        return py::make_tuple(wrap(std::move(out)), PendingAllReduce{std::move(slot), index});
    }

    // The bucket's gradients: `shapes` (their sizes adding up to the bucket's), each divided by
    // `divisor` (the group's size for a mean of a float bucket, else 1).
    py::list all_reduce_wait_op(const PendingAllReduce& pending, const py::object& started,
                                const std::vector<std::vector<size_t>>& shapes, int divisor) {
        const auto& bucket = started.cast<const TensorWrapper&>().value;
        std::vector<dnn::TensorShape> parts;
        size_t total = 0;
        for (const auto& dims : shapes) {
            parts.emplace_back(dims);
            total += parts.back().total_nr_elems();
        }
        if (total != bucket.shape().total_nr_elems())
            throw py::value_error("distributed all_reduce_wait_op: the parts hold " +
                                  std::to_string(total) + " elements, the bucket " +
                                  bucket.shape().to_string());
        if (divisor < 1 || (divisor != 1 && !bucket.dtype().is_float()))
            throw py::value_error("distributed all_reduce_wait_op: divisor " +
                                  std::to_string(divisor) + " for a bucket of " +
                                  bucket.dtype().name() + " (float dtypes divide, 1 copies)");
        trace::note_if_tracing(started.ptr());
        auto def = make_all_reduce_wait(m_comm, pending.index, pending.slot, std::move(parts),
                                        divisor);
        std::array<imperative::Tensor, 1> in{bucket};
        py::list out;
        for (auto& t : imperative::apply(*def, in))
            out.append(wrap(std::move(t)));
        return out;
    }

    // all_gather ("all_gather") or reduce_scatter ("reduce_scatter_sum") through apply():
    // differentiable, and recorded by an active trace.
    py::object collective_op(const py::object& x, const std::string& kind) {
        const auto& t = x.cast<const TensorWrapper&>();
        GatherScatterOpDef::Kind k;
        if (kind == "all_gather")
            k = GatherScatterOpDef::Kind::AllGather;
        else if (kind == "reduce_scatter_sum")
            k = GatherScatterOpDef::Kind::ReduceScatterSum;
        else
            throw py::value_error("distributed collective_op: unknown collective '" + kind +
                                  "' (all_gather or reduce_scatter_sum)");
        trace::note_if_tracing(x.ptr());
        GatherScatterOpDef def(m_comms, k);
        std::array<imperative::Tensor, 1> in{t.value};
        return wrap(imperative::apply(def, in)[0]);
    }

    // broadcast, reduce_sum, gather, scatter, all_to_all (group rank `peer` the root), send
    // (to `peer`) or recv (from `peer`, of `shape` and `dtype`) through apply(): differentiable,
    // and held by a traced graph (distributed_collective_ops.h).
    py::object collective(const py::object& x, const std::string& kind, int peer, uint32_t tag,
                          const std::vector<size_t>& shape, const py::object& dtype) {
        const auto& t = x.cast<const TensorWrapper&>();
        CollectiveParams p;
        p.kind = collective_kind(kind);
        if (peer < 0 || peer >= size())
            throw py::value_error("distributed " + kind + ": rank " + std::to_string(peer) +
                                  " is not in a group of size " + std::to_string(size()));
        if ((p.kind == CollectiveKind::Gather || p.kind == CollectiveKind::Scatter) &&
            on_gpu(t.value))
            throw py::type_error("distributed " + kind +
                                 ": on GPU tensors NCCL has no such collective (all_gather or "
                                 "all_to_all can express it); got a tensor on " +
                                 t.value.comp_node().to_string());
        p.peer = peer;
        p.tag = tag;
        if (p.kind == CollectiveKind::Send) {
            p.shape = t.value.shape();
            p.dtype = t.value.dtype();
        } else if (p.kind == CollectiveKind::Recv) {
            p.shape = dnn::TensorShape(shape);
            p.dtype = dtype_from_py(dtype);
        }
        trace::note_if_tracing(x.ptr());
        CollectiveTarget target{m_comm,
                                [comms = m_comms](CompNode cn) -> dist::DeviceCommunicator& {
                                    return comms->device(cn);
                                },
                                m_comms.get()};
        auto def = make_collective_op(std::move(target), std::move(p));
        std::array<imperative::Tensor, 1> in{t.value};
        return wrap(imperative::apply(*def, in)[0]);
    }

    // in_place: the result goes into x's own memory (a contiguous x: a gradient bucket that
    // nothing else reads), saving the output buffer.
    std::unique_ptr<PyWork> all_reduce_async(const TensorWrapper& x, const std::string& op,
                                             bool in_place) {
        auto in = x.value.contiguous();
        auto out =
                in_place ? in : imperative::Tensor::empty(in.shape(), in.dtype(), in.comp_node());
        if (on_gpu(in)) {
            // NCCL on the node's stream is asynchronous already: the Work is done on the host's
            // side, and the work queued after it on the stream sees its result.
            gpu(in).all_reduce(ptr(in), ptr(out), in.shape().total_nr_elems(), in.dtype(),
                               reduce_op(op), stream(in));
            auto done = std::make_shared<dist::Work>();
            done->finish(nullptr);
            return std::make_unique<PyWork>(std::move(done), std::move(in), std::move(out));
        }
        auto work = m_comm->all_reduce_async(ptr(in), ptr(out), in.shape().total_nr_elems(),
                                             in.dtype(), reduce_op(op));
        return std::make_unique<PyWork>(std::move(work), std::move(in), std::move(out));
    }

    py::object reduce(const TensorWrapper& x, const std::string& op, int root) {
        auto in = x.value.contiguous();
        auto out = imperative::Tensor::empty(in.shape(), in.dtype(), in.comp_node());
        auto rop = reduce_op(op);
        if (on_gpu(in)) {
            gpu(in).reduce(ptr(in), ptr(out), in.shape().total_nr_elems(), in.dtype(), rop, root,
                           stream(in));
        } else {
            py::gil_scoped_release nogil;
            m_comm->reduce(ptr(in), ptr(out), in.shape().total_nr_elems(), in.dtype(), rop, root);
        }
        return rank() == root ? wrap(out) : py::none();
    }

    // Every rank passes a tensor of the root's shape and dtype; only the root's values count.
    py::object broadcast(const TensorWrapper& x, int root) {
        auto in = x.value.contiguous();
        auto out = imperative::Tensor::empty(in.shape(), in.dtype(), in.comp_node());
        size_t n = in.shape().total_nr_elems();
        if (on_gpu(in)) {
            gpu(in).broadcast(ptr(in), ptr(out), n, in.dtype(), root, stream(in));
            return wrap(out);
        }
        {
            // The root copies its input into the output while its messages go out from it.
            py::gil_scoped_release nogil;
            m_comm->broadcast(ptr(in), ptr(out), n, in.dtype(), root);
        }
        return wrap(out);
    }

    py::object all_gather(const TensorWrapper& x) {
        auto in = x.value.contiguous();
        auto out = imperative::Tensor::empty(
                with_first_dim(in.shape(), first_dim(in.shape()) * size()), in.dtype(),
                in.comp_node());
        if (on_gpu(in)) {
            gpu(in).all_gather(ptr(in), ptr(out), in.shape().total_nr_elems(), in.dtype(),
                               stream(in));
            return wrap(out);
        }
        {
            py::gil_scoped_release nogil;
            m_comm->all_gather(ptr(in), ptr(out), in.shape().total_nr_elems(), in.dtype());
        }
        return wrap(out);
    }

    py::object gather(const TensorWrapper& x, int root) {
        auto in = host_input(x, "gather");
        imperative::Tensor out;
        if (rank() == root)
            out = imperative::Tensor::empty(
                    with_first_dim(in.shape(), first_dim(in.shape()) * size()), in.dtype(),
                    in.comp_node());
        {
            py::gil_scoped_release nogil;
            m_comm->gather(ptr(in), out.valid() ? ptr(out) : nullptr, in.shape().total_nr_elems(),
                           in.dtype(), root);
        }
        return out.valid() ? wrap(out) : py::none();
    }

    // Every rank passes a tensor of the root's shape; rank r gets part r of the first axis.
    py::object scatter(const TensorWrapper& x, int root) {
        auto in = host_input(x, "scatter");
        size_t part = part_of(in, size(), "scatter");
        auto out = imperative::Tensor::empty(with_first_dim(in.shape(), part), in.dtype(),
                                             in.comp_node());
        {
            py::gil_scoped_release nogil;
            m_comm->scatter(ptr(in), ptr(out), out.shape().total_nr_elems(), in.dtype(), root);
        }
        return wrap(out);
    }

    py::object all_to_all(const TensorWrapper& x) {
        auto in = x.value.contiguous();
        part_of(in, size(), "all_to_all");
        auto out = imperative::Tensor::empty(in.shape(), in.dtype(), in.comp_node());
        if (on_gpu(in)) {
            gpu(in).all_to_all(ptr(in), ptr(out), in.shape().total_nr_elems() / size(), in.dtype(),
                               stream(in));
            return wrap(out);
        }
        {
            py::gil_scoped_release nogil;
            m_comm->all_to_all(ptr(in), ptr(out), in.shape().total_nr_elems() / size(), in.dtype());
        }
        return wrap(out);
    }

    // All-reduce, then this rank keeps its part of the first axis.
    py::object reduce_scatter(const TensorWrapper& x, const std::string& op) {
        auto in = x.value.contiguous();
        size_t part = part_of(in, size(), "reduce_scatter");
        auto rop = reduce_op(op);
        if (on_gpu(in)) {
            auto out = imperative::Tensor::empty(with_first_dim(in.shape(), part), in.dtype(),
                                                 in.comp_node());
            gpu(in).reduce_scatter(ptr(in), ptr(out), out.shape().total_nr_elems(), in.dtype(), rop,
                                   stream(in));
            return wrap(out);
        }
        auto full = imperative::Tensor::empty(in.shape(), in.dtype(), in.comp_node());
        auto out = imperative::Tensor::empty(with_first_dim(in.shape(), part), in.dtype(),
                                             in.comp_node());
        size_t n = out.shape().total_nr_elems();
        {
            py::gil_scoped_release nogil;
            m_comm->all_reduce(ptr(in), ptr(full), in.shape().total_nr_elems(), in.dtype(), rop);
        }
        if (n)
            std::memcpy(ptr(out), static_cast<std::byte*>(ptr(full)) + in.dtype().size(n) * rank(),
                        in.dtype().size(n));
        return wrap(out);
    }

    void send(const TensorWrapper& x, int dst, uint32_t tag) {
        auto in = x.value.contiguous();
        if (on_gpu(in)) {  // NCCL matches a send with the peer's next recv from this rank
            gpu(in).send(ptr(in), in.shape().total_nr_elems(), in.dtype(), dst, stream(in));
            return;
        }
        py::gil_scoped_release nogil;
        m_comm->send(ptr(in), in.shape().total_nr_elems(), in.dtype(), dst, tag);
    }

    void tell_peers_lost(int rank) {
        py::gil_scoped_release nogil;
        m_comm->tell_peers_lost(rank);
    }

    int reported_by(int peer, double wait) {
        py::gil_scoped_release nogil;
        return m_comm->reported_by(
                peer, std::chrono::milliseconds(static_cast<int64_t>(std::max(wait, 0.0) * 1000)));
    }

    py::object recv(const std::vector<size_t>& shape, const py::object& dtype,
                    const std::string& device, int src, uint32_t tag) {
        CompNode cn = CompNode::load(device);
        auto out = imperative::Tensor::empty(dnn::TensorShape(shape), dtype_from_py(dtype), cn);
        if (on_gpu(out)) {
            gpu(out).recv(ptr(out), out.shape().total_nr_elems(), out.dtype(), src, stream(out));
            return wrap(out);
        }
        {
            py::gil_scoped_release nogil;
            m_comm->recv(ptr(out), out.shape().total_nr_elems(), out.dtype(), src, tag);
        }
        return wrap(out);
    }

    // The sends (tensor, dst, tag) and recvs (shape, dtype, device, src, tag) of a group
    // (megengine.distributed.group_end) run together, so that paired transfers cannot wait for
    // each other; returns the received tensors in the order of `recvs`. GPU tensors go through
    // NCCL's group calls on their comp node's stream, CPU tensors through Gloo.
    py::list send_recv(const std::vector<std::tuple<TensorWrapper, int, uint32_t>>& sends,
                       const std::vector<std::tuple<std::vector<size_t>, py::object, std::string,
                                                    int, uint32_t>>& recvs) {
        std::vector<imperative::Tensor> keep;  // contiguous inputs, alive until posted
        std::vector<dist::PointToPoint> host_ops, gpu_ops;
        std::optional<CompNode> gpu_node;
        auto place = [&](const imperative::Tensor& t, dist::PointToPoint op) {
            if (!on_gpu(t)) {
                host_ops.push_back(op);
                return;
            }
            if (gpu_node && !(*gpu_node == t.comp_node()))
                throw py::value_error(
                        "distributed group_end: the GPU transfers of one group run "
                        "on one comp node, got " +
                        gpu_node->to_string() + " and " + t.comp_node().to_string());
            gpu_node = t.comp_node();
            gpu_ops.push_back(op);
        };
        for (const auto& [x, dst, tag] : sends) {
            keep.push_back(x.value.contiguous());
            const auto& t = keep.back();
            place(t, {dist::PointToPoint::Kind::Send, ptr(t), t.shape().total_nr_elems(), t.dtype(),
                      dst, tag});
        }
        py::list received;
        for (const auto& [shape, dtype, device, src, tag] : recvs) {
            auto out = imperative::Tensor::empty(dnn::TensorShape(shape), dtype_from_py(dtype),
                                                 CompNode::load(device));
            place(out, {dist::PointToPoint::Kind::Recv, ptr(out), out.shape().total_nr_elems(),
                        out.dtype(), src, tag});
            received.append(wrap(out));
        }
        // NCCL's group is only queued on the stream: it goes first, so that Gloo's blocking
        // batch does not hold it back.
        if (!gpu_ops.empty())
            m_comms->device(*gpu_node).send_recv(gpu_ops, gpu_node->stream_handle());
        if (!host_ops.empty()) {
            py::gil_scoped_release nogil;
            m_comm->send_recv(host_ops);
        }
        return received;
    }

    void barrier() {
        py::gil_scoped_release nogil;
        m_comm->barrier();
    }

private:
    // GPU tensors: NCCL's communicator, the tensor's comp node stream.
    dist::DeviceCommunicator& gpu(const imperative::Tensor& t) {
        return m_comms->device(t.comp_node());
    }
    static void* stream(const imperative::Tensor& t) { return t.comp_node().stream_handle(); }

    // Shared with the ops of traced graphs, which may outlive this object.
    std::shared_ptr<GroupComms> m_comms;
    std::shared_ptr<dist::Communicator> m_comm;  // m_comms->host
};

}  // namespace
#endif

void init_distributed(py::module_& m) {
    auto d = m.def_submodule(
            "distributed", "Collectives between processes (Gloo: CPU tensors; NCCL: GPU tensors).");
#if NEOMEG_WITH_GLOO
    d.attr("gloo_available") = true;
    // Subclasses of RuntimeError and TimeoutError, so that callers can catch either.
    // A CommError's message gets what the rendezvous store knows of the job's ranks (which one
    // left first: the rank killed mid-collective, rather than a peer that failed because of it)
    // from megengine.distributed.group._explain_comm_error, on the thread that raises it, with
    // the GIL.
    static py::handle comm_error =
            py::exception<dist::CommError>(d, "CommError", PyExc_RuntimeError).release();
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p)
                std::rethrow_exception(p);
        } catch (const dist::CommError& e) {
            std::string msg = e.what();
            try {
                msg = py::module_::import("megengine.distributed.group")
                              .attr("_explain_comm_error")(msg)
                              .cast<std::string>();
            } catch (const std::exception&) {
                // the package is not importable here: the message as it was
            }
            PyErr_SetString(comm_error.ptr(), msg.c_str());
        }
    });
    py::register_exception<dist::StoreTimeout>(d, "StoreTimeout", PyExc_TimeoutError);
    py::class_<PyWork>(d, "Work", "An all-reduce started by Communicator.all_reduce_async.")
            .def("wait", &PyWork::wait,
                 "Blocks until the all-reduce is done and returns its result (raises CommError "
                 "when it failed).")
            .def_property_readonly("completed", &PyWork::completed);
    py::class_<PendingAllReduce>(d, "PendingAllReduce",
                                 "A bucket's all-reduce between its start op and its wait op.")
            .def_property_readonly(
                    "completed",
                    [](const PendingAllReduce& p) {
                        return p.slot->work == nullptr || p.slot->work->completed();
                    },
                    "Whether no all-reduce of the bucket is in flight (the last one started has "
                    "run).");
    py::class_<PyCommunicator>(d, "Communicator",
                               "One rank's Gloo connections to the other ranks of a group.")
            .def(py::init<py::object, const std::string&, int, int, double, const std::string&>(),
                 py::arg("store"), py::arg("prefix"), py::arg("rank"), py::arg("size"),
                 py::arg("timeout"), py::arg("hostname") = "127.0.0.1")
            .def_property_readonly("rank", &PyCommunicator::rank)
            .def_property_readonly("size", &PyCommunicator::size)
            .def("all_reduce", &PyCommunicator::all_reduce)
            .def("all_reduce_op", &PyCommunicator::all_reduce_op,
                 "all_reduce as an op: differentiable (sum) and held by a traced graph.")
            .def("all_reduce_start_op", &PyCommunicator::all_reduce_start_op,
                 "Starts the all-reduce of a bucket of gradients (a list of CPU tensors of one "
                 "dtype) as an op (traced graphs hold it): copies them into a flat bucket and "
                 "reduces it in place; returns (bucket, PendingAllReduce). Read the result only "
                 "through all_reduce_wait_op.",
                 py::arg("grads"), py::arg("op"), py::arg("index"))
            .def("all_reduce_wait_op", &PyCommunicator::all_reduce_wait_op,
                 "Waits for a started all-reduce as an op; takes its PendingAllReduce, the "
                 "start's bucket, the shapes of the gradients it holds and a divisor (the "
                 "group's size for a mean, else 1); returns the gradients.",
                 py::arg("pending"), py::arg("started"), py::arg("shapes"), py::arg("divisor") = 1)
            .def("collective_op", &PyCommunicator::collective_op,
                 "all_gather or reduce_scatter_sum (first axis) as an op: differentiable and "
                 "held by a traced graph.")
            .def("collective", &PyCommunicator::collective, py::arg("x"), py::arg("kind"),
                 py::arg("peer") = 0, py::arg("tag") = 0, py::arg("shape") = std::vector<size_t>{},
                 py::arg("dtype") = py::none(),
                 "broadcast, reduce_sum, gather, scatter or all_to_all (from or to group rank "
                 "`peer`), send (to `peer`) or recv (from `peer`, of `shape` and `dtype`, `x` a "
                 "scalar dummy) as an op: differentiable and held by a traced graph.")
            .def("all_reduce_async", &PyCommunicator::all_reduce_async, py::arg("x"), py::arg("op"),
                 py::arg("in_place") = false,
                 "Starts an all-reduce on the communicator's worker thread; returns a Work. "
                 "in_place=True writes the result into x's memory (when x is contiguous).")
            .def("reduce", &PyCommunicator::reduce)
            .def("broadcast", &PyCommunicator::broadcast)
            .def("all_gather", &PyCommunicator::all_gather)
            .def("gather", &PyCommunicator::gather)
            .def("scatter", &PyCommunicator::scatter)
            .def("all_to_all", &PyCommunicator::all_to_all)
            .def("reduce_scatter", &PyCommunicator::reduce_scatter)
            .def("send", &PyCommunicator::send)
            .def("recv", &PyCommunicator::recv)
            .def("send_recv", &PyCommunicator::send_recv, py::arg("sends"), py::arg("recvs"),
                 "Runs sends [(tensor, dst, tag)] and recvs [(shape, dtype, device, src, tag)] "
                 "together (NCCL's group calls on GPU tensors, every Gloo transfer posted before "
                 "any is waited for on CPU ones); returns the received tensors.")
            .def("barrier", &PyCommunicator::barrier)
            .def("tell_peers_lost", &PyCommunicator::tell_peers_lost, py::arg("rank"),
                 "Tells the peers still connected that this rank lost group rank `rank`, before "
                 "it fails for it outside a collective (their errors then name that rank).")
            .def("reported_by", &PyCommunicator::reported_by, py::arg("peer"), py::arg("wait"),
                 "The group rank that group rank `peer` said it lost before closing its "
                 "connections to this rank (-1: none); waits up to `wait` seconds for that "
                 "connection to fail.");
    d.def("nccl_load_error", &dist::nccl_load_error,
          "'' when the NCCL library (libneomeg_distributed_nccl.so, which GPU tensors' "
          "collectives load) loads and exports its factory, else why not. Needs no GPU.");
#else
    d.attr("gloo_available") = false;
#endif
}

}  // namespace neomeg::python
