// What an operator's definition declares of its gradient (op(..., grad=Grad(...)) in dnn/ops/defs
// and src/ops/defs): whether it has a backward rule, and what that rule keeps of the forward
// pass. Generated for every registry op class (kGradDecl<ops::Name>, <neomeg/op/defs/<group>.h>)
// and by id (grad_decl, op_defs.cpp), so that imperative's rule registration (NM_REGISTER_GRAD)
// reads these facts instead of restating them.
#pragma once

#include "neomeg/op/op_id.h"

namespace neomeg {

struct GradDecl {
    bool differentiable = false;  // a backward rule exists (imperative/src/grad_rules)
    bool save_inputs = false;     // the rule reads the forward inputs
    bool save_outputs = false;    // ... and the forward outputs
    // The rule takes an invalid tensor for an output no gradient reached
    // (imperative::GradRule::takes_absent_grads).
    bool takes_absent_grads = false;

    bool operator==(const GradDecl&) const = default;
};

// Specialised for each registry op class by its group header; no other type has one, so reading
// kGradDecl of anything else does not compile.
template <class Op>
struct GradDeclOf;

template <class Op>
inline constexpr GradDecl kGradDecl = GradDeclOf<Op>::value;

// The declaration of the registry op `id`; not differentiable for an id outside the registry
// (kCustomOpId: a custom op carries its own rule).
GradDecl grad_decl(OpId id);

}  // namespace neomeg
