// The backward rules against the operator definitions: an op is differentiable exactly when its
// definition declares a gradient (op(..., grad=Grad(...))), and its rule runs with what the
// definition says it saves. A definition that gains grad= without a rule, or a rule whose op's
// definition lost it, fails here, as NaiveHandle.EveryDefinedOperatorIsImplemented fails for a
// missing kernel.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "neomeg/imperative/grad.h"
#include "neomeg/op/defs/norm.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/grad_decl.h"
#include "neomeg/op/op_ids.h"

using namespace neomeg;
using namespace neomeg::imperative;

namespace {

std::string describe(const GradDecl& d) {
    if (!d.differentiable)
        return "not differentiable";
    return std::string("save_inputs=") + (d.save_inputs ? "1" : "0") +
           " save_outputs=" + (d.save_outputs ? "1" : "0") +
           " takes_absent_grads=" + (d.takes_absent_grads ? "1" : "0");
}

std::vector<Tensor> no_grads(const OpDef&, std::span<const Tensor> inputs, std::span<const Tensor>,
                             std::span<const Tensor>, std::span<const bool>) {
    return std::vector<Tensor>(inputs.size());
}

}  // namespace

TEST(GradRules, EveryDefinitionMatchesItsRule) {
    std::vector<std::string> mismatches;
    size_t differentiable = 0;
    for (OpId id : kAllOpIds) {
        GradDecl decl = grad_decl(id);
        const GradRule* rule = find_grad_rule(id);
        differentiable += decl.differentiable;
        GradDecl ran;  // what the tape runs the rule with
        if (rule)
            ran = GradDecl{true, rule->save_inputs, rule->save_outputs, rule->takes_absent_grads};
        if (!rule && decl.differentiable)
            mismatches.push_back(std::string(op_id_name(id)) +
                                 ": the definition declares a gradient, no rule is registered");
        else if (rule && !decl.differentiable)
            mismatches.push_back(std::string(op_id_name(id)) +
                                 ": a rule is registered, the definition declares no gradient");
        else if (ran != decl)
            mismatches.push_back(std::string(op_id_name(id)) + ": the rule runs with " +
                                 describe(ran) + ", the definition declares " + describe(decl));
    }
    std::string all;
    for (const auto& m : mismatches)
        all += "\n  " + m;
    EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " ops:" << all;
    // The registry is not vacuous: most forward ops have rules, the kernels' backward ops not.
    EXPECT_GT(differentiable, 0u);
    EXPECT_LT(differentiable, kNumOpIds);
}

// The generated class facts, which NM_REGISTER_GRAD reads, and the generated table by id, which
// the test above reads, are the same declaration.
TEST(GradRules, ClassAndIdGiveTheSameDeclaration) {
    EXPECT_EQ(kGradDecl<ops::BatchNormForward>, grad_decl(ops::BatchNormForward::kId));
    EXPECT_EQ(kGradDecl<ops::BatchNormBackward>, grad_decl(ops::BatchNormBackward::kId));
    EXPECT_EQ(kGradDecl<ops::SoftmaxForward>, grad_decl(ops::SoftmaxForward::kId));
    EXPECT_EQ(kGradDecl<ops::Reduce>, grad_decl(ops::Reduce::kId));
    EXPECT_EQ(kGradDecl<ops::Argmax>, grad_decl(ops::Argmax::kId));
    EXPECT_EQ(kGradDecl<ops::Dimshuffle>, grad_decl(ops::Dimshuffle::kId));
    // Each kind of declaration occurs among them, so the comparisons above compare something.
    EXPECT_TRUE(kGradDecl<ops::BatchNormForward>.takes_absent_grads);
    EXPECT_FALSE(kGradDecl<ops::BatchNormBackward>.differentiable);
    EXPECT_FALSE(kGradDecl<ops::SoftmaxForward>.save_inputs);
    EXPECT_TRUE(kGradDecl<ops::SoftmaxForward>.save_outputs);
    EXPECT_FALSE(kGradDecl<ops::Dimshuffle>.save_inputs);
    EXPECT_TRUE(kGradDecl<ops::Dimshuffle>.differentiable);
    // An op outside the registry declares nothing: a custom op carries its own rule.
    EXPECT_FALSE(grad_decl(kCustomOpId).differentiable);
}

TEST(GradRules, AnOpDeclaringNoGradientTakesNoRule) {
    ASSERT_FALSE(grad_decl(ops::Argmax::kId).differentiable);
    try {
        register_grad_rule(ops::Argmax::kId, no_grads);
        FAIL() << "registered a rule for Argmax, whose definition declares no gradient";
    } catch (const dnn::Error& e) {
        EXPECT_NE(std::string(e.what()).find("Argmax"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("grad=Grad"), std::string::npos) << e.what();
    }
    EXPECT_EQ(find_grad_rule(ops::Argmax::kId), nullptr);
}
