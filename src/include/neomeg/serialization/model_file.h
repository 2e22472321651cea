// The model file: a computing graph's part that some named outputs need, with its constants,
// named inputs and metadata, written with dump() and read back with load(). The format is
// flatbuffers (src/serialization/model.fbs, and params.fbs generated from the operator
// definitions); docs/architecture.md ("The model file") describes it.
//
//   serialization::dump_file(graph, {{"prob", y}}, "net.nmeg", {.user_info = "lenet"});
//   auto loaded = serialization::load_file("net.nmeg");
//   auto exe = loaded.graph->compile({loaded.outputs[0].var});
//
// load() checks everything before use: a truncated, corrupted or hostile file is a ModelError,
// never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "neomeg/graph/graph.h"
#include "neomeg/serialization/errors.h"

namespace neomeg::serialization {

// The format version this build writes, and the newest it reads.
inline constexpr uint32_t kFormatVersion = 1;

struct NamedVar {
    std::string name;
    graph::VarNode* var = nullptr;
};

struct Metadata {
    uint32_t format_version = kFormatVersion;
    std::string producer_name;
    std::string producer_version;
    std::string user_info;
};

struct DumpOptions {
    std::string user_info;
    std::string producer_name = "NeoMeg";
    std::string producer_version;  // empty: this build's version
    // Declared input shapes by input name, -1 for a dimension the loader may set (a dynamic
    // batch); the others must equal the graph's. Inputs not named keep the graph's shape.
    std::map<std::string, std::vector<int64_t>> input_shapes;
    // Keep the names of computed vars (inputs, constants and outputs always keep theirs).
    bool keep_var_names = true;
};

struct LoadOptions {
    // Where the graph runs; invalid: cpu0.
    CompNode comp_node;
    // Shapes for inputs with dynamic (-1) dimensions, by input name; the fixed dimensions must
    // match. Inputs not named take the shape they were dumped with.
    std::map<std::string, dnn::TensorShape> input_shapes;
    // Constants shared between loads of the same bytes on the same comp node (the weights, kept
    // once in memory: ops never write their inputs). Empty: this load copies the file's and
    // appends them; holding them: this load uses them (ParamError if one does not match).
    std::shared_ptr<std::vector<DeviceTensor>> shared_constants;
};

struct LoadedInput {
    std::string name;
    graph::VarNode* var = nullptr;
    std::vector<int64_t> declared_shape;  // as dumped: -1 for a dynamic dimension
};

struct LoadedGraph {
    std::unique_ptr<graph::ComputingGraph> graph;
    std::vector<LoadedInput> inputs;  // in file order
    std::vector<NamedVar> outputs;    // in file order
    Metadata metadata;

    std::vector<graph::VarNode*> output_vars() const;
};

// Writes what `outputs` need. Inputs and outputs are named (inputs by their var names, which
// must be non-empty and distinct; outputs by NamedVar::name, distinct). ModelError for an op
// outside the registry, a missing or repeated name, or a declared shape that does not fit.
std::vector<uint8_t> dump(const graph::ComputingGraph& graph, std::span<const NamedVar> outputs,
                          const DumpOptions& options = {});
void dump(const graph::ComputingGraph& graph, std::span<const NamedVar> outputs, std::ostream& out,
          const DumpOptions& options = {});
// Atomic: written to a temporary file beside `path`, synced and renamed over it, so a crash
// never leaves a half-written model. std::system_error when the file cannot be written.
void dump_file(const graph::ComputingGraph& graph, std::span<const NamedVar> outputs,
               const std::string& path, const DumpOptions& options = {});

// Whether `node`'s output shapes must be given when the op is inserted again (InsertOptions::
// output_shapes): its inputs alone do not give them (generators, a strided convolution's input
// gradient). dump() records the shapes of exactly these nodes; never for a value-shaped op, whose
// shapes come from its shape input's value.
bool needs_preset_shapes(const graph::OperatorNode& node);

// Rebuilds the graph. ModelError for anything wrong with the bytes (ModelVersionError for a
// format version this build does not read); ParamError for a LoadOptions input shape that does
// not fit the declared one.
LoadedGraph load(std::span<const uint8_t> bytes, const LoadOptions& options = {});
// std::system_error when the file cannot be read.
LoadedGraph load_file(const std::string& path, const LoadOptions& options = {});

// The metadata alone (verified like load()).
Metadata read_metadata(std::span<const uint8_t> bytes);

// The version string of this build ("0.1.0").
const char* neomeg_version();

}  // namespace neomeg::serialization
