// From NeoMeg layouts to the launchers' plain Strided descriptions (kernels/args.h).
#pragma once

#include <span>
#include <vector>

#include "neomeg/dnn/layout.h"
#include "src/cuda/kernels/args.h"

namespace neomeg::dnn::cuda {

kern::DT to_kern(DType dt);
// The plain dtype whose bytes hold `dt`'s values (Int8 for QuantizedS8, ...; a plain dtype
// itself): for kernels that move values without reading them.
kern::DT storage_kern(DType dt);

// Describes layouts of one shape for one element walk: size-1 axes are dropped, and adjacent
// axes merged where every layout is contiguous across them (so dense tensors become 1-D and a
// broadcast keeps its stride-0 axis). All results share one ndim and shape.
std::vector<kern::Strided> collapse_jointly(const std::vector<TensorLayout>& layouts);

// Whether every input and output is contiguous float32: what kernels written for dense float32
// only (Correlation, DeformablePSROIPooling) take; anything else runs their naive kernel.
bool dense_float32(std::span<const TensorLayout> inputs, std::span<const TensorLayout> outputs);

}  // namespace neomeg::dnn::cuda
