// NumPy .npy files (format 1.0-3.0, C order, little-endian) as inference::HostTensor: what
// load_and_run reads its inputs from and writes its outputs to.
#pragma once

#include <string>

#include "neomeg/inference/model.h"

namespace neomeg::tools {

// std::runtime_error naming the file for anything it cannot read: another format, Fortran
// order, a big-endian or unsupported dtype, a byte count that does not match the shape.
inference::HostTensor read_npy(const std::string& path);
void write_npy(const std::string& path, const inference::HostTensor& t);

}  // namespace neomeg::tools
