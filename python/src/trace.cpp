// megengine.jit.trace's C++ half: TraceSession records a traced call into a ComputingGraph
// (imperative::TraceRecorder), resolves the tensors the call read from outside, compiles the
// graph and replays it.
//
// Resolution after the recording, for each tensor the call read without making it
// ("external"): when a Python Tensor object that existed before the call (or that the call
// updated in place) held it, the graph input is bound to that object and each replay reads the
// object's current value; otherwise (a constant made inside the call, a value autograd made in
// C++) it becomes a graph constant. capture_as_const makes constants of every external that the
// call did not update. Each object the call gave a new value (Tensor._reset, x[...] = v) gets a
// graph output, written back into it after every replay.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string_view>
#include <unordered_map>

#include "fast_tensor.h"
#include "graph_profile.h"
#include "neomeg/dnn/errors.h"
#include "neomeg/graph/passes.h"
#include "neomeg/serialization/model_file.h"
#include "trace.h"

namespace neomeg::python::trace {

namespace {

using imperative::Tensor;
using imperative::TraceRecorder;

// Frames in files under this directory (the megengine package) are skipped when locating the
// user's line that made an op.
std::string g_package_dir;

std::string python_location() {
    PyFrameObject* f = PyEval_GetFrame();  // borrowed
    Py_XINCREF(f);
    std::string first;
    while (f) {
        PyCodeObject* code = PyFrame_GetCode(f);
        const char* file = PyUnicode_AsUTF8(code->co_filename);
        std::string here =
                std::string(file ? file : "?") + ":" + std::to_string(PyFrame_GetLineNumber(f));
        Py_DECREF(code);
        if (!file)
            PyErr_Clear();
        bool in_package =
                file && !g_package_dir.empty() && std::string_view(file).starts_with(g_package_dir);
        if (!in_package) {
            Py_DECREF(f);
            return here;
        }
        if (first.empty())
            first = here;
        PyFrameObject* back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    return first.empty() ? "<unknown>" : first;
}

// Which value a tensor holds, without keeping it: its storage's never-reused id (0 for none),
// first element and layout (a dead value's address may be reused; its id is not).
struct ValueId {
    uint64_t storage = 0;
    const void* ptr = nullptr;
    dnn::TensorLayout layout;

    explicit ValueId(const Tensor& t) {
        const dnn::TensorND nd = t.dnn_tensor();
        storage = nd.storage ? nd.storage->id() : 0;
        ptr = nd.raw_ptr();
        layout = t.layout();
    }
    bool holds(const Tensor& t) const { return is(ValueId(t)); }
    bool is(const ValueId& other) const {
        return storage == other.storage && ptr == other.ptr && layout.eq_layout(other.layout);
    }
    bool is(const TraceRecorder::Key& key) const {
        return storage == key.storage && ptr == key.ptr && layout.eq_layout(key.layout);
    }
};

bool same_shape_dtype(const dnn::TensorLayout& a, const dnn::TensorLayout& b) {
    return a.eq_shape(b) && a.dtype == b.dtype;
}

// Between eager tensors and the graph's values, without copying: a replay reads the bound
// parameters and arguments where they lie (the graph never writes its inputs), and each
// output's fresh storage becomes the new eager tensor. Only a strided tensor is gathered first.
DeviceTensor to_device(const Tensor& t) {
    Tensor c = t.contiguous();
    return DeviceTensor::share(c.blob(), static_cast<size_t>(c.offset()),
                               dnn::TensorLayout(c.shape(), c.dtype()));
}

Tensor from_device(const DeviceTensor& d) {
    return Tensor::share(d.blob(), static_cast<ptrdiff_t>(d.offset()), d.layout());
}

TensorWrapper& wrapper_of(py::handle obj) {
    TensorWrapper* w = fast::tensor_of(obj.ptr());
    if (!w)
        throw py::type_error(std::string("trace: expected a Tensor, got ") +
                             Py_TYPE(obj.ptr())->tp_name);
    return *w;
}

class TraceSession;
thread_local TraceSession* g_recording = nullptr;

class TraceSession {
public:
    TraceSession() : m_rec(&python_location) {}
    ~TraceSession() { stop(); }

    void start_record() {
        NM_THROW_IF(m_exe != nullptr, ParamError, "trace: this trace has been compiled already");
        m_rec.activate(TraceRecorder::Mode::Record);
        g_recording = this;
    }
    void start_check() { m_rec.activate(TraceRecorder::Mode::Check); }
    void stop() {
        m_rec.deactivate();
        if (g_recording == this)
            g_recording = nullptr;
    }
    void finish_check() const { m_rec.finish_check(); }

    // Argument `index` of the traced call (a Tensor), as the graph input `name`.
    void add_input(py::handle obj, const std::string& name) {
        const Tensor& t = wrapper_of(obj).value;
        m_rec.add_input(t, name);
        m_arg_objects.push_back(obj.ptr());
        m_arg_layouts.push_back(t.layout());
        m_arg_names.push_back(name);
    }

    void note(PyObject* obj) {
        if (m_rec.mode() != TraceRecorder::Mode::Record || m_rec.excluded())
            return;
        if (m_noted_index.count(obj))
            return;
        TensorWrapper* w = fast::tensor_of(obj);
        if (!w)
            return;
        m_noted_index.emplace(obj, m_noted.size());
        // A tensor made during the call is held weakly and its value not at all: the step's
        // intermediates die as they would eagerly (a recording kept them all). One that dies
        // before compile() was neither updated nor can it be written back.
        py::object held = py::reinterpret_borrow<py::object>(obj);
        if (w->created_in_trace)
            held = py::reinterpret_steal<py::object>(PyWeakref_NewRef(obj, nullptr));
        if (!held)
            throw py::error_already_set();
        m_noted.push_back({std::move(held), ValueId(w->value), w->created_in_trace});
    }

    // `obj` is about to take another value. A holder from before the call gives up the value it
    // had then: the graph reads the holder for that value (compile() binds it), so the recording
    // need not keep it alive (eager code lets an optimizer's old parameters go).
    void note_replacing(PyObject* obj) {
        note(obj);
        if (m_rec.mode() != TraceRecorder::Mode::Record || m_rec.excluded())
            return;
        auto it = m_noted_index.find(obj);
        if (it == m_noted_index.end() || m_noted[it->second].created_in_trace)
            return;
        const Tensor& now = fast::tensor_of(obj)->value;
        if (m_noted[it->second].initial.holds(now))
            m_rec.release_external(now);
    }

    void keep(const Tensor& t) {
        if (m_rec.mode() == TraceRecorder::Mode::Record && !m_rec.excluded())
            m_kept.push_back(t);
    }

    // A condition of the recording: each replay needs fn() == value (an optimizer's
    // hyperparameters, Python numbers the graph holds as constants).
    void note_guard(py::handle fn, py::handle value) {
        if (m_rec.mode() != TraceRecorder::Mode::Record || m_rec.excluded())
            return;
        for (auto g : m_guards)  // the same bound method of the same object: noted already
            if (py::object(g.cast<py::tuple>()[0]).equal(py::reinterpret_borrow<py::object>(fn)))
                return;
        m_guards.append(py::make_tuple(fn, value));
    }
    const py::list& guards() const { return m_guards; }

    // A generator's draw of a random key (megengine.random's RNG._key) while recording: the
    // (generator, key) pairs in call order, so that a replay draws the same sequence from the
    // same generators and gives each recorded random op the key its eager call would use.
    void note_key(py::handle rng, uint64_t key) {
        if (m_rec.mode() != TraceRecorder::Mode::Record || m_rec.excluded())
            return;
        m_keys.append(py::make_tuple(rng, key));
    }
    const py::list& keys() const { return m_keys; }
    py::list seeded_steps() const {
        py::list out;
        for (auto [step, seed] : executable().seeded_steps())
            out.append(py::make_tuple(step, seed));
        return out;
    }
    void set_seeds(const std::vector<std::pair<size_t, uint64_t>>& seeds) {
        NM_THROW_IF(!m_exe, ParamError, "trace: not compiled");
        for (auto [step, seed] : seeds)
            m_exe->set_seed(step, seed);
    }

    // obj.<name> = value (a Tensor or None) inside the recording: every replay assigns the
    // replay's value (a new Tensor) too, as the eager call would (GradManager setting .grad).
    void note_setattr(py::handle obj, const std::string& name, py::handle value) {
        if (m_rec.mode() != TraceRecorder::Mode::Record || m_rec.excluded())
            return;
        if (!value.is_none())
            wrapper_of(value);  // a Tensor, checked now
        for (auto& a : m_setattrs)
            if (a.obj.ptr() == obj.ptr() && a.name == name) {
                a.value = py::reinterpret_borrow<py::object>(value);
                return;
            }
        // Called before the assignment: whether the attribute was None decided the code's path
        // (GradManager accumulates into an existing .grad), so a replay requires the same.
        bool was_none = py::getattr(obj, name.c_str(), py::none()).is_none();
        m_setattrs.push_back({py::reinterpret_borrow<py::object>(obj), name,
                              py::reinterpret_borrow<py::object>(value), SIZE_MAX, was_none});
    }

    // The passes per opt_level (jit/tracing.py documents them): 0 none; 1 constant folding,
    // common-subexpression elimination and in-place reuse; 2 also ConvBias and elementwise
    // fusion, ReLU gradients masked by the ReLU's output (before a max pooling's backward where
    // one reads it), bias-gradient sums over the inner axes
    // first and, on x86, blocked layouts between convolutions; 3 also BatchNorm folding (it needs
    // the weights as constants: capture_as_const).
    static graph::CompileOptions options_for(int opt_level) {
        graph::CompileOptions o;
        o.fold_constants = o.eliminate_common_subexpr = o.reuse_inplace = opt_level >= 1;
        o.fuse_conv_bias = o.fuse_elemwise = o.mask_relu_grads = o.mask_before_pool_grads =
                o.propagate_layouts = o.reduce_inner_first = opt_level >= 2;
        o.fold_batch_norm = opt_level >= 3;
        return o;
    }

    // Builds the executable from the recording: `returned` are the call's output tensors.
    void compile(const py::list& returned, bool capture_as_const, int opt_level) {
        NM_THROW_IF(!m_rec.failure().empty(), ParamError,
                    "trace: the recording failed: ", m_rec.failure());
        // The noted objects still alive (those made during the call are held weakly), those
        // whose value the call replaced, and those that may stand for an external.
        std::vector<py::object> alive(m_noted.size());
        std::vector<bool> updated(m_noted.size());
        for (size_t i = 0; i < m_noted.size(); ++i) {
            alive[i] = m_noted[i].created_in_trace ? m_noted[i].obj() : m_noted[i].obj;
            if (alive[i].is_none())
                continue;
            updated[i] = !m_noted[i].initial.holds(wrapper_of(alive[i]).value);
        }

        std::unordered_map<std::string, size_t> bound_by_name;
        for (size_t e = 0; e < m_rec.externals().size(); ++e) {
            const auto& ext = m_rec.externals()[e];
            std::optional<size_t> holder;
            for (size_t i = 0; i < m_noted.size(); ++i) {
                if (alive[i].is_none() || (m_noted[i].created_in_trace && !updated[i]) ||
                    !m_noted[i].initial.is(ext.key))
                    continue;
                if (!holder || (updated[i] && !updated[*holder]))
                    holder = i;
            }
            // A released value (its holder gave it up, note_replacing) is the holder's to give
            // even under capture_as_const: the holder took it back if it was not updated.
            if (holder && (!capture_as_const || updated[*holder] || !ext.value.valid())) {
                bound_by_name.emplace(ext.var->name(), *holder);
                continue;
            }
            m_rec.freeze_external(e);
        }

        std::vector<graph::VarNode*> outs;
        for (auto obj : returned) {
            graph::VarNode* var = m_rec.var_or_constant(wrapper_of(obj).value);
            // MegEngine's names for a traced function's results (what trace.dump writes).
            if (var->kind() == graph::VarNode::Kind::Computed && var->name().empty())
                var->set_name("output_" + std::to_string(outs.size()));
            outs.push_back(var);
        }
        m_returned_vars = outs;
        m_num_returned = outs.size();
        for (size_t i = 0; i < m_noted.size(); ++i) {
            if (!updated[i])
                continue;
            outs.push_back(m_rec.var_or_constant(wrapper_of(alive[i]).value));
            WriteBack wb{alive[i], outs.size() - 1, -1};
            for (size_t a = 0; a < m_arg_objects.size(); ++a)
                if (m_arg_objects[a] == alive[i].ptr())
                    wb.arg = static_cast<ptrdiff_t>(a);
            if (wb.arg >= 0)
                wb.obj = py::none();  // the replay's own argument gets the value
            m_writebacks.push_back(std::move(wb));
        }
        for (auto& a : m_setattrs) {
            if (a.value.is_none())
                continue;
            outs.push_back(m_rec.var_or_constant(wrapper_of(a.value).value));
            a.output = outs.size() - 1;
            a.value = py::none();  // the replays assign their own values
        }
        for (const auto& t : m_kept)  // outputs no replay reads: their ops run on every replay
            if (graph::VarNode* var = m_rec.var_of(t))
                outs.push_back(var);
        // The recording's values are dead once its own references go (the call's intermediates
        // went with it; the recorder still holds the externals' old values), and the caching
        // allocator keeps their blocks, which an arena of one block cannot reuse: given back
        // before compiling, the constants and the arena take their pages instead of coming on
        // top of them (a BERT-mini step: 270 MiB more resident than eager, now less).
        discard_recording();
        CompNode::empty_all_caches();
        m_exe = m_rec.graph().compile(outs, options_for(opt_level));

        for (const auto& slot : m_exe->inputs()) {
            Feed feed;
            feed.layout = slot.layout;
            auto bound = bound_by_name.find(slot.name);
            if (bound != bound_by_name.end()) {
                feed.obj = alive[bound->second];
            } else {
                size_t a = 0;
                while (a < m_arg_names.size() && m_arg_names[a] != slot.name)
                    ++a;
                NM_THROW_IF(a == m_arg_names.size(), ParamError, "trace: the graph input '",
                            slot.name, "' has no source");
                feed.arg = a;
            }
            m_feeds.push_back(std::move(feed));
        }
    }

    // Drops what only the recording needed (the Python objects it noted, the eager values it
    // kept alive); the recorded ops stay for checking later calls.
    void discard_recording() {
        m_noted.clear();
        m_noted_index.clear();
        m_arg_objects.clear();
        m_kept.clear();
        m_rec.drop_tensors();
    }

    // Runs the compiled graph on `args`; None when they (or a bound tensor) no longer have the
    // recorded shapes and dtypes, or an attribute the call assigns (.grad) is None where it was
    // not or the reverse, so the caller can find where the call diverges.
    py::object run(const py::sequence& args) {
        NM_THROW_IF(!m_exe, ParamError, "trace: run before compile");
        if (static_cast<size_t>(py::len(args)) != m_arg_layouts.size())
            return py::none();
        std::vector<TensorWrapper*> arg_w(m_arg_layouts.size());
        for (size_t i = 0; i < arg_w.size(); ++i) {
            arg_w[i] = fast::tensor_of(args[i].ptr());
            if (!arg_w[i] || !same_shape_dtype(arg_w[i]->value.layout(), m_arg_layouts[i]))
                return py::none();
        }
        for (size_t k = 0; k < m_feeds.size(); ++k) {
            const Feed& f = m_feeds[k];
            const Tensor& v = f.obj ? wrapper_of(f.obj).value : arg_w[f.arg]->value;
            if (!same_shape_dtype(v.layout(), f.layout))
                return py::none();
        }
        for (const auto& a : m_setattrs)
            if (py::getattr(a.obj, a.name.c_str(), py::none()).is_none() != a.was_none)
                return py::none();
        for (size_t k = 0; k < m_feeds.size(); ++k) {
            const Feed& f = m_feeds[k];
            const Tensor& v = f.obj ? wrapper_of(f.obj).value : arg_w[f.arg]->value;
            m_exe->set_input(k, to_device(v));
        }
        m_exe->execute();
        py::list result;
        for (size_t i = 0; i < m_num_returned; ++i)
            result.append(
                    py::reinterpret_steal<py::object>(fast::wrap(from_device(m_exe->output(i)))));
        for (const auto& wb : m_writebacks) {
            TensorWrapper& w = wb.arg >= 0 ? *arg_w[wb.arg] : wrapper_of(wb.obj);
            auto meta = w.value.grad_meta();
            w.value = from_device(m_exe->output(wb.output));
            w.value.set_grad_meta(std::move(meta));
        }
        for (const auto& a : m_setattrs) {
            py::object value = py::none();
            if (a.output != SIZE_MAX)
                value = py::reinterpret_steal<py::object>(
                        fast::wrap(from_device(m_exe->output(a.output))));
            py::setattr(a.obj, a.name.c_str(), value);
        }
        return result;
    }

    py::list ops() const {
        py::list out;
        for (const auto& r : m_rec.ops())
            out.append(py::make_tuple(r.op->to_string(), r.location));
        return out;
    }
    std::string failure() const { return m_rec.failure(); }
    bool ever_excluded() const { return m_rec.ever_excluded(); }
    bool compiled() const { return m_exe != nullptr; }
    std::string dump() const {
        NM_THROW_IF(!m_exe, ParamError, "trace: not compiled");
        return m_exe->dump();
    }
    // The recorded graph (inputs arg_<i>/kwarg_<k>, bound externals as inputs, other
    // externals as constants) with its results as outputs, before the compile passes.
    std::string recorded_graph_text() {
        NM_THROW_IF(!m_exe, ParamError, "trace: not compiled");
        return m_rec.graph().dump(m_returned_vars);
    }
    // The model file of the results (trace.dump): a copy of the recorded graph in which each
    // input bound to a Python object (one the call updates in place) is a constant of the
    // object's current value, inputs renamed by `input_names` (recorded name -> new name) and
    // outputs named `output_names`; `optimize` runs constant folding, CSE and BatchNorm folding
    // (and with `fuse_conv_bias`, ConvBias fusion), then dead-code removal. Elementwise fusion
    // is left to the loader's compile: its fused op is not in the registry the file holds.
    // `input_shapes` declares inputs (by their new names) with -1 for dynamic dimensions.
    py::bytes dump_model(const std::map<std::string, std::string>& input_names,
                         const std::vector<std::string>& output_names, bool optimize,
                         const std::string& user_info, bool keep_var_names,
                         const std::map<std::string, std::vector<int64_t>>& input_shapes,
                         bool fuse_conv_bias) {
        NM_THROW_IF(!m_exe, ParamError, "trace: not compiled");
        NM_THROW_IF(output_names.size() != m_returned_vars.size(), ParamError,
                    "trace.dump: ", output_names.size(), " output names for ",
                    m_returned_vars.size(), " outputs");
        std::vector<graph::VarNode*> outs = m_returned_vars;
        auto g = m_rec.graph().copy(outs);
        for (graph::VarNode* v : g->vars()) {
            if (v->kind() != graph::VarNode::Kind::Input)
                continue;
            const Feed* bound = nullptr;
            for (size_t k = 0; k < m_feeds.size(); ++k)
                if (m_feeds[k].obj && m_exe->inputs()[k].name == v->name())
                    bound = &m_feeds[k];
            if (bound) {
                const Tensor& now = wrapper_of(bound->obj).value;
                NM_THROW_IF(!same_shape_dtype(now.layout(), v->layout()), ParamError,
                            "trace.dump: the tensor bound to '", v->name(),
                            "' no longer has the recorded shape and dtype");
                graph::VarNode* c = g->constant(to_device(now), v->name());
                g->replace_var(v, c);
                for (auto& o : outs)
                    if (o == v)
                        o = c;
                g->erase(v);
                continue;
            }
            auto renamed = input_names.find(v->name());
            if (renamed != input_names.end())
                v->set_name(renamed->second);
        }
        if (optimize) {
            graph::fold_constants(*g, outs);
            graph::eliminate_common_subexpressions(*g, outs);
            graph::fold_batch_norm(*g, outs);
            if (fuse_conv_bias)
                graph::fuse_conv_bias(*g, outs);
        }
        graph::eliminate_dead_code(*g, outs);
        std::vector<serialization::NamedVar> named;
        for (size_t i = 0; i < outs.size(); ++i)
            named.push_back({output_names[i], outs[i]});
        serialization::DumpOptions options;
        options.user_info = user_info;
        options.keep_var_names = keep_var_names;
        options.input_shapes = input_shapes;
        std::vector<uint8_t> bytes = serialization::dump(*g, named, options);
        return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }

    size_t num_bound() const {
        size_t n = 0;
        for (const auto& f : m_feeds)
            n += f.obj ? 1 : 0;
        return n;
    }
    size_t num_writebacks() const { return m_writebacks.size(); }
    const graph::Executable& executable() const {
        NM_THROW_IF(!m_exe, ParamError, "trace: not compiled");
        return *m_exe;
    }
    // jit.trace(profiling=True): every later run is timed, step by step.
    void enable_profile() {
        NM_THROW_IF(!m_exe, ParamError, "trace: not compiled");
        m_exe->enable_profile();
    }

private:
    struct Noted {
        py::object obj;  // a weak reference where created_in_trace
        ValueId initial;
        bool created_in_trace;
    };
    struct Feed {
        py::object obj;  // a bound tensor, or null for an argument
        size_t arg = 0;
        dnn::TensorLayout layout;
    };
    struct WriteBack {
        py::object obj;  // None when the target is argument `arg`
        size_t output;
        ptrdiff_t arg;
    };

    struct SetAttr {
        py::object obj;
        std::string name;
        py::object value;  // while recording: the last value assigned
        size_t output;     // after compile: its executable output, SIZE_MAX for None
        bool was_none;     // the attribute was None (or absent) before the call
    };

    TraceRecorder m_rec;
    py::list m_guards;  // (fn, value) pairs
    py::list m_keys;    // (generator, key) pairs
    std::vector<SetAttr> m_setattrs;
    std::vector<Tensor> m_kept;  // trace::keep's tensors, until compile
    std::vector<Noted> m_noted;
    std::unordered_map<PyObject*, size_t> m_noted_index;
    std::vector<PyObject*> m_arg_objects;
    std::vector<dnn::TensorLayout> m_arg_layouts;
    std::vector<std::string> m_arg_names;
    std::unique_ptr<graph::Executable> m_exe;
    std::vector<Feed> m_feeds;  // per executable input
    size_t m_num_returned = 0;
    // The results' vars in graph(): the graph's named outputs (a model file's, for dump).
    std::vector<graph::VarNode*> m_returned_vars;
    std::vector<WriteBack> m_writebacks;
};

}  // namespace

void note(PyObject* tensor) {
    if (g_recording)
        g_recording->note(tensor);
}

void note_replacing(PyObject* tensor) {
    if (g_recording)
        g_recording->note_replacing(tensor);
}

void keep(const Tensor& t) {
    if (g_recording)
        g_recording->keep(t);
}

}  // namespace neomeg::python::trace

namespace neomeg::python {

void init_trace(py::module_& m) {
    using trace::TraceSession;
    py::register_exception<imperative::TraceMismatch>(m, "TraceError", PyExc_Exception);
    py::class_<TraceSession>(m, "TraceSession",
                             "One traced function's recording and compiled graph (jit/tracing.py).")
            .def(py::init<>())
            .def("start_record", &TraceSession::start_record)
            .def("start_check", &TraceSession::start_check)
            .def("stop", &TraceSession::stop)
            .def("finish_check", &TraceSession::finish_check)
            .def("add_input", &TraceSession::add_input, py::arg("tensor"), py::arg("name"))
            .def("compile", &TraceSession::compile, py::arg("returned"),
                 py::arg("capture_as_const"), py::arg("opt_level"))
            .def("run", &TraceSession::run, py::arg("args"))
            .def("discard_recording", &TraceSession::discard_recording)
            .def_property_readonly("ops", &TraceSession::ops)
            .def_property_readonly("guards", &TraceSession::guards)
            .def_property_readonly("keys", &TraceSession::keys)
            .def("seeded_steps", &TraceSession::seeded_steps)
            .def("set_seeds", &TraceSession::set_seeds, py::arg("seeds"))
            .def_property_readonly("failure", &TraceSession::failure)
            .def_property_readonly("ever_excluded", &TraceSession::ever_excluded)
            .def_property_readonly("compiled", &TraceSession::compiled)
            .def_property_readonly("num_bound", &TraceSession::num_bound)
            .def_property_readonly("num_writebacks", &TraceSession::num_writebacks)
            .def_property_readonly(
                    "planned_peak_bytes",
                    [](const TraceSession& s) { return s.executable().planned_peak_bytes(); })
            .def_property_readonly(
                    "live_peak_bytes",
                    [](const TraceSession& s) { return s.executable().live_peak_bytes(); })
            .def("dump", &TraceSession::dump)
            .def("dump_model", &TraceSession::dump_model, py::arg("input_names"),
                 py::arg("output_names"), py::arg("optimize"), py::arg("user_info"),
                 py::arg("keep_var_names"), py::arg("input_shapes"), py::arg("fuse_conv_bias"))
            .def("recorded_graph_text", &TraceSession::recorded_graph_text)
            .def("enable_profile", &TraceSession::enable_profile)
            .def("profile", [](const TraceSession& s) { return last_run_profile(s.executable()); });
    m.def(
            "_trace_set_package_dir",
            [](std::string dir) { trace::g_package_dir = std::move(dir); },
            "Frames under this directory are skipped when a trace locates an op's call site.");
    m.def(
            "_trace_exclude",
            [](bool enter) {
                auto* rec = imperative::TraceRecorder::current();
                if (!rec)
                    return false;
                if (enter)
                    rec->begin_excluded();
                else
                    rec->end_excluded();
                return true;
            },
            "Opens (True) or closes (False) an exclude_from_trace region of the active trace; "
            "returns whether one is active.");
    m.def("_trace_active", [] { return imperative::TraceRecorder::any_active(); });
    m.def(
            "_trace_fail",
            [](const std::string& why) {
                if (auto* rec = imperative::TraceRecorder::current())
                    rec->fail(why);
            },
            "Ends the active trace's recording with this reason (its later calls run eagerly); "
            "megengine.distributed calls it for each collective.");
    m.def(
            "_trace_note_guard",
            [](py::handle fn, py::handle value) {
                if (trace::g_recording)
                    trace::g_recording->note_guard(fn, value);
            },
            "Notes a condition of the recording trace: a replay needs fn() == value, else the "
            "trace records again.");
    m.def(
            "_trace_note_key",
            [](py::handle rng, uint64_t key) {
                if (trace::g_recording)
                    trace::g_recording->note_key(rng, key);
            },
            "Notes a random key that generator `rng` drew for the recording trace.");
    m.def(
            "_trace_note_setattr",
            [](py::handle obj, const std::string& name, py::handle value) {
                if (trace::g_recording)
                    trace::g_recording->note_setattr(obj, name, value);
            },
            "Notes obj.<name> = value (a Tensor or None) for the recording trace, which then "
            "makes every replay assign its own value.");
    m.def("_is_tracing", [] {
        auto* rec = imperative::TraceRecorder::current();
        return rec != nullptr && !rec->excluded();
    });
}

}  // namespace neomeg::python
