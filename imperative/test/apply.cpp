#include <gtest/gtest.h>

#include <vector>

#include "grad_check.h"
#include "neomeg/dnn/params/elemwise.h"
#include "neomeg/dnn/params/tensor_basic.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_defs.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

namespace {
using grad_check::values;
}  // namespace

TEST(Tensor, FromHostRoundTripAndViews) {
    auto cn = CompNode::load("cpu0");
    std::vector<float> data{1, 2, 3, 4, 5, 6};
    auto t = Tensor::from_host(data.data(), {2, 3}, dnn::dtype::Float32, cn);
    EXPECT_EQ(values(t), data);
    // the transpose, read back through the kernel library's Relayout
    auto tt = t.view(t.layout().dimshuffle({1, 0}));
    EXPECT_EQ(values(tt), (std::vector<float>{1, 4, 2, 5, 3, 6}));
    // a view that reaches outside the storage is refused
    EXPECT_THROW(t.view(dnn::TensorLayout({7}, dnn::dtype::Float32)), dnn::ShapeError);
    EXPECT_THROW(t.view(t.layout(), 4), dnn::ShapeError);
}

TEST(Tensor, StorageReturnsToTheCache) {
    auto cn = CompNode::load("cpu3");
    size_t before = cn.memory_stats().allocated;
    {
        auto t = Tensor::empty({1000}, dnn::dtype::Float32, cn);
        EXPECT_GE(cn.memory_stats().allocated, before + 4000);
    }
    EXPECT_EQ(cn.memory_stats().allocated, before);
}

TEST(OpDef, ParamsHashEqualityAndDnnOperatorCache) {
    ops::Fill a, b;
    EXPECT_TRUE(a.is_same(b));
    EXPECT_EQ(a.hash(), b.hash());
    auto p = a.param();
    p.value = 3;
    b.set_param(p);
    EXPECT_FALSE(a.is_same(b));
    EXPECT_EQ(b.to_string(), "Fill(value=3, dtype=float32)");
    auto* h = CompNode::load("cpu0").dnn_handle();
    auto& d1 = b.dnn_operator(h);        // NOLINT
    EXPECT_EQ(&d1, &b.dnn_operator(h));  // cached
    EXPECT_EQ(static_cast<dnn::Fill&>(d1).param().value, 3);
    auto made = make_op_def("Fill");
    ASSERT_NE(made, nullptr);
    EXPECT_TRUE(made->is_same(a));
    EXPECT_EQ(make_op_def("NoSuchOp"), nullptr);
}

TEST(Apply, GeneratorOpFillsRequestedShape) {
    auto cn = CompNode::load("cpu0");
    dnn::param::Fill p;
    p.value = 1.5f;
    ops::Fill fill(p);
    dnn::TensorShape shape{2, 2};
    auto out = run_generator(fill, {&shape, 1}, cn);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].comp_node(), cn);
    EXPECT_EQ(values(out[0]), std::vector<float>(4, 1.5f));
    EXPECT_THROW(run_generator(fill, std::span<const dnn::TensorShape>{}, cn), dnn::ParamError);
}

TEST(Apply, RejectsInputsOnDifferentCompNodes) {
    std::vector<float> v{1, 2};
    auto a = Tensor::from_host(v.data(), {2}, dnn::dtype::Float32, CompNode::load("cpu0"));
    auto b = Tensor::from_host(v.data(), {2}, dnn::dtype::Float32, CompNode::load("cpu1"));
    ops::Relayout op;
    std::vector<Tensor> inputs{a, b};
    try {
        imperative::apply(op, inputs);
        FAIL();
    } catch (const dnn::ParamError& e) {
        EXPECT_NE(std::string(e.what()).find("cpu1"), std::string::npos) << e.what();
    }
    EXPECT_THROW(imperative::apply(op, std::span<const Tensor>{}), dnn::ParamError);
}

TEST(Apply, RunsTheDnnKernelOnAStridedInput) {
    auto cn = CompNode::load("cpu0");
    std::vector<float> data{1, 2, 3, 4, 5, 6};
    auto t = Tensor::from_host(data.data(), {2, 3}, dnn::dtype::Float32, cn);
    ops::Relayout relayout;
    auto tt = t.view(t.layout().dimshuffle({1, 0}));
    auto out = imperative::apply(relayout, {&tt, 1});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].layout().is_contiguous());
    EXPECT_EQ(out[0].shape().to_string(), "{3,2}");
    EXPECT_EQ(values(out[0]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

namespace {
// Doubles its input; an eager-only op outside the registry.
class DoubleOp final : public CustomOpDef {
public:
    const char* name() const override { return "Double"; }
    size_t hash() const override { return 7; }
    bool is_same(const OpDef& rhs) const override {
        return dynamic_cast<const DoubleOp*>(&rhs) != nullptr;
    }
    std::string to_string() const override { return "Double()"; }
    std::shared_ptr<OpDef> clone() const override { return std::make_shared<DoubleOp>(); }
    std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
        dnn::param::Elemwise p;
        p.mode = dnn::param::Elemwise::Mode::ADD;
        std::vector<Tensor> in{inputs[0], inputs[0]};
        return imperative::apply(ops::Elemwise(p), in);
    }
};
}  // namespace

TEST(Apply, CustomOpRunsEagerlyOnly) {
    auto cn = CompNode::load("cpu0");
    std::vector<float> v{1, 2};
    auto x = Tensor::from_host(v.data(), {2}, dnn::dtype::Float32, cn);
    DoubleOp op;
    EXPECT_EQ(op.kind(), OpKind::Custom);
    auto out = imperative::apply(op, {&x, 1});
    EXPECT_EQ(values(out[0]), (std::vector<float>{2, 4}));
    EXPECT_EQ(grad_rule_of(op), nullptr);  // no rule: not differentiable
    // a graph cannot hold it
    EXPECT_THROW(op.infer_layouts(cn, {&x.layout(), 1}, {}), dnn::NotSupportedError);
    EXPECT_THROW(op.set_param_field("x", true), dnn::ParamError);
    EXPECT_TRUE(op.param_fields().empty());
    // preset shapes are for dnn ops only
    dnn::TensorShape s{2};
    EXPECT_THROW(imperative::apply(op, {&x, 1}, {&s, 1}), dnn::ParamError);
    EXPECT_THROW(imperative::apply(ops::Reshape(), {&x, 1}, {&s, 1}), dnn::ParamError);
}

namespace {

Tensor int32s(std::vector<int32_t> v) {
    return Tensor::from_host(v.data(), {v.size()}, dnn::dtype::Int32, CompNode::load("cpu0"));
}

}  // namespace

// An op whose definition forwards an input (ReshapeTo: forwards="src") runs eagerly as a view of
// a contiguous input, and through its kernel otherwise; either way the shape value is checked.
TEST(Apply, ForwardingOpViewsAContiguousInputAndChecksItsShapeValue) {
    auto cn = CompNode::load("cpu0");
    std::vector<float> data(24);
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = float(i);
    auto x = Tensor::from_host(data.data(), {2, 3, 4}, dnn::dtype::Float32, cn);
    ops::ReshapeTo op;
    const dnn::TensorShape six_by_four[] = {dnn::TensorShape({6, 4})};

    const Tensor in[] = {x, int32s({6, -1})};
    auto y = apply(op, in, six_by_four).at(0);
    EXPECT_EQ(y.dnn_tensor().raw_ptr(), x.dnn_tensor().raw_ptr());
    EXPECT_EQ(values(y), data);

    // a transposed input is not row-major memory: the kernel copies it
    auto xt = x.view(x.layout().dimshuffle({0, 2, 1}));
    const Tensor strided[] = {xt, int32s({6, 4})};
    const dnn::TensorShape eight_by_three[] = {dnn::TensorShape({8, 3})};
    const Tensor strided83[] = {xt, int32s({8, 3})};
    auto z = apply(op, strided83, eight_by_three).at(0);
    EXPECT_NE(z.dnn_tensor().raw_ptr(), x.dnn_tensor().raw_ptr());
    EXPECT_EQ(values(z), values(xt.contiguous()));

    // a preset shape the value does not hold fails on both paths
    const Tensor wrong[] = {x, int32s({4, 6})};
    EXPECT_THROW(apply(op, wrong, six_by_four), dnn::ShapeError);
    EXPECT_THROW(apply(op, strided, eight_by_three), dnn::ShapeError);
}
