#include "neomeg/dnn/dtype.h"

#include "neomeg/dnn/errors.h"

namespace neomeg::dnn {

size_t DType::size() const {
    switch (m_enum) {
#define NM_CB(e, t, n) \
    case DTypeEnum::e: \
        return sizeof(t);
        NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
    }
    return 0;
}

const char* DType::name() const {
    switch (m_enum) {
#define NM_CB(e, t, n) \
    case DTypeEnum::e: \
        return n;
        NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
    }
    return "invalid";
}

DTypeCategory DType::category() const {
    switch (m_enum) {
        case DTypeEnum::Float32:
        case DTypeEnum::Float16:
        case DTypeEnum::BFloat16:
            return DTypeCategory::Float;
        case DTypeEnum::Bool:
            return DTypeCategory::Bool;
        default:
            return DTypeCategory::Int;
    }
}

bool DType::is_signed() const {
    return m_enum != DTypeEnum::Uint8 && m_enum != DTypeEnum::Bool;
}

DType DType::from_name(std::string_view name) {
#define NM_CB(e, t, n) \
    if (name == n)     \
        return dtype::e;
    NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
    throw DTypeError(str_cat("unknown dtype name '", name, "'"));
}

}  // namespace neomeg::dnn
