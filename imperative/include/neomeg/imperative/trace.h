// Trace recording: while a TraceRecorder is active on a thread, every apply() on that thread
// (Python's ops, autograd's backward rules, an optimizer's updates) also becomes an operator
// node of the recorder's ComputingGraph. Eager tensors map to vars by their memory and layout:
// a tensor is a value (nothing writes into a tensor's storage after the op that made it), so
// two tensors with the same storage, offset and layout hold the same value. A tensor the
// recording has not seen before becomes an input var ("external"); the layer above decides
// afterwards whether to bind it to a Python-visible tensor or to make it a constant.
//
// In check mode the recorder records nothing: each apply() is compared with the recorded op of
// the same position (op, params, input shapes and dtypes), and the first difference throws
// TraceMismatch naming both ops and where each was called from. That is how a replay that no
// longer matches its recording is reported at the line where it diverges.
//
//   TraceRecorder rec(location_fn);
//   rec.activate(); rec.add_input(x, "arg_0"); ... apply() calls ... rec.deactivate();
//   rec.graph().compile(...)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "neomeg/graph/graph.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/imperative/tensor.h"

namespace neomeg::imperative {

// A replay whose ops or inputs differ from its recording; Python's megengine.jit.TraceError.
class TraceMismatch : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class TraceRecorder {
public:
    enum class Mode : uint8_t { Record, Check };
    // Where the op being applied was called from ("file.py:12"); called once per recorded op.
    using LocationFn = std::string (*)();

    struct OpRecord {
        std::shared_ptr<const OpDef> op;
        std::string location;
        std::vector<dnn::TensorLayout> input_layouts;
        std::vector<size_t> input_vars;  // var ids in graph()
    };
    // Where a tensor's elements lie: its storage's never-reused id (0 for storage without one),
    // its first element's address and its layout. The id tells a dead tensor's entry from a new
    // tensor's that the caching allocator placed at the same address.
    struct Key {
        uint64_t storage;
        const std::byte* ptr;
        dnn::TensorLayout layout;
        bool operator==(const Key& rhs) const;
    };
    static Key key_of(const Tensor& t);
    struct External {
        graph::VarNode* var;
        Key key;       // the value's
        Tensor value;  // as the recording first read it; empty once released
    };

    explicit TraceRecorder(LocationFn location = nullptr);
    ~TraceRecorder();
    TraceRecorder(const TraceRecorder&) = delete;
    TraceRecorder& operator=(const TraceRecorder&) = delete;

    // Makes this the thread's recorder (ParamError when another one is active) in `mode`; a
    // check starts at the first recorded op.
    void activate(Mode mode = Mode::Record);
    void deactivate();
    // Defined out of line: the thread-local must be one object for every shared library that
    // asks (an inline one would be duplicated into the Python extension, built with hidden
    // visibility).
    static bool any_active();
    static TraceRecorder* current();
    Mode mode() const { return m_mode; }

    // An exclude_from_trace region: apply() neither records nor checks while one is open.
    void begin_excluded() {
        ++m_excluded;
        m_ever_excluded = true;
    }
    void end_excluded();
    bool excluded() const { return m_excluded > 0; }
    bool ever_excluded() const { return m_ever_excluded; }
    // Why recording stopped early (an op the graph cannot hold, such as a Python
    // autodiff.Function); empty while the recording is complete. Such a recording replays
    // nothing: its later calls run eagerly.
    const std::string& failure() const { return m_failure; }
    // Ends a recording (not a check, nor an excluded region) with `why` plus the caller's
    // location, for a reason found above apply(): what ran is correct eagerly but the graph could
    // not replay it (a collective of megengine.distributed whose result the graph would hold as a
    // constant; a backward pass through shapes that depend on data). The first reason stays.
    void fail(const std::string& why);

    // A named input var standing for `t` (a traced function's argument).
    graph::VarNode* add_input(const Tensor& t, std::string name);
    // The var standing for `t`'s value; null when the recording has not seen it.
    graph::VarNode* var_of(const Tensor& t) const;
    // var_of(t), else a new constant var holding `t`.
    graph::VarNode* var_or_constant(const Tensor& t);
    // `copy` holds the value of `original` in another layout (a contiguous copy of a
    // channels-last tensor, a row-major view of the same memory): while recording it maps to
    // original's var, since graph vars have no layout. Eager code that changes a tensor's layout
    // outside apply() (autograd keeping a row-major tensor's gradient row-major) must say so, or
    // the copy reads as a new external: a constant holding the recording's value, which every
    // replay would reuse.
    void note_same_value(const Tensor& original, const Tensor& copy);
    // note_same_value on the thread's recorder, when one records outside an excluded region.
    static void note_same_value_if_recording(const Tensor& original, const Tensor& copy);

    // Makes external `index` a constant holding the value the recording read (the input var is
    // replaced and erased); returns the constant. ParamError for a released one.
    graph::VarNode* freeze_external(size_t index);
    // The recording stops keeping `t`'s value alive if it is an external's: the caller binds
    // that external to a holder whose value `t` was (a parameter an optimizer is about to
    // replace), so the graph never needs the value itself. Kept to the end of the recording, a
    // training step's old parameters made its memory peak above the eager step's.
    void release_external(const Tensor& t);

    // Called by apply() when this recorder is active.
    void on_apply(const OpDef& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                  std::span<const dnn::TensorShape> shapes);
    // Called by run_generator() after it ran, when this recorder is active. A random generator
    // (a seed param) becomes a node with no inputs, which replays reseed; other generators are
    // not recorded (their results become externals, constants of the graph: right for Fill or
    // Eye).
    void on_generator(const OpDef& op, std::span<const Tensor> outputs,
                      std::span<const dnn::TensorShape> shapes, CompNode cn);
    // Ends a check: TraceMismatch when the replay ran fewer ops than the recording.
    void finish_check() const;

    // Lets go of the eager tensors the recording kept alive (every mapped value, the
    // externals' values) once the graph is built: var_of() finds nothing afterwards.
    void drop_tensors();

    graph::ComputingGraph& graph() { return *m_graph; }
    const std::vector<OpRecord>& ops() const { return m_ops; }
    const std::vector<External>& externals() const { return m_externals; }

private:
    struct KeyHash {
        size_t operator()(const Key& k) const;
    };
    std::string location() const { return m_location ? m_location() : std::string(); }
    void bind(const Tensor& t, graph::VarNode* var);
    void record(const OpDef& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                std::span<const dnn::TensorShape> shapes);
    void check(const OpDef& op, std::span<const Tensor> inputs);

    LocationFn m_location;
    Mode m_mode = Mode::Record;
    int m_excluded = 0;
    bool m_ever_excluded = false;
    size_t m_check_pos = 0;
    std::string m_failure;
    std::unique_ptr<graph::ComputingGraph> m_graph;
    std::unordered_map<Key, graph::VarNode*, KeyHash> m_vars;
    // Mapped tensors whose storage has no id: kept, so that their addresses are not reused while
    // the recording runs. Tensors with one are not kept: the recording's memory then peaks where
    // eager mode's does, not at the sum of every value the step made.
    std::vector<Tensor> m_alive;
    std::vector<OpRecord> m_ops;
    std::vector<External> m_externals;
};

}  // namespace neomeg::imperative
