// Elemwise on the CUDA handle against naive: every mode on its dtypes (float32, float16,
// bfloat16, the integer dtypes and bool where the mode's rule takes them), empty, scalar and odd
// sizes, broadcasts (scalar, row, column, per-channel), padded, transposed and reversed views,
// padded outputs.
#include "neomeg/dnn/operators/elemwise.h"
#include "cuda/cuda_test.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Elemwise::Mode;
using Rule = std::string_view;

param::Elemwise mode_param(Mode m) {
    param::Elemwise p;
    p.mode = m;
    return p;
}

size_t arity(Mode m) {
    return static_cast<size_t>(param::Elemwise::arity(m));
}

std::vector<Mode> all_modes() {
    std::vector<Mode> r;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i)
        r.push_back(static_cast<Mode>(i));
    return r;
}

// Inputs inside each mode's domain, so that the comparison is of values, not of NaNs; float
// formulas are computed in float on the GPU and in double by naive.
void set_domain(CudaChecker<Elemwise>& c, Mode m, DType dt) {
    double lo = -3, hi = 3;
    if (m == Mode::LOG || m == Mode::SQRT || m == Mode::RSQRT || m == Mode::POW)
        lo = 0.1;
    if (m == Mode::LOG1P)
        lo = -0.9;
    if (m == Mode::ACOSH)
        lo = 1.1;
    if (m == Mode::ASIN || m == Mode::ACOS || m == Mode::ATANH || m == Mode::ERFINV)
        lo = -0.9, hi = 0.9;
    if (m == Mode::ERFCINV)
        lo = 0.1, hi = 1.9;
    if (m == Mode::TAN)
        lo = -1.2, hi = 1.2;
    if (m == Mode::SHL || m == Mode::SHR) {
        // Counts beyond the width included: they have their own rule.
        c.set_range(0, -100, 100).set_range(1, -2, 40);
        return;
    }
    if (!dt.is_float())
        lo = -50, hi = 50;
    for (size_t i = 0; i < arity(m); ++i)
        c.set_range(i, lo, hi);
    if (m == Mode::POW)
        c.set_range(1, -2, 2);
    if (m == Mode::COND)
        c.set_range(0, 0, 2);
}

// The dtypes a mode's rule takes as data.
std::vector<DType> data_dtypes(Mode m) {
    Rule rule = param::Elemwise::dtypes(m);
    std::vector<DType> floats{dtype::Float32, dtype::Float16, dtype::BFloat16};
    std::vector<DType> ints{dtype::Int8, dtype::Uint8, dtype::Int16, dtype::Int32};
    if (rule == "float")
        return floats;
    if (rule == "not")
        return {dtype::Bool};
    if (rule == "shift")
        return ints;
    if (rule == "logical") {
        ints.push_back(dtype::Bool);
        return ints;
    }
    floats.insert(floats.end(), ints.begin(), ints.end());
    if (rule == "compare" || rule == "select")
        floats.push_back(dtype::Bool);
    return floats;
}

CudaChecker<Elemwise> checker(Handle* h, Mode m, DType dt) {
    CudaChecker<Elemwise> c(h);
    c.set_param(mode_param(m)).expect_kernel("cuda");
    for (size_t i = 0; i < arity(m); ++i)
        c.set_dtype(i, dt);
    if (m == Mode::COND)
        c.set_dtype(0, dtype::Bool);
    set_domain(c, m, dt);
    // float formulas run in float here and in double in naive; transcendental ones differ by a
    // few ulp, which the float16/bfloat16 roundings of the default tolerance already cover.
    if (dt == dtype::Float32)
        c.set_epsilon(2e-5);
    return c;
}

}  // namespace

TEST_F(Cuda, ElemwiseEveryModeAndDtype) {
    for (Mode m : all_modes())
        for (DType dt : data_dtypes(m))
            for (const TensorShape& s :
                 {TensorShape{0}, TensorShape{1}, TensorShape{13, 17}, TensorShape{3, 5, 7, 11}}) {
                SCOPED_TRACE(std::string(param::to_string(m)) + " " + dt.name());
                auto c = checker(handle.get(), m, dt);
                c.execs(std::vector<TensorShape>(arity(m), s));
                c.set_noncontiguous(true).execs(std::vector<TensorShape>(arity(m), s));
            }
}

TEST_F(Cuda, ElemwiseLargeTensorsAndBroadcasts) {
    const std::vector<std::vector<TensorShape>> binary = {
            {{(1 << 20) + 3}, {(1 << 20) + 3}},
            {{13, 17}, {1, 17}},
            {{13, 17}, {13, 1}},
            {{13, 17}, {1}},
            {{1}, {13, 17}},
            {{8, 16, 9, 9}, {1, 16, 1, 1}},
            {{5, 1}, {1, 7}},
    };
    for (Mode m : {Mode::ADD, Mode::MUL, Mode::TRUE_DIV, Mode::MAX, Mode::SWITCH_GT0, Mode::LT})
        for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int32})
            for (auto& shapes : binary) {
                if (m == Mode::TRUE_DIV && !dt.is_float())
                    continue;
                auto c = checker(handle.get(), m, dt);
                c.execs(shapes);
            }
    auto c = checker(handle.get(), Mode::FUSE_MUL_ADD3, dtype::Float32);
    c.execs({{4, 6, 5}, {1, 6, 1}, {4, 1, 5}});
}

TEST_F(Cuda, ElemwiseStridedViews) {
    auto c = checker(handle.get(), Mode::SUB, dtype::Float32);
    // A transposed view minus a reversed one, then a broadcast column.
    c.exec_layouts({TensorLayout({5, 4}, dtype::Float32).dimshuffle({1, 0}),
                    TensorLayout({4, 5}, {-5, 1}, dtype::Float32)});
    c.exec_layouts({TensorLayout({4, 5}, {7, 1}, dtype::Float32),
                    TensorLayout({4, 5}, {1, 0}, dtype::Float32)});
}

TEST_F(Cuda, ElemwiseIntegerTrueDivGivesFloat32) {
    CudaChecker<Elemwise> c(handle.get());
    c.set_param(mode_param(Mode::TRUE_DIV)).set_dtype(0, dtype::Int32).set_dtype(1, dtype::Int32);
    c.set_values(0, {7, -7, 1 << 30, 0}).set_values(1, {2, 2, 3, 0}).execs({{4}, {4}});
}

TEST_F(Cuda, ElemwiseVectorisedContiguousAndAligned) {
    // Sizes around each vector width (4 float32, 8 16-bit, 16 one-byte elements per thread),
    // with and without a tail, and a large one.
    const std::vector<size_t> sizes = {4, 5, 8, 15, 16, 17, 33, 4099, (1 << 20) + 7};
    struct Run {
        Mode mode;
        std::vector<DType> in;
    };
    const std::vector<Run> runs = {
            {Mode::ADD, {dtype::Float32, dtype::Float32}},
            {Mode::RELU, {dtype::Float32}},
            {Mode::MUL, {dtype::Float16, dtype::Float16}},
            {Mode::SIGMOID, {dtype::BFloat16}},
            {Mode::ADD, {dtype::Int8, dtype::Int8}},
            {Mode::AND, {dtype::Bool, dtype::Bool}},
            {Mode::LT, {dtype::Float32, dtype::Float32}},  // bool out, narrower than its inputs
            {Mode::TRUE_DIV, {dtype::Int32, dtype::Int32}},
            {Mode::COND, {dtype::Bool, dtype::Float16, dtype::Float16}},
            {Mode::FUSE_MUL_ADD3, {dtype::Float32, dtype::Float32, dtype::Float32}},
    };
    for (const Run& r : runs)
        for (size_t n : sizes) {
            SCOPED_TRACE(std::string(param::to_string(r.mode)) + " n=" + std::to_string(n));
            auto c = checker(handle.get(), r.mode, r.in.back());
            for (size_t i = 0; i < r.in.size(); ++i)
                c.set_dtype(i, r.in[i]);
            if (r.mode == Mode::TRUE_DIV)
                c.set_range(1, 1, 50);
            int widest = 1;
            for (DType dt : r.in)
                widest = std::max(widest, static_cast<int>(dt.size()));
            c.expect_kernel(n >= static_cast<size_t>(16 / widest) ? "cuda(vector)" : "cuda");
            c.execs(std::vector<TensorShape>(r.in.size(), TensorShape{n}));
            // An input broadcast from one element keeps the vectorised kernel.
            std::vector<TensorShape> with_scalar(r.in.size(), TensorShape{n});
            with_scalar.back() = {1};
            if (r.in.size() > 1)
                c.execs(with_scalar);
        }
}

TEST_F(Cuda, ElemwiseMisalignedOrStridedStaysElementwise) {
    // Tensors one element past an aligned address: the element-wise kernel, the same values.
    const size_t n = 1001;
    std::vector<double> a(n + 1), b(n + 1);
    for (size_t i = 0; i <= n; ++i) {
        a[i] = static_cast<double>(i) * 0.5 - 100;
        b[i] = static_cast<double>(i % 7) - 3;
    }
    auto da = DeviceTensor::from(HostTensor::from({n + 1}, a));
    auto db = DeviceTensor::from(HostTensor::from({n + 1}, b));
    DeviceTensor dc(TensorLayout({n + 1}, dtype::Float32));
    TensorLayout view({n}, dtype::Float32);
    auto shifted = [&](const DeviceTensor& d) {
        return TensorND(static_cast<float*>(d.nd().raw_ptr()) + 1, view);
    };
    auto op = handle->create_operator<Elemwise>();
    op->param() = mode_param(Mode::ADD);
    std::vector<TensorND> in{shifted(da), shifted(db)}, out{shifted(dc)};
    op->exec(in, out);
    EXPECT_EQ(last_kernel(*op), "cuda");
    auto got = dc.to_host().values();
    for (size_t i = 1; i <= n; ++i)
        ASSERT_EQ(got[i], static_cast<double>(static_cast<float>(a[i]) + static_cast<float>(b[i])))
                << i;
    // A column broadcast is not one element: element-wise as well.
    auto c = checker(handle.get(), Mode::ADD, dtype::Float32);
    c.expect_kernel("cuda").execs({{64, 16}, {64, 1}});
}

// Quantized tensors reach no CUDA Elemwise kernel (its launchers know only the plain dtypes): the
// frame stages them through naive, which computes MegEngine's integer modes.
TEST_F(Cuda, ElemwiseQuantizedRunsStagedNaive) {
    for (DType q : {DType::quantized_s8(0.1f), DType::quantized_s32(0.25f)})
        for (Mode m : {Mode::RELU, Mode::NEGATE, Mode::ADD, Mode::SUB, Mode::MAX, Mode::MIN}) {
            SCOPED_TRACE(q.full_name() + " " + param::to_string(m));
            CudaChecker<Elemwise> c(handle.get());
            c.set_param(mode_param(m)).set_epsilon(0).expect_kernel("naive(staged)");
            for (size_t i = 0; i < arity(m); ++i)
                c.set_dtype(i, q).set_range(i, -128, 128);
            c.execs(std::vector<TensorShape>(arity(m), TensorShape{5, 9}));
        }
}
