// The generated param codec (params.fbs and param_codec.cpp, from the operator definitions):
// every field of every operator survives encoding and decoding with a non-default value.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include "neomeg/op/op_defs.h"
#include "neomeg/op/op_ids.h"
#include "param_codec.h"

namespace neomeg::serialization::test {
namespace {

// A value of the same type as `v` that differs from it (for an enum: another valid member when
// the enum has one; the caller's set_param_field decides).
ParamValue changed(const ParamValue& v, bool enum_down) {
    return std::visit(
            [&](const auto& x) -> ParamValue {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, bool>)
                    return !x;
                else if constexpr (std::is_same_v<T, float>)
                    return x + 0.25f;
                else if constexpr (std::is_same_v<T, dnn::DTypeEnum>)
                    return x == dnn::DTypeEnum::Int32 ? dnn::DTypeEnum::Float32
                                                      : dnn::DTypeEnum::Int32;
                else if constexpr (std::is_same_v<T, EnumValue>)
                    return EnumValue{enum_down ? 0u : x.value + 1, {}};
                else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
                    auto y = x;
                    y.push_back(-7);
                    return y;
                } else
                    return static_cast<T>(x + 3);
            },
            v);
}

TEST(ModelParamCodec, EveryFieldOfEveryOpRoundTrips) {
    size_t fields_checked = 0;
    for (OpId id : kAllOpIds) {
        std::string name = op_id_name(id);
        SCOPED_TRACE(name);
        const auto* sig = detail::find_op_signature(name);
        ASSERT_TRUE(sig);
        auto op = make_op_def(name);
        for (const auto& f : op->param_fields()) {
            try {
                op->set_param_field(f.name, changed(f.value, false));
            } catch (const dnn::ParamError&) {  // the enum's last member: go to the first
                op->set_param_field(f.name, changed(f.value, true));
            }
            EXPECT_FALSE(op->is_same(*make_op_def(name))) << f.name;
            ++fields_checked;
        }
        auto bytes = detail::encode_params(sig->param_set, op->param_fields());
        auto back = make_op_def(name);
        for (const auto& f : detail::decode_params(sig->param_set, bytes.data(), bytes.size()))
            back->set_param_field(f.name, f.value);
        EXPECT_TRUE(back->is_same(*op)) << back->to_string() << " vs " << op->to_string();
    }
    EXPECT_GT(fields_checked, 60u);
}

TEST(ModelParamCodec, FieldsMissingFromAnOlderFileReadTheirDefaults) {
    // An empty Convolution table: what a file written before every field existed would hold.
    flatbuffers::FlatBufferBuilder b;
    b.Finish(flatbuffers::Offset<flatbuffers::Table>(b.EndTable(b.StartTable())));
    auto fields = detail::decode_params("Convolution", b.GetBufferPointer(), b.GetSize());
    auto op = make_op_def("ConvolutionForward");
    for (const auto& f : fields)
        op->set_param_field(f.name, f.value);
    EXPECT_TRUE(op->is_same(*make_op_def("ConvolutionForward"))) << op->to_string();
}

TEST(ModelParamCodec, BadInputIsAModelError) {
    EXPECT_THROW(detail::decode_params("NoSuchSet", nullptr, 0), ModelError);
    EXPECT_THROW(detail::decode_params("Convolution", nullptr, 0), ModelError);
    std::vector<uint8_t> junk(3, 0xFF);
    EXPECT_THROW(detail::decode_params("Convolution", junk.data(), junk.size()), ModelError);
    EXPECT_THROW(detail::encode_params("Convolution", {}), ModelError);  // field count
    auto fields = make_op_def("Fill")->param_fields();
    std::swap(fields[0], fields[1]);  // right count, wrong names/types
    EXPECT_THROW(detail::encode_params("Fill", fields), ModelError);
    EXPECT_EQ(detail::find_op_signature("NoSuchOp"), nullptr);
}

}  // namespace
}  // namespace neomeg::serialization::test
