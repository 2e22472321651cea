// The dtype contract of Elemwise, written out here mode by mode (independently of the "dtypes"
// attribute in the definition): which dtypes each mode takes and what dst's dtype is. The eager
// runtime's type promotion relies on exactly this table.
#include <map>
#include <set>

#include "common/host_tensor.h"
#include "neomeg/dnn/operators/elemwise.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Elemwise::Mode;

enum class Accepts { Float, Numeric, Any, BoolOrInt, Bool, Int };
enum class Gives { Same, Bool, Float32ForInt };

struct Contract {
    Accepts accepts;
    Gives gives;
};

const std::map<std::string, Contract>& contracts() {
    static const auto table = [] {
        std::map<std::string, Contract> t;
        auto put = [&](std::initializer_list<const char*> names, Contract c) {
            for (auto n : names)
                t[n] = c;
        };
        put({"EXP",           "EXPM1",          "LOG",           "LOG1P",
             "SQRT",          "RSQRT",          "SIN",           "COS",
             "TAN",           "ASIN",           "ACOS",          "ATAN",
             "SINH",          "COSH",           "TANH",          "ASINH",
             "ACOSH",         "ATANH",          "SIGMOID",       "ERF",
             "ERFINV",        "ERFC",           "ERFCINV",       "GELU",
             "SILU",          "H_SWISH",        "HSIGMOID",      "RELU6",
             "SOFTPLUS",      "LOGSIGMOID",     "POW",           "ATAN2",
             "LOG_SUM_EXP",   "SIGMOID_GRAD",   "TANH_GRAD",     "GELU_GRAD",
             "SILU_GRAD",     "H_SWISH_GRAD",   "HSIGMOID_GRAD", "RELU6_GRAD",
             "SOFTPLUS_GRAD", "LOGSIGMOID_GRAD"},
            {Accepts::Float, Gives::Same});
        put({"RELU", "ABS",        "NEGATE",   "SQUARE", "ROUND",         "FLOOR",        "CEIL",
             "SIGN", "ADD",        "SUB",      "MUL",    "FLOOR_DIV",     "MOD",          "MAX",
             "MIN",  "SWITCH_GT0", "ABS_GRAD", "CLIP",   "FUSE_MUL_ADD3", "FUSE_MUL_ADD4"},
            {Accepts::Numeric, Gives::Same});
        put({"PRELU"}, {Accepts::Float, Gives::Same});
        put({"TRUE_DIV"}, {Accepts::Numeric, Gives::Float32ForInt});
        put({"ISNAN", "ISINF"}, {Accepts::Any, Gives::Bool});
        put({"EQ", "NE", "LT", "LEQ"}, {Accepts::Any, Gives::Bool});
        put({"AND", "OR", "XOR"}, {Accepts::BoolOrInt, Gives::Same});
        put({"NOT"}, {Accepts::Bool, Gives::Bool});
        put({"SHL", "SHR"}, {Accepts::Int, Gives::Same});
        put({"COND"}, {Accepts::Any, Gives::Same});
        return t;
    }();
    return table;
}

bool accepts(Accepts a, DType dt) {
    switch (a) {
        case Accepts::Float:
            return dt.is_float();
        case Accepts::Numeric:
            return !dt.is_bool();
        case Accepts::Any:
            return true;
        case Accepts::BoolOrInt:
            return !dt.is_float();
        case Accepts::Bool:
            return dt.is_bool();
        case Accepts::Int:
            return dt.is_int();
    }
    return false;
}

DType gives(Gives g, DType dt) {
    switch (g) {
        case Gives::Same:
            return dt;
        case Gives::Bool:
            return dtype::Bool;
        case Gives::Float32ForInt:
            return dt.is_float() ? dt : dtype::Float32;
    }
    return dt;
}

const std::vector<DType> kAll = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                                 dtype::Uint8,   dtype::Int16,   dtype::Int32,    dtype::Bool};

}  // namespace

TEST(ElemwiseDType, ContractCoversEveryMode) {
    EXPECT_EQ(contracts().size(), param::Elemwise::kModeCount);
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i)
        EXPECT_TRUE(contracts().count(param::Elemwise::kModeNames[i]))
                << param::Elemwise::kModeNames[i];
}

TEST(ElemwiseDType, EveryModeOnEveryDtypeRunsOrRaisesDTypeError) {
    auto handle = Handle::make_naive();
    std::mt19937 rng(3);
    for (size_t m = 0; m < param::Elemwise::kModeCount; ++m) {
        Mode mode = static_cast<Mode>(m);
        std::string name = param::Elemwise::kModeNames[m];
        const Contract& c = contracts().at(name);
        auto op = handle->create_operator<Elemwise>();
        op->param().mode = mode;
        for (DType dt : kAll) {
            std::vector<HostTensor> in;
            for (int i = 0; i < param::Elemwise::arity(mode); ++i) {
                in.emplace_back(TensorShape{2, 3}, mode == Mode::COND && i == 0 ? dtype::Bool : dt);
                fill_uniform(in.back(), dt.is_bool() ? 0 : 1, dt.is_bool() ? 1 : 4, rng);
            }
            if (accepts(c.accepts, dt)) {
                auto out = run_op(*op, in);
                EXPECT_EQ(out[0].dtype(), gives(c.gives, dt)) << name << " on " << dt.name();
                EXPECT_EQ(out[0].shape().to_string(), "{2,3}");
            } else {
                try {
                    run_op(*op, in);
                    ADD_FAILURE() << name << " accepted " << dt.name();
                } catch (const DTypeError& e) {
                    std::string msg = e.what();
                    EXPECT_NE(msg.find("Elemwise(mode=" + name + ")"), std::string::npos) << msg;
                    EXPECT_NE(msg.find(dt.name()), std::string::npos) << msg;
                }
            }
        }
    }
}

TEST(ElemwiseDType, LowPrecisionFloatsMatchFloat32WithinTheirTolerance) {
    // float16/bfloat16 compute in (at least) float: the result is float32's, rounded once.
    auto handle = Handle::make_naive();
    std::mt19937 rng(4);
    for (auto mode : {Mode::ADD, Mode::MUL, Mode::TRUE_DIV, Mode::POW, Mode::LOG_SUM_EXP,
                      Mode::FUSE_MUL_ADD4, Mode::EXP, Mode::GELU, Mode::ERFINV}) {
        auto op = handle->create_operator<Elemwise>();
        op->param().mode = mode;
        for (DType dt : {dtype::Float16, dtype::BFloat16}) {
            std::vector<HostTensor> in, in32;
            for (int i = 0; i < param::Elemwise::arity(mode); ++i) {
                in.emplace_back(TensorShape{31}, dt);
                fill_uniform(in.back(), 0.05, 0.95, rng);
                in32.push_back(HostTensor::from({31}, in.back().values()));
            }
            auto got = run_op(*op, in)[0];
            auto want = run_op(*op, in32)[0];
            EXPECT_TRUE(
                    tensors_near(HostTensor::from({31}, got.values()), want, default_epsilon(dt)))
                    << to_string(mode) << " on " << dt.name();
        }
    }
}
