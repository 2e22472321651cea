// The order an Executable runs its nodes in: the graph's creation order (ComputingGraph::
// topo_order), except that a node which takes nothing from the arena runs as soon as its inputs
// are ready.
#pragma once

#include <functional>
#include <vector>

namespace neomeg::graph {

class OperatorNode;

// Reorders `order` (a topological order of its nodes) so that every node `takes_no_arena`
// accepts (the caller's test, which must refuse nodes whose place matters beyond their inputs,
// such as a collective that its peers wait for) runs as soon as the nodes producing its inputs
// have run; the others keep their
// relative order. Such a node adds nothing to the bytes live at any step, so running it early
// can only end its inputs' lifetimes sooner. A training step's optimizer updates are the case
// this is for: written where the step's code calls `opt.step()`, after the whole backward, they
// kept every parameter's gradient alive until the end; run early, each gradient dies where it
// is consumed.
std::vector<OperatorNode*> run_arena_free_nodes_early(
        const std::vector<OperatorNode*>& order,
        const std::function<bool(const OperatorNode*)>& takes_no_arena);

// Moves every node that `movable` accepts and whose inputs all come from outside `order` (graph
// inputs and constants) to just before the first node reading one of its outputs; the others
// keep their relative order. Such a node ends no input's life, so running it later only shortens
// its outputs' lives. Kahn's order runs it wherever the ready queue momentarily holds nothing
// older, often at the start: BERT-mini's embedding gradient starts from a broadcast zero (30 MiB)
// that ran before the forward and stayed in the arena to the end of the backward.
std::vector<OperatorNode*> run_source_nodes_late(
        const std::vector<OperatorNode*>& order,
        const std::function<bool(const OperatorNode*)>& movable);

}  // namespace neomeg::graph
