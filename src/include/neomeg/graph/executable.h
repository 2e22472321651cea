// Executable: a compiled graph (ComputingGraph::compile). It owns an optimized copy of the graph,
// a fixed sequence of steps (one per operator node) and a memory plan: every intermediate var
// and workspace lies at a planned offset in one arena per comp node, allocated once. Each
// execute() runs the whole sequence on the inputs last set, with nothing rebuilt; each output is
// written to fresh storage, so the outputs of one run stay valid after the next. Steps whose
// outputs have dynamic shapes (VarNode::shape_dynamic) infer them when they run, from the values
// computed so far, and take their memory from the comp node's allocator instead of the arena.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "neomeg/core/device_tensor.h"
#include "neomeg/graph/memory_planner.h"

namespace neomeg {
class OpDef;
}

namespace neomeg::graph {

class StepProfile;

class ComputingGraph;
class OperatorNode;
class VarNode;

class Executable {
public:
    struct Slot {
        std::string name;          // the input var's name; outputs: the var's name, if any
        dnn::TensorLayout layout;  // a dynamic output's: a stand-in of its rank and dtype
        CompNode comp_node;
        bool shape_dynamic = false;  // known only when a run computes it
    };
    // One arena's plan: the buffers placed in it (intermediate vars and workspaces, in step
    // order) and where.
    struct Arena {
        CompNode comp_node;
        std::vector<BufferRequest> buffers;
        MemoryPlan plan;
    };

    ~Executable();
    Executable(const Executable&) = delete;
    Executable& operator=(const Executable&) = delete;

    // The inputs the outputs need, in creation order; and the outputs, as compile() got them.
    const std::vector<Slot>& inputs() const { return m_inputs; }
    const std::vector<Slot>& outputs() const { return m_outputs; }
    // The index of the input named `name`; ParamError when there is none.
    size_t input_index(std::string_view name) const;

    // Feeds an input for the next runs (kept until set again; not copied). ParamError for an
    // index out of range or a value of another shape, dtype or comp node.
    void set_input(size_t index, DeviceTensor value);
    void set_input(std::string_view name, DeviceTensor value) {
        set_input(input_index(name), std::move(value));
    }
    // Runs every step; ParamError naming the input when one was never set.
    void execute();
    // Output `index` of the last execute(); ParamError before the first or out of range.
    const DeviceTensor& output(size_t index) const;

    // Memory: one arena per comp node.
    const std::vector<Arena>& arenas() const { return m_arenas; }
    size_t planned_peak_bytes() const;  // sum of the arenas' sizes
    // Sum over arenas of the most bytes live at one step: what no placement can beat.
    size_t live_peak_bytes() const;
    size_t unplanned_total_bytes() const;  // sum of every planned buffer's size: no reuse
    size_t num_steps() const { return m_steps.size(); }
    size_t num_dynamic_steps() const;  // steps that infer their output shapes at run time

    // Times every step of every run from now on, without printing a table (NEOMEG_GRAPH_PROFILE
    // times from the start and prints one when the executable is destroyed): what
    // jit.trace(profiling=True) asks for.
    void enable_profile();
    // One step of the last run: its node and when it ran, in seconds since profiling began.
    struct StepTime {
        const OperatorNode* node;
        double start_s, end_s;
    };
    // The last run's steps in execution order; empty without a profile or before a run.
    std::vector<StepTime> last_run_profile() const;

    // The compiled (optimized) graph, as ComputingGraph::dump writes it.
    std::string dump() const;

    // Steps whose op is keyed by a "seed" param (random number generators, DropoutForward):
    // (step index, the seed it holds). A caller that wants each run to draw new numbers, as
    // the eager calls the graph stands for would, gives them new seeds with set_seed.
    std::vector<std::pair<size_t, uint64_t>> seeded_steps() const;
    // Step `step` runs its op with `seed` from the next run on; ParamError for a step without a
    // seed param.
    void set_seed(size_t step, uint64_t seed);

private:
    friend class ComputingGraph;
    Executable();

    // Where a var's memory comes from during a run.
    struct VarSlot {
        // Dynamic: a var of dynamic shape, in m_dynamic_values (outputs of dynamic shape stay
        // Output and are allocated by their step).
        enum class Source : uint8_t { Arena, Input, Const, Output, Dynamic } source;
        size_t index = 0;   // arena index / input index / output index
        size_t offset = 0;  // in the arena
        dnn::TensorLayout layout;
        bool dynamic = false;
        // A forwarded view's element 0, in bytes from its source's pointer (any source: views
        // of inputs, constants and arena vars alike); views of views add theirs.
        ptrdiff_t view_offset = 0;
    };
    struct Step {
        const OperatorNode* node;
        std::vector<size_t> inputs, outputs;  // var slots
        CompNode comp_node;
        size_t workspace_size = 0;
        size_t arena = 0, workspace_buffer = 0, workspace_offset = 0;
        size_t own_workspace_buffer = 0;           // its index when no buffer is shared in place
        std::vector<dnn::TensorND> in_nd, out_nd;  // reused every run
        bool dynamic = false;                      // infers, allocates and runs in run_dynamic_step
        std::shared_ptr<OpDef> reseeded;           // node's op with the seed set_seed gave
        const OpDef& op() const;                   // reseeded's, else the node's
    };
    std::byte* var_ptr(const VarSlot& v) const;
    // The var's tensor in this run with its storage's identity (storage.h).
    dnn::TensorND var_nd(const VarSlot& v, const dnn::TensorLayout& layout) const;
    // A var's layout in this run: a dynamic var's from its value.
    const dnn::TensorLayout& var_layout(const VarSlot& v) const;
    // executable_dynamic.cpp: a step of dynamic shapes.
    void run_dynamic_step(Step& step);
    // Fills every part above from the optimized graph and its outputs.
    // `reuse_inplace`: CompileOptions::reuse_inplace.
    void build(std::unique_ptr<ComputingGraph> graph, std::vector<VarNode*> outputs,
               bool reuse_inplace);

    std::unique_ptr<ComputingGraph> m_graph;
    std::vector<VarNode*> m_output_vars;
    std::vector<Slot> m_inputs, m_outputs;
    std::vector<DeviceTensor> m_input_values, m_const_values, m_output_values, m_dynamic_values;
    std::vector<VarSlot> m_vars;
    std::vector<size_t> m_output_var_slot;  // per output, its var slot
    std::vector<size_t> m_fresh_outputs;    // var slots of static outputs: allocated every run
    std::vector<Step> m_steps;
    std::vector<Arena> m_arenas;
    std::vector<std::shared_ptr<Blob>> m_arena_blobs;
    std::unique_ptr<StepProfile> m_profile;  // NEOMEG_GRAPH_PROFILE or enable_profile()
    bool m_print_profile = false;            // NEOMEG_GRAPH_PROFILE: the table at destruction
    bool m_ran = false;
};

}  // namespace neomeg::graph
