// Host builds of the indexing walk (kernels/indexed_walk.h) from NeoMeg tensors: the stride
// arithmetic of advanced indexing and torch.scatter lives here, apart from the operator classes,
// so that dnn/test/cuda/indexed_walk.cpp checks it on the CPU against naive.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "neomeg/dnn/tensor.h"
#include "src/cuda/kernels/indexed_walk.h"

namespace neomeg::dnn::cuda {

// IndexingMultiAxisVec (Gather: indexed = src, plain = dst) and its Set/Add forms (indexed = dst,
// plain = value, broadcast here to the indexed shape). `who` names the operator in layout errors.
kern::IndexedArgs multi_axis_args(kern::IndexedMode mode, const TensorND& indexed,
                                  std::span<const TensorND> indices, const TensorND& plain,
                                  const std::vector<int32_t>& axes, const std::string& who);

// Scatter along `axis` (already normalised): indexed = dst, plain = src (index's shape).
kern::IndexedArgs scatter_args(kern::IndexedMode mode, const TensorND& dst, const TensorND& index,
                               const TensorND& src, size_t axis);

// Entries of the Set election's winner table: the product of the indexed axes' sizes, and for
// Scatter index's shape with `axis` of data's size.
size_t multi_axis_keys(const TensorLayout& data, const std::vector<int32_t>& axes,
                       const std::string& who);
size_t scatter_keys(const TensorLayout& data, const TensorLayout& index, size_t axis);

// Whether the walk's positions fit the kernels' 32-bit ranks and packed bad-index positions.
bool walk_fits(size_t n);

}  // namespace neomeg::dnn::cuda
