// The operator registry: every op by name, params as fields (the serialization hook), layout
// inference without running anything, and exec into memory the caller allocated.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "neomeg/core/device_tensor.h"
#include "neomeg/dnn/op_types.h"
#include "neomeg/dnn/params/elemwise.h"
#include "neomeg/op/op_defs.h"
#include "neomeg/op/op_ids.h"
#include "neomeg/op/view_params.h"

using namespace neomeg;

namespace {

DeviceTensor from_floats(const std::vector<float>& v, const dnn::TensorShape& shape,
                         CompNode cn = CompNode::load("cpu0")) {
    return DeviceTensor::from_host(v.data(), shape, dnn::dtype::Float32, cn);
}

std::vector<float> floats(const DeviceTensor& t) {
    std::vector<float> v(t.shape().total_nr_elems());
    t.to_host(v.data());
    return v;
}

// A value of the same field type that differs from `v` (nullopt: no other value exists).
std::optional<ParamValue> other_value(const ParamValue& v) {
    struct Visitor {
        std::optional<ParamValue> operator()(bool b) { return ParamValue(!b); }
        std::optional<ParamValue> operator()(int32_t i) { return ParamValue(int32_t(i + 1)); }
        std::optional<ParamValue> operator()(uint32_t i) { return ParamValue(uint32_t(i + 1)); }
        std::optional<ParamValue> operator()(uint64_t i) { return ParamValue(uint64_t(i + 7)); }
        std::optional<ParamValue> operator()(float f) { return ParamValue(f + 0.5f); }
        std::optional<ParamValue> operator()(dnn::DTypeEnum d) {
            return ParamValue(d == dnn::DTypeEnum::Int32 ? dnn::DTypeEnum::Float32
                                                         : dnn::DTypeEnum::Int32);
        }
        std::optional<ParamValue> operator()(const EnumValue& e) {
            return ParamValue(EnumValue{e.value == 0 ? 1u : 0u, ""});
        }
        std::optional<ParamValue> operator()(std::vector<int32_t> xs) {
            xs.push_back(3);
            return ParamValue(std::move(xs));
        }
    };
    return std::visit(Visitor{}, v);
}

}  // namespace

TEST(OpRegistry, EveryOpIsMadeByNameWithItsKind) {
    // A dnn operator's id is its dnn::OpType value.
    std::set<std::string> dnn_names;
    for (dnn::OpType t : dnn::kAllOpTypes) {
        dnn_names.insert(dnn::op_type_name(t));
        EXPECT_STREQ(op_id_name(static_cast<OpId>(t)), dnn::op_type_name(t));
    }
    EXPECT_EQ(dnn_names.size(), dnn::kNumOpTypes);
    for (OpId id : kAllOpIds) {
        auto op = make_op_def(op_id_name(id));
        ASSERT_NE(op, nullptr) << op_id_name(id);
        EXPECT_EQ(op->id(), id);
        EXPECT_STREQ(op->name(), op_id_name(id));
        EXPECT_EQ(op->kind(), dnn_names.count(op->name()) ? OpKind::Dnn : OpKind::View);
        EXPECT_EQ(op->to_string().rfind(op->name(), 0), 0u) << op->to_string();
        auto copy = op->clone();
        EXPECT_TRUE(copy->is_same(*op));
        EXPECT_EQ(copy->hash(), op->hash());
    }
    EXPECT_EQ(make_op_def("NoSuchOp"), nullptr);
    EXPECT_EQ(make_op_def("Reshape")->kind(), OpKind::View);
    EXPECT_EQ(make_op_def("Elemwise")->kind(), OpKind::Dnn);
}

// Every field of every op: change it, carry all fields into a fresh op by name, and get an equal
// op back. This is the path a model file takes.
TEST(OpRegistry, ParamFieldsRoundTripForEveryOp) {
    size_t changed = 0;
    for (OpId id : kAllOpIds) {
        const char* name = op_id_name(id);
        auto a = make_op_def(name);
        for (const ParamField& f : a->param_fields()) {
            auto v = other_value(f.value);
            ASSERT_TRUE(v) << name << "." << f.name;
            a->set_param_field(f.name, *v);
            ++changed;
        }
        auto defaults = make_op_def(name);
        if (!a->param_fields().empty()) {
            EXPECT_FALSE(a->is_same(*defaults)) << a->to_string();
        }
        auto b = make_op_def(name);
        for (const ParamField& f : a->param_fields())
            b->set_param_field(f.name, f.value);
        EXPECT_TRUE(b->is_same(*a)) << a->to_string() << " vs " << b->to_string();
        EXPECT_EQ(b->hash(), a->hash());
        EXPECT_EQ(b->to_string(), a->to_string());
    }
    EXPECT_GT(changed, 50u);  // the registry has params worth the name
}

TEST(OpRegistry, ParamFieldsNameTypesAndEnumMembers) {
    dnn::param::Elemwise p;
    p.mode = dnn::param::Elemwise::Mode::MUL;
    ops::Elemwise e(p);
    auto fields = e.param_fields();
    ASSERT_EQ(fields.size(), 1u);
    EXPECT_EQ(fields[0].name, "mode");
    const auto& mode = std::get<EnumValue>(fields[0].value);
    EXPECT_EQ(mode.name, "MUL");
    EXPECT_EQ(mode.value, static_cast<uint32_t>(dnn::param::Elemwise::Mode::MUL));

    ops::Reshape r;
    r.set_param_field("shape", std::vector<int32_t>{3, -1});
    EXPECT_EQ(r.to_string(), "Reshape(shape=[3,-1])");
    EXPECT_EQ(std::get<std::vector<int32_t>>(r.param_fields()[0].value),
              (std::vector<int32_t>{3, -1}));
}

TEST(OpRegistry, SetParamFieldRejectsBadInput) {
    ops::Elemwise e;
    EXPECT_THROW(e.set_param_field("nope", int32_t(1)), dnn::ParamError);
    EXPECT_THROW(e.set_param_field("mode", int32_t(1)), dnn::ParamError);  // an enum, not an int
    try {
        e.set_param_field("mode", EnumValue{100000, ""});
        FAIL();
    } catch (const dnn::ParamError& err) {
        EXPECT_NE(std::string(err.what()).find("out of range"), std::string::npos) << err.what();
        EXPECT_NE(std::string(err.what()).find("Elemwise"), std::string::npos) << err.what();
    }
    ops::Fill f;
    EXPECT_THROW(f.set_param_field("dtype", static_cast<dnn::DTypeEnum>(200)), dnn::ParamError);
    EXPECT_THROW(f.set_param_field("value", int32_t(1)), dnn::ParamError);  // value is a float32
    EXPECT_TRUE(f.is_same(ops::Fill()));  // nothing changed by the failures
}

TEST(OpRegistry, InfersLayoutsWithoutRunning) {
    auto cn = CompNode::load("cpu0");
    dnn::TensorLayout a({2, 3}, dnn::dtype::Float32), b({3}, dnn::dtype::Float32);
    dnn::param::Elemwise ep;
    ep.mode = dnn::param::Elemwise::Mode::ADD;
    std::vector<dnn::TensorLayout> in{a, b};
    auto out = ops::Elemwise(ep).infer_layouts(cn, in, {});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].to_string(), "{2(3),3(1)} float32");

    param::Dimshuffle dp;
    dp.pattern = {1, 0};
    auto t = ops::Dimshuffle(dp).infer_layouts(cn, {&a, 1}, {});
    EXPECT_EQ(t[0].to_string(), "{3(2),2(1)} float32");  // contiguous: a graph copies views

    dnn::TensorShape fill_shape{4};
    auto f = ops::Fill().infer_layouts(cn, {}, {&fill_shape, 1});
    EXPECT_EQ(f[0].to_string(), "{4(1)} float32");

    // errors name the op and its params
    dnn::TensorLayout c({4}, dnn::dtype::Float32);
    std::vector<dnn::TensorLayout> bad{a, c};
    try {
        ops::Elemwise(ep).infer_layouts(cn, bad, {});
        FAIL();
    } catch (const dnn::ShapeError& err) {
        EXPECT_NE(std::string(err.what()).find("Elemwise(mode=ADD)"), std::string::npos)
                << err.what();
    }
    param::Reshape rp;
    rp.shape = {5, -1};
    EXPECT_THROW(ops::Reshape(rp).infer_layouts(cn, {&a, 1}, {}), dnn::ShapeError);
    EXPECT_THROW(ops::Fill().infer_layouts(cn, {}, std::vector<dnn::TensorShape>(2)),
                 dnn::ParamError);
}

TEST(OpRegistry, ExecRunsIntoCallerMemory) {
    auto cn = CompNode::load("cpu0");
    auto a = from_floats({1, 2, 3, 4, 5, 6}, {2, 3});
    auto b = from_floats({10, 20, 30}, {3});
    dnn::param::Elemwise ep;
    ep.mode = dnn::param::Elemwise::Mode::ADD;
    ops::Elemwise add(ep);
    std::vector<dnn::TensorLayout> in_layouts{a.layout(), b.layout()};
    auto out_layouts = add.infer_layouts(cn, in_layouts, {});
    auto out = DeviceTensor::empty(out_layouts[0], out_layouts[0].dtype, cn);
    std::vector<dnn::TensorND> in{a.as_nd(), b.as_nd()};
    auto out_nd = out.as_nd();
    EXPECT_EQ(add.workspace_in_bytes(cn, in_layouts, out_layouts), 0u);
    add.exec(cn, in, {&out_nd, 1}, {});
    EXPECT_EQ(floats(out), (std::vector<float>{11, 22, 33, 14, 25, 36}));

    // a view op copies its view into the output
    param::Dimshuffle dp;
    dp.pattern = {1, 0};
    ops::Dimshuffle tr(dp);
    auto tl = tr.infer_layouts(cn, {&a.layout(), 1}, {});
    auto t = DeviceTensor::empty(tl[0], tl[0].dtype, cn);
    auto a_nd = a.as_nd();
    auto t_nd = t.as_nd();
    tr.exec(cn, {&a_nd, 1}, {&t_nd, 1}, {});
    EXPECT_EQ(floats(t), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(OpRegistry, CloneHasItsOwnKernelState) {
    ops::Fill a;
    auto* h = CompNode::load("cpu0").dnn_handle();
    auto b = std::static_pointer_cast<ops::Fill>(a.clone());
    EXPECT_NE(&a.dnn_operator(h), &b->dnn_operator(h));
    EXPECT_EQ(&a.dnn_operator(h), &a.dnn_operator(h));  // cached
}
