// Reading MegEngine's own model files: what MegEngine 1.13's trace.dump writes (the FBS_V2
// format by default, identifier "mgv2"), into a NeoMeg graph built from NeoMeg's operators.
// load() (load.cpp) tells the formats apart by their first bytes and comes here for MegEngine's.
// The file is verified like ours (flatbuffers verifier, then every index, shape and byte count
// before use); an operator type with no conversion is a ModelError naming it. The conversions
// (mge_oprs*.cpp) and what they cover: docs/cpp-inference.md ("MegEngine models").
#pragma once

#include <cstdint>
#include <span>

#include "neomeg/serialization/model_file.h"

namespace neomeg::serialization::mge {

enum class FileKind {
    NotMegEngine,
    FbsV2,   // trace.dump's default (dump_format="FBS_V2"): read
    FbsV1,   // dump_format="FBS": recognised, refused with a message
    Legacy,  // MegEngine's older binary formats: recognised, refused
};

FileKind detect(std::span<const uint8_t> bytes);

// `bytes` must be 8-byte aligned (load() sees to it) and detect() FbsV2.
LoadedGraph load(std::span<const uint8_t> bytes, const LoadOptions& options);
Metadata read_metadata(std::span<const uint8_t> bytes);

}  // namespace neomeg::serialization::mge
