// From NeoMeg layouts to the launchers' plain Strided descriptions (kernels/args.h).
#pragma once

#include <vector>

#include "neomeg/dnn/layout.h"
#include "src/cuda/kernels/args.h"

namespace neomeg::dnn::cuda {

kern::DT to_kern(DType dt);

// Describes layouts of one shape for one element walk: size-1 axes are dropped, and adjacent
// axes merged where every layout is contiguous across them (so dense tensors become 1-D and a
// broadcast keeps its stride-0 axis). All results share one ndim and shape.
std::vector<kern::Strided> collapse_jointly(const std::vector<TensorLayout>& layouts);

}  // namespace neomeg::dnn::cuda
