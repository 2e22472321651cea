// Elemwise on broadcast, strided, transposed, negative-stride and empty layouts, strided outputs,
// and the errors for bad arity, dtypes and shapes.
#include "common/checker.h"
#include "neomeg/dnn/operators/elemwise.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Elemwise::Mode;

HostTensor elemwise(Mode mode, const std::vector<HostTensor>& in) {
    auto handle = Handle::make_naive();
    auto op = handle->create_operator<Elemwise>();
    op->param().mode = mode;
    return run_op(*op, in)[0];
}

std::vector<Mode> all_modes() {
    std::vector<Mode> r;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i)
        r.push_back(static_cast<Mode>(i));
    return r;
}

// A dtype valid for input i of `mode`, from the mode's own dtype rule.
DType input_dtype(Mode mode, int i) {
    std::string_view rule = param::Elemwise::dtypes(mode);
    if (rule == "not" || (rule == "select" && i == 0))
        return dtype::Bool;
    if (rule == "shift" || rule == "logical")
        return dtype::Int32;
    return dtype::Float32;
}

// A Checker with dtypes and ranges valid for `mode`.
Checker<Elemwise> checker_for(Handle* h, Mode mode) {
    Checker<Elemwise> c(h);
    param::Elemwise p;
    p.mode = mode;
    c.set_param(p);
    std::string_view rule = param::Elemwise::dtypes(mode);
    for (int i = 0; i < param::Elemwise::arity(mode); ++i) {
        c.set_dtype(i, input_dtype(mode, i));
        if (rule == "shift")
            c.set_range(i, i == 0 ? -100 : 0, i == 0 ? 100 : 12);
        else if (rule == "logical")
            c.set_range(i, -50, 50);
        else if (rule == "float")
            c.set_range(i, -2, 2);
        else if (input_dtype(mode, i) != dtype::Bool)
            c.set_range(i, -5, 5);
    }
    return c;
}

std::vector<TensorShape> same_shapes(Mode mode, const TensorShape& s) {
    return std::vector<TensorShape>(param::Elemwise::arity(mode), s);
}

std::string error_of(Mode mode, const std::vector<TensorLayout>& in) {
    auto handle = Handle::make_naive();
    auto op = handle->create_operator<Elemwise>();
    op->param().mode = mode;
    std::vector<TensorLayout> out(1);
    try {
        op->deduce_layout(in, out);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

void expect_mentions(const std::string& msg, std::initializer_list<const char*> parts) {
    EXPECT_FALSE(msg.empty());
    for (const char* p : parts)
        EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

}  // namespace

TEST(ElemwiseLayout, EveryModeOnPaddedStridedInputs) {
    auto h = Handle::make_naive();
    for (Mode m : all_modes()) {
        checker_for(h.get(), m).set_noncontiguous(true).execs(same_shapes(m, {3, 7}));
        checker_for(h.get(), m).set_noncontiguous(true).execs(same_shapes(m, {2, 3, 5}));
        checker_for(h.get(), m).set_noncontiguous(true).execs(same_shapes(m, {1}));
        checker_for(h.get(), m).set_noncontiguous(true).execs(same_shapes(m, {1, 1031}));
    }
}

TEST(ElemwiseLayout, EveryModeOnBroadcastTransposedAndNegativeStrides) {
    auto h = Handle::make_naive();
    for (Mode m : all_modes()) {
        auto c = checker_for(h.get(), m);
        std::vector<TensorLayout> ls;
        int n = param::Elemwise::arity(m);
        for (int i = 0; i < n; ++i) {
            DType dt = input_dtype(m, i);
            switch (i) {
                case 0:  // a row repeated by stride 0
                    ls.emplace_back(TensorShape{4, 5}, std::vector<ptrdiff_t>{0, 1}, dt);
                    break;
                case 1:  // transposed
                    ls.push_back(TensorLayout({5, 4}, dt).dimshuffle({1, 0}));
                    break;
                case 2:  // rows in reverse
                    ls.emplace_back(TensorShape{4, 5}, std::vector<ptrdiff_t>{-5, 1}, dt);
                    break;
                default:  // a column repeated, columns reversed
                    ls.emplace_back(TensorShape{4, 5}, std::vector<ptrdiff_t>{-1, 0}, dt);
                    break;
            }
        }
        c.exec_layouts(ls);
        // Broadcast inside the op: {3,1} against {4} and a scalar.
        std::vector<TensorShape> shapes{{3, 1}, {4}, {}, {1, 4}};
        shapes.resize(n);
        checker_for(h.get(), m).execs(shapes);
    }
}

TEST(ElemwiseLayout, BroadcastValues) {
    auto a = HostTensor::from({3, 1}, {1, 2, 3});
    auto b = HostTensor::from({4}, {10, 20, 30, 40});
    auto r = elemwise(Mode::ADD, {a, b});
    EXPECT_EQ(r.shape().to_string(), "{3,4}");
    EXPECT_EQ(r.values(), (std::vector<double>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}));
    auto s = HostTensor::from({}, {2});
    auto t = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    EXPECT_EQ(elemwise(Mode::SUB, {s, t}).values(), (std::vector<double>{1, 0, -1, -2, -3, -4}));
    EXPECT_EQ(elemwise(Mode::MUL, {t, s}).values(), (std::vector<double>{2, 4, 6, 8, 10, 12}));
    auto sc = elemwise(Mode::ADD, {s, s});
    EXPECT_TRUE(sc.shape().is_scalar());
    EXPECT_EQ(sc.values(), (std::vector<double>{4}));
    // Ternary with three different shapes.
    auto lo = HostTensor::from({1, 3}, {0, 2, 4});
    auto hi = HostTensor::from({2, 1}, {3, 5});
    auto x = HostTensor::from({}, {4.5});
    // hi wins where lo > hi, as in NumPy
    EXPECT_EQ(elemwise(Mode::CLIP, {x, lo, hi}).values(),
              (std::vector<double>{3, 3, 3, 4.5, 4.5, 4.5}));
    EXPECT_EQ(elemwise(Mode::CLIP, {HostTensor::from({}, {2}), lo, hi}).values(),
              (std::vector<double>{2, 2, 3, 2, 2, 4}));
}

TEST(ElemwiseLayout, EmptyTensorsGiveEmptyOutputs) {
    auto e = HostTensor(TensorShape{0, 3}, dtype::Float32);
    auto row = HostTensor::from({3}, {1, 2, 3});
    auto r = elemwise(Mode::ADD, {e, row});
    EXPECT_EQ(r.shape().to_string(), "{0,3}");
    EXPECT_TRUE(r.values().empty());
    auto s = HostTensor::from({}, {1});
    EXPECT_EQ(elemwise(Mode::EXP, {HostTensor(TensorShape{0}, dtype::Float32)}).shape().to_string(),
              "{0}");
    EXPECT_EQ(elemwise(Mode::MUL, {s, HostTensor(TensorShape{2, 0}, dtype::Float32)})
                      .shape()
                      .to_string(),
              "{2,0}");
    auto b = HostTensor(TensorShape{0}, dtype::Bool);
    EXPECT_EQ(elemwise(Mode::COND, {b, HostTensor(TensorShape{0}, dtype::Int8),
                                    HostTensor(TensorShape{1}, dtype::Int8)})
                      .dtype(),
              dtype::Int8);
    // {0} against {2} is not broadcastable (0 is neither 2 nor 1)
    EXPECT_THROW(elemwise(Mode::ADD, {HostTensor(TensorShape{0}, dtype::Float32),
                                      HostTensor(TensorShape{2}, dtype::Float32)}),
                 ShapeError);
}

TEST(ElemwiseLayout, WritesThroughStridedOutput) {
    auto handle = Handle::make_naive();
    auto op = handle->create_operator<Elemwise>();
    op->param().mode = Mode::MUL;
    std::vector<float> a{1, 2, 3, 4, 5, 6}, buf(12, -1.f);
    float two = 2;
    TensorND in[2] = {TensorND(a.data(), TensorLayout({3, 2}, dtype::Float32)),
                      TensorND(&two, TensorLayout({1}, dtype::Float32))};
    // every second column of a 3x4 matrix, rows written bottom-up
    TensorND dst(buf.data() + 8, TensorLayout({3, 2}, {-4, 2}, dtype::Float32));
    op->exec(in, {&dst, 1});
    EXPECT_EQ(buf, (std::vector<float>{10, -1, 12, -1, 6, -1, 8, -1, 2, -1, 4, -1}));
}

TEST(ElemwiseLayout, LargeBroadcastAgainstPlainLoops) {
    const size_t rows = 257, cols = 1031;
    std::mt19937 rng(5);
    HostTensor a(TensorShape{rows, 1}, dtype::Float32), b(TensorShape{cols}, dtype::Float32);
    HostTensor c(TensorShape{rows, cols}, dtype::Float32);
    fill_uniform(a, -3, 3, rng);
    fill_uniform(b, -3, 3, rng);
    fill_uniform(c, -3, 3, rng);
    auto av = a.values(), bv = b.values(), cv = c.values();
    std::vector<double> want(rows * cols);
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j)
            want[i * cols + j] = av[i] * bv[j] + cv[i * cols + j];
    EXPECT_TRUE(tensors_near(elemwise(Mode::FUSE_MUL_ADD3, {a, b, c}),
                             HostTensor::from({rows, cols}, want), 1e-6));
}

TEST(ElemwiseErrors, ArityMismatchNamesModeAndCount) {
    TensorLayout f({3}, dtype::Float32);
    EXPECT_THROW(elemwise(Mode::ADD, {HostTensor(f), HostTensor(f), HostTensor(f)}), ParamError);
    expect_mentions(error_of(Mode::ADD, {f, f, f}),
                    {"Elemwise(mode=ADD)", "takes 2 inputs, got 3", "{3(1)} float32"});
    expect_mentions(error_of(Mode::EXP, {}), {"Elemwise(mode=EXP)", "takes 1 inputs, got 0"});
    expect_mentions(error_of(Mode::FUSE_MUL_ADD4, {f, f, f}),
                    {"FUSE_MUL_ADD4", "takes 4 inputs, got 3"});
}

TEST(ElemwiseErrors, DTypeMismatchNamesTheDtypes) {
    TensorLayout f({3}, dtype::Float32), i({3}, dtype::Int32);
    EXPECT_THROW(elemwise(Mode::ADD, {HostTensor(f), HostTensor(i)}), DTypeError);
    expect_mentions(error_of(Mode::ADD, {f, i}),
                    {"Elemwise(mode=ADD)", "one dtype", "float32", "int32"});
    TensorLayout b({3}, dtype::Bool), h({3}, dtype::Float16);
    expect_mentions(error_of(Mode::COND, {f, f, f}), {"Elemwise(mode=COND)", "bool condition"});
    expect_mentions(error_of(Mode::COND, {b, f, h}), {"COND", "float32", "float16"});
}

TEST(ElemwiseErrors, UnclaimedDtypesAreDTypeErrors) {
    TensorLayout f({3}, dtype::Float32), i({3}, dtype::Int32), b({3}, dtype::Bool);
    expect_mentions(error_of(Mode::EXP, {i}), {"Elemwise(mode=EXP)", "float dtypes only", "int32"});
    expect_mentions(error_of(Mode::SHL, {f, f}), {"Elemwise(mode=SHL)", "integer dtypes only"});
    expect_mentions(error_of(Mode::AND, {f, f}), {"Elemwise(mode=AND)", "bool or integer"});
    expect_mentions(error_of(Mode::NOT, {i}), {"Elemwise(mode=NOT)", "bool only"});
    expect_mentions(error_of(Mode::ADD, {b, b}), {"Elemwise(mode=ADD)", "not bool"});
    EXPECT_THROW(elemwise(Mode::SIN, {HostTensor(TensorShape{2}, dtype::Int8)}), DTypeError);
}

TEST(ElemwiseErrors, NonBroadcastableShapesNameTheShapes) {
    TensorLayout a({3}, dtype::Float32), b({4}, dtype::Float32), c({2, 3}, dtype::Float32);
    EXPECT_THROW(elemwise(Mode::ADD, {HostTensor(a), HostTensor(b)}), ShapeError);
    expect_mentions(error_of(Mode::ADD, {a, b}),
                    {"Elemwise(mode=ADD)", "broadcast", "{3(1)}", "{4(1)}"});
    expect_mentions(error_of(Mode::CLIP, {c, a, b}), {"CLIP", "{2(3),3(1)}", "{4(1)}"});
}

TEST(ElemwiseErrors, OutOfRangeModeAndWrongOutput) {
    TensorLayout f({3}, dtype::Float32);
    size_t bad = param::Elemwise::kModeCount + 3;
    auto msg = error_of(static_cast<Mode>(bad), {f});
    expect_mentions(msg, {"Elemwise: mode value", "out of range"});
    EXPECT_NE(msg.find(std::to_string(bad)), std::string::npos) << msg;
    auto handle = Handle::make_naive();
    auto op = handle->create_operator<Elemwise>();
    op->param().mode = Mode::LT;
    std::vector<float> x(3);
    std::vector<float> y(3);
    TensorND in[2] = {TensorND(x.data(), f), TensorND(x.data(), f)};
    TensorND out(y.data(), f);  // LT gives bool
    try {
        op->exec(in, {&out, 1});
        FAIL() << "expected DTypeError";
    } catch (const DTypeError& e) {
        expect_mentions(e.what(), {"Elemwise(mode=LT)", "bool"});
    }
}
