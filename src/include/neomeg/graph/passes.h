// Graph rewrites that compile() runs on its copy of the graph; each works on any graph and
// returns how many nodes it changed. `outputs` are the vars the caller needs: a pass that
// replaces one of them updates the list.
#pragma once

#include <span>
#include <vector>

#include "neomeg/graph/graph.h"

namespace neomeg::graph {

// Runs every operator node whose inputs are all constants (and each op without inputs: every
// registry op is a pure function of its inputs and params, the RNGs of their seed) once, now,
// and replaces its outputs with constants holding the results; the folded nodes are erased.
// Returns the number of nodes folded. passes/const_fold.cpp
size_t fold_constants(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Merges operator nodes that apply the same op with equal params to the same inputs (and give
// equal output layouts) on one comp node: readers of the later node read the earlier one's
// outputs, and the later node is erased. Returns the number of nodes merged. passes/cse.cpp
size_t eliminate_common_subexpressions(ComputingGraph& graph, std::vector<VarNode*>& outputs);

// Erases the operator nodes that `outputs` do not need, and constants nothing reads. Inputs
// stay: they are the graph's interface. Returns the number of nodes and constants erased.
// passes/dce.cpp
size_t eliminate_dead_code(ComputingGraph& graph, std::span<VarNode* const> outputs);

}  // namespace neomeg::graph
