// Host-value inference: what a graph knows about a var's *value* when it is built, so that shapes
// computed from other shapes (GetVarShape, arithmetic on it, ReshapeTo a computed shape) are
// static, and only shapes that depend on data (CondTake's count) are dynamic.
//
// A var has a host value when it is a small constant, the output of GetVarShape on a var of
// static shape, or the output of a pure, cheap op (Elemwise, Concat, TypeCvt, the view ops, ...)
// all of whose inputs have host values; the graph computes it on the CPU when the node is
// inserted. A value-shaped op (ReshapeTo, BroadcastTo, TakePrefix) reads its output shape from
// one input's value: a host value gives a static shape, no host value a dynamic one, which the
// executable infers at run time from the value computed then.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "neomeg/core/comp_node.h"
#include "neomeg/dnn/layout.h"
#include "neomeg/op/op_def.h"

namespace neomeg::graph {

// Larger values are not kept: host values are shapes and the like, not data.
inline constexpr size_t kMaxHostValueElems = 64;

// The input of a value-shaped op whose int32 value gives the output shapes; nullopt for others.
std::optional<size_t> shape_value_input(const OpDef& op);

// A value-shaped op's output shapes for inputs of these layouts and the int32 elements of its
// shape input (a -1 of ReshapeTo resolved). ShapeError for a value no shape can have.
std::vector<dnn::TensorShape> shapes_from_value(const OpDef& op,
                                                std::span<const dnn::TensorLayout> inputs,
                                                std::span<const int32_t> value);

// A shape input's value as computed in a run, on the host: `value` lives on `cn`, and its few
// bytes are copied back after the work queued there (a GPU node's stream is waited for, so a
// count a kernel wrote on the device, as CondTake's, is read once it is there). ShapeError for a
// value that is not an int32 vector (any stride) or scalar. shape_value.cpp.
std::vector<int32_t> read_shape_value(CompNode cn, const dnn::TensorND& value);

// Stand-in output shapes of a value-shaped op whose value is not known when the graph is built:
// of the right rank, so that the ops reading them infer dtypes and ranks; the real shapes come
// at run time.
std::vector<dnn::TensorShape> sample_shapes(const OpDef& op,
                                            std::span<const dnn::TensorLayout> inputs);

// Whether the graph computes an op's output values at insert when its inputs' values are known:
// pure, cheap, deterministic ops (no RNG, no generator).
bool computes_host_value(const OpDef& op);

}  // namespace neomeg::graph
