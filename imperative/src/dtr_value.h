// DTR's shared state (dtr.h has the policy): what a recomputable value is made of. Internal to
// imperative/src: the Tensor accessors and dtr.cpp use it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "neomeg/imperative/dtr.h"

namespace neomeg::imperative {

struct DtrValue {
    // An input as the op saw it: another DTR value (held without counting as a user, so that
    // it can be released when its users are gone) or an ordinary tensor.
    struct Input {
        Tensor plain;
        std::shared_ptr<DtrValue> dtr;
    };

    Tensor value;  // the ordinary tensor holding the value; invalid while evicted
    std::shared_ptr<OpDef> op;
    std::vector<Input> inputs;
    std::vector<dnn::TensorShape> shapes;  // apply()'s preset output shapes, if any
    size_t output_index = 0;
    dnn::TensorLayout layout;  // what a recomputation must give back
    CompNode cn;
    size_t bytes = 0;
    double cost = 0;  // of running `op` once, in Config::cost's unit (bytes or nanoseconds)
    uint64_t last_access = 0;
    bool has_users = true;  // some DtrHandle (a tensor a user or autograd holds) still exists

    // The value in memory, recomputing it (and, first, any evicted input) if it was evicted.
    const Tensor& materialize();
    // Bytes the value would free if dropped now: 0 where its storage is shared (a view, a numpy
    // array) or it is not in memory.
    size_t evictable_bytes() const { return value.valid() ? value.owned_bytes() : 0; }

    // Tensor's private parts, for dtr.cpp.
    static DtrValue* of(const Tensor& t);
    static std::shared_ptr<DtrValue> shared_of(const Tensor& t);
    static size_t owned_bytes(const Tensor& t) { return t.owned_bytes(); }
    // A user's handle on `v`, standing for `value` (an output just made).
    static Tensor make_tensor(const Tensor& value, std::shared_ptr<DtrValue> v);
};

// Shared by the copies of one user-visible tensor; when the last copy dies, the value is released
// (its memory freed) if other values may still need it for recomputation.
struct DtrHandle {
    std::shared_ptr<DtrValue> value;
    ~DtrHandle();
};

CompNode resident_comp_node(const DtrHandle& h);

}  // namespace neomeg::imperative
