// FusedElemwise: a chain of Elemwise ops (passes/fuse_elemwise.cpp) as one graph op that makes a
// single pass over memory. The output is cut into blocks of about kBlockElems elements; for each
// block every step of the chain runs the registry's Elemwise kernel on block-sized views, its
// intermediate results in small buffers that stay in cache, and only the last step writes the
// output. An intermediate that the graph needs too (an optimizer's momentum buffer, which the
// parameter's update then reads) is exported: its step writes a further output instead of a
// buffer, in the same pass. The kernels are the unfused ops' own, so the results are theirs, bit
// for bit. Float32 chains of single IEEE operations (+ - * /, max, min, relu, ...) and of
// FUSE_MUL_ADD3 over whole or single-element inputs run in loops of this file instead, with no
// kernel call per step (the same results: one float operation rounds as the kernels' double
// formula rounded once does, and a * b + c is the kernels' double formula written out).
//
// It lives only in compiled graphs: it is outside the operator registry, so a model file never
// holds one (trace.dump writes the unfused ops; a loaded model fuses when it is compiled).
#pragma once

#include <memory>
#include <vector>

#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/op_def.h"

namespace neomeg::graph {

class FusedElemwise final : public OpDef {
public:
    using Mode = dnn::param::Elemwise::Mode;
    // One Elemwise of the chain. An operand below the op's input count is that input; operand
    // num_inputs + k is the result of step k (an earlier step).
    struct Step {
        Mode mode;
        std::vector<uint32_t> operands;
        bool operator==(const Step&) const = default;
    };
    // Elements per block: the intermediate buffers of a block fit in L2 together (64 KiB each in
    // float32), and a chain that calls kernels (16-bit ones, broadcast operands) makes few calls:
    // a traced LeNet bfloat16 step's bias + ReLU chains took 0.60 ms in blocks of 2048, 0.25 ms
    // in blocks of 16384.
    static constexpr size_t kBlockElems = 16384;

    // ParamError for an empty chain, a step with the wrong arity or an operand that is not an
    // input or an earlier step, or an export that is not an earlier step than the last (or is
    // repeated). The last step's result is output 0; the result of step exports[j] is output
    // 1 + j.
    FusedElemwise(size_t num_inputs, std::vector<Step> steps, std::vector<uint32_t> exports = {});

    const std::vector<Step>& steps() const { return m_steps; }
    const std::vector<uint32_t>& exports() const { return m_exports; }
    size_t num_inputs() const { return m_num_inputs; }

    OpId id() const override { return kCustomOpId; }
    const char* name() const override { return "FusedElemwise"; }
    size_t hash() const override;
    bool is_same(const OpDef& rhs) const override;
    // "FusedElemwise(ADD(i0,i1), RELU(s0))": the steps in order, reading inputs i<k> and the
    // results s<k> of earlier steps; the last step's result is the output. Exported steps
    // follow: "FusedElemwise(ADD(i0,i1), RELU(s0); out s0)".
    std::string to_string() const override;
    std::shared_ptr<OpDef> clone() const override;
    std::vector<ParamField> param_fields() const override { return {}; }
    void set_param_field(std::string_view name, const ParamValue& value) override;

    // The inputs broadcast together, in the inputs' one dtype (each step keeps its dtype); one
    // such layout per output.
    std::vector<dnn::TensorLayout> infer_layouts(
            CompNode cn, std::span<const dnn::TensorLayout> inputs,
            std::span<const dnn::TensorShape> output_shapes) const override;
    // The block buffers of the intermediate results, and the largest workspace of a step.
    size_t workspace_in_bytes(CompNode cn, std::span<const dnn::TensorLayout> inputs,
                              std::span<const dnn::TensorLayout> outputs) const override;
    void exec(CompNode cn, std::span<const dnn::TensorND> inputs,
              std::span<const dnn::TensorND> outputs, dnn::Workspace workspace) const override;

private:
    // How the output is cut: blocks of `rows` indices along `axis`, each with every later axis
    // whole; the axes before it are walked one index at a time.
    struct Blocking {
        size_t axis = 0, rows = 1, inner = 1;
    };
    static Blocking blocking_of(const dnn::TensorShape& out);
    // Bytes of one intermediate buffer (aligned), for either way of cutting `out`.
    static size_t buffer_bytes(const dnn::TensorLayout& out);
    // The chain in float32 loops of its own over the flat output, in blocks, when every step is
    // one IEEE operation (exactly the kernels' results) and every input is whole or a single
    // element: no kernel call per step and block. False when it does not apply.
    bool exec_flat_f32(std::span<const dnn::TensorND> inputs,
                       std::span<const dnn::TensorND> outputs, dnn::Workspace workspace) const;
    // Where step k (not the last) writes its result: an output or a block buffer.
    static constexpr size_t kNoOutput = SIZE_MAX;

    size_t m_num_inputs;
    std::vector<Step> m_steps;
    std::vector<uint32_t> m_exports;
    std::vector<size_t> m_output_of;  // per step: its output index, or kNoOutput
    std::vector<size_t> m_buffer_of;  // per step but the last that is no output: its block
                                      // buffer (shared by steps whose results are never live
                                      // together)
    size_t m_num_buffers = 0;
    bool m_all_simple = true;  // every step has a float32 loop of its own (exec_flat_f32)
    std::vector<std::shared_ptr<ops::Elemwise>> m_ops;  // per step; they cache their kernels
};

}  // namespace neomeg::graph
