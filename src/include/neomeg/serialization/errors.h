// The errors of reading and writing model files.
#pragma once

#include <stdexcept>

#include "neomeg/dnn/errors.h"

namespace neomeg::serialization {

// A file that is not a valid model: not a model at all, truncated, corrupted, inconsistent (an
// index, shape or byte count that does not fit), or naming an operator or param set this build
// does not have. Also dump()'s error for a graph it cannot write.
class ModelError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A model written in a format version this build does not read (newer, or unknown).
class ModelVersionError : public ModelError {
public:
    using ModelError::ModelError;
};

}  // namespace neomeg::serialization
