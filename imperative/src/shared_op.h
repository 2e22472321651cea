// Ops that backward rules and the tape build for one call. An OpDef caches its kernel-library
// operator and that operator its per-shape plans (x86's oneDNN primitives), so a fresh OpDef per
// call made the primitives again on every backward pass: ~70 us for a small MatrixMul, the bulk
// of a small MLP's backward. One op per (type, params) per thread keeps them; per thread because
// an op object must not run on two threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <unordered_map>

#include "neomeg/dnn/param_base.h"

namespace neomeg::imperative {

// Ops of one type kept per thread before they are dropped, which bounds params that vary from
// call to call (a Fill's value); a model's layers have far fewer distinct params than this.
inline constexpr size_t kSharedOpsPerType = 256;

// The calling thread's op of type Op with `param`. Hold the pointer while the op runs: a later
// call may drop the cache.
template <class Op>
std::shared_ptr<const Op> shared_op(const typename Op::Param& param) {
    using Param = typename Op::Param;
    struct Hash {
        size_t operator()(const Param& p) const { return dnn::param::hash_param(p); }
    };
    thread_local std::unordered_map<Param, std::shared_ptr<const Op>, Hash> ops;
    auto it = ops.find(param);
    if (it != ops.end())
        return it->second;
    if (ops.size() >= kSharedOpsPerType)
        ops.clear();
    return ops.emplace(param, std::make_shared<const Op>(param)).first->second;
}

}  // namespace neomeg::imperative
