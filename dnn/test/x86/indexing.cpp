// Scatter and the multi-axis indexing operators (IndexingMultiAxisVec, IndexingSetMultiAxisVec,
// IndexingIncrMultiAxisVec) on the x86 handle against naive, exactly: random indices with repeats
// (so the order of SET's writes and of INCR's and ADD's sums must be naive's), negative indices
// where they wrap, adjacent and non-adjacent axes, broadcast index tensors, sizes 0, 1, primes and
// above the threading grain, padded inputs and outputs, several dtypes (Scatter ADD in every
// numeric one); out-of-range indices raise naive's error; float32 cases do not warn of a naive
// fallback. The embedding form (axis 0, whole rows) has cases of its own.
#include "neomeg/dnn/operators/indexing.h"
#include "src/x86/exec_report.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::IndexingMultiAxis axes(std::vector<int32_t> a) {
    param::IndexingMultiAxis p;
    p.axes = std::move(a);
    return p;
}

param::Scatter scatter(int32_t axis, param::Scatter::Mode mode) {
    param::Scatter p;
    p.axis = axis;
    p.mode = mode;
    return p;
}

struct MultiCase {
    std::vector<int32_t> axes;
    TensorShape data;
    std::vector<TensorShape> indices;
    TensorShape result;
};

// Adjacent axes stay in place, non-adjacent ones go in front, index tensors broadcast together.
const std::vector<MultiCase> kMulti = {
        {{0}, {7}, {{5}}, {5}},
        {{1}, {13, 17}, {{1}}, {13, 1}},
        {{1, 2}, {3, 5, 7}, {{11}, {11}}, {3, 11}},
        {{0, 2}, {3, 5, 7}, {{4, 1}, {6}}, {4, 6, 5}},
        {{2, 0}, {3, 5, 7}, {{2, 3}, {3}}, {2, 3, 5}},
        {{1}, {4, 9, 6}, {{2, 3}}, {4, 2, 3, 6}},
        {{0}, {300, 301}, {{700}}, {700, 301}},
        {{1}, {3, 5}, {{0}}, {3, 0}},
};

}  // namespace

TEST_F(X86, IndexingMultiAxisVecMatchesNaive) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Int32})
        for (const MultiCase& m : kMulti)
            for (bool padded : {false, true}) {
                Checker<IndexingMultiAxisVec> c(handle.get());
                c.set_param(axes(m.axes)).set_epsilon(0).set_dtype(0, dt).set_noncontiguous(padded);
                std::vector<TensorShape> shapes{m.data};
                for (size_t k = 0; k < m.indices.size(); ++k) {
                    auto n = static_cast<double>(m.data[static_cast<size_t>(m.axes[k])]);
                    c.set_dtype(k + 1, dtype::Int32).set_range(k + 1, -n, n);
                    shapes.push_back(m.indices[k]);
                }
                c.execs(shapes);
            }
}

TEST_F(X86, IndexingSetAndIncrMultiAxisVecMatchNaive) {
    for (const MultiCase& m : kMulti) {
        for (bool padded : {false, true}) {
            std::vector<TensorShape> shapes{m.data, m.result};
            auto set_indices = [&](auto& c) {
                for (size_t k = 0; k < m.indices.size(); ++k) {
                    auto n = static_cast<double>(m.data[static_cast<size_t>(m.axes[k])]);
                    c.set_dtype(k + 2, dtype::Int32).set_range(k + 2, -n, n);
                }
            };
            for (size_t k = 0; k < m.indices.size(); ++k)
                shapes.push_back(m.indices[k]);
            for (DType dt : {dtype::Float32, dtype::Int8, dtype::Float16}) {
                Checker<IndexingSetMultiAxisVec> c(handle.get());
                c.set_param(axes(m.axes)).set_epsilon(0).set_noncontiguous(padded);
                c.set_dtype(0, dt).set_dtype(1, dt);
                set_indices(c);
                c.execs(shapes);
                // A value broadcast along the result's first axis.
                auto bshapes = shapes;
                if (m.result.ndim > 1 && !m.result.is_empty()) {
                    bshapes[1][0] = 1;
                    c.execs(bshapes);
                }
            }
            for (DType dt : {dtype::Float32, dtype::Int32}) {
                Checker<IndexingIncrMultiAxisVec> c(handle.get());
                c.set_param(axes(m.axes)).set_epsilon(0).set_noncontiguous(padded);
                c.set_dtype(0, dt).set_dtype(1, dt).set_range(1, -1000, 1000);
                set_indices(c);
                c.execs(shapes);
            }
        }
    }
}

// The embedding form (one index tensor on axis 0, whole rows moved): a table of one row, every
// index the same row, heavy repeats, negative indices, multi-dimensional indices and rows, rows
// of one element, an empty index, one index, sizes above the threading grain, tables whose rows are
// apart, reversed or broadcast, every element size; INCR from a broadcast data
// (the gradient's zeros) and with a broadcast value; padded inputs and outputs.
TEST_F(X86, IndexingRowsMatchNaive) {
    struct Case {
        TensorShape data, index;
        double lo, hi;  // index range
    };
    const std::vector<Case> cases = {
            {{1, 4}, {3}, -1, 1}, {{7, 3}, {50}, -7, 7},
            {{9, 5}, {40}, 4, 5}, {{30, 5, 3}, {4, 6}, -30, 30},
            {{11}, {9}, -11, 11}, {{300, 301}, {2000}, -300, 300},
            {{4, 3}, {0}, 0, 4},  {{6, 8}, {2, 0, 3}, 0, 6},
            {{5, 1}, {1}, -5, 5}, {{2048, 32}, {1024, 64}, -2048, 2048},
    };
    auto result = [](const Case& k) {
        TensorShape r = k.index;
        for (size_t d = 1; d < k.data.ndim; ++d)
            r[r.ndim++] = k.data[d];
        return r;
    };
    for (const Case& k : cases)
        for (bool padded : {false, true}) {
            for (DType dt : {dtype::Float32, dtype::Int8, dtype::Float16, dtype::Int32}) {
                Checker<IndexingMultiAxisVec> c(handle.get());
                c.set_param(axes({0})).set_epsilon(0).set_noncontiguous(padded).set_dtype(0, dt);
                c.set_dtype(1, dtype::Int32).set_range(1, k.lo, k.hi).execs({k.data, k.index});
                // A table whose rows are apart, in reverse, or all one row.
                for (ptrdiff_t step : {ptrdiff_t(2), ptrdiff_t(-1), ptrdiff_t(0)}) {
                    if (k.data.ndim < 2 || k.data.is_empty())
                        continue;
                    TensorLayout l(k.data, dt);
                    l.stride[0] *= step;
                    c.exec_layouts({l, TensorLayout(k.index, dtype::Int32)});
                }
            }
            for (DType dt : {dtype::Float32, dtype::Int32}) {
                Checker<IndexingIncrMultiAxisVec> c(handle.get());
                c.set_param(axes({0})).set_epsilon(0).set_noncontiguous(padded);
                c.set_dtype(0, dt).set_dtype(1, dt).set_range(1, -1000, 1000);
                c.set_dtype(2, dtype::Int32).set_range(2, k.lo, k.hi);
                c.execs({k.data, result(k), k.index});
                TensorShape one = result(k);  // a value broadcast along the rows
                one[one.ndim - 1] = 1;
                c.execs({k.data, one, k.index});
                // data as one broadcast value, the gradient's zeros.
                TensorLayout zeros(k.data, std::vector<ptrdiff_t>(k.data.ndim, 0), dt);
                c.exec_layouts(
                        {zeros, TensorLayout(result(k), dt), TensorLayout(k.index, dtype::Int32)});
            }
        }
}

// The embedding form's vector row copy at each Highway target: every row length from one element
// past two vectors (AVX-512's) in 1-, 2- and 4-byte elements, rows of several axes, and
// out-of-range indices (first, last, past either end, in a block above the threading grain)
// raising naive's error.
TEST_F(X86, IndexingRowsEveryLength) {
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) {
                for (DType dt :
                     {DType(dtype::Int8), DType(dtype::Float16), DType(dtype::Float32)}) {
                    Checker<IndexingMultiAxisVec> c(handle.get());
                    c.set_param(axes({0})).set_epsilon(0).set_dtype(0, dt).set_dtype(1,
                                                                                     dtype::Int32);
                    c.set_range(1, -13, 13);
                    const size_t most = 2 * 64 / dt.size() + 1;
                    for (size_t len = 1; len <= most; ++len)
                        c.execs({{13, len}, {29}});
                    c.execs({{13, 3, 5}, {4, 7}});
                }
            });
    EXPECT_GE(ran, 1u);
    auto get = handle->create_operator<IndexingMultiAxisVec>();
    get->param() = axes({0});
    HostTensor table(TensorShape{5, 3}, dtype::Float32);
    table.set_values(std::vector<double>(15, 1.0));
    for (size_t count : {size_t(1), size_t(200000)})
        for (double bad : {5.0, -6.0, 1e6})
            for (bool last : {false, true}) {
                std::vector<double> v(count, 4.0);
                v[last ? count - 1 : 0] = bad;
                HostTensor idx(TensorShape{count}, dtype::Int32);
                idx.set_values(v);
                EXPECT_THROW(run_op(*get, {table, idx}), IndexError) << count << " " << bad;
            }
}

// A dst of 32 MiB or more is written with non-temporal stores: rows of whole vectors (32 floats),
// rows that start off a vector boundary (33 floats, 1-byte elements of 129), at each Highway
// target, an out-of-range index in such a dst raising naive's error.
TEST_F(X86, IndexingRowsIntoALargeDstStream) {
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        Checker<IndexingMultiAxisVec> c(handle.get());
        c.set_param(axes({0})).set_epsilon(0).set_dtype(1, dtype::Int32).set_range(1, -512, 512);
        c.execs({{512, 32}, {262144}}).execs({{512, 33}, {262144}});
        c.set_dtype(0, dtype::Int8).execs({{512, 129}, {262144}});
    });
    EXPECT_GE(ran, 1u);
    auto get = handle->create_operator<IndexingMultiAxisVec>();
    get->param() = axes({0});
    HostTensor table(TensorShape{5, 32}, dtype::Float32);
    table.set_values(std::vector<double>(160, 1.0));
    std::vector<double> v(262144, 4.0);
    v[200000] = 5.0;
    HostTensor idx(TensorShape{v.size()}, dtype::Int32);
    idx.set_values(v);
    EXPECT_THROW(run_op(*get, {table, idx}), IndexError);
}

// The row kernels run (not the general walk or naive) on float32 tables, contiguous or with the
// gradient's broadcast zeros, and an out-of-range index raises naive's error.
TEST_F(X86, IndexingRowsReportAndRange) {
    auto table = HostTensor::from({3, 2}, {1, 2, 3, 4, 5, 6});
    auto idx = HostTensor::from({4}, {2, -3, 2, 1}, dtype::Int32);
    auto value = HostTensor::from({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
    EXPECT_EQ(run_and_compare<IndexingMultiAxisVec>(*handle, axes({0}), {table, idx}, {}, 0),
              "rows");
    EXPECT_EQ(run_and_compare<IndexingIncrMultiAxisVec>(*handle, axes({0}), {table, value, idx}, {},
                                                        0),
              "rows");
    auto incr = handle->create_operator<IndexingIncrMultiAxisVec>();
    incr->param() = axes({0});
    HostTensor zeros(TensorLayout({3, 2}, {0, 0}, dtype::Float32));
    zeros.set_values(std::vector<double>(6, 0.0));
    // Row 2 gets value rows 0 and 2, row 0 (as -3) row 1, row 1 row 3.
    EXPECT_EQ(run_op(*incr, {zeros, value, idx})[0].values(),
              (std::vector<double>{3, 4, 7, 8, 6, 8}));
    EXPECT_EQ(last_kernel(*incr), "rows");
    auto bad = HostTensor::from({2}, {0, 3}, dtype::Int32);
    EXPECT_THROW(run_op(*incr, {table, HostTensor::from({2, 2}, {1, 1, 1, 1}), bad}), IndexError);
    auto get = handle->create_operator<IndexingMultiAxisVec>();
    get->param() = axes({0});
    EXPECT_THROW(run_op(*get, {table, HostTensor::from({1}, {-4}, dtype::Int32)}), IndexError);
    HostTensor empty(TensorShape{0, 2}, dtype::Float32);
    EXPECT_THROW(run_op(*get, {empty, HostTensor::from({1}, {0}, dtype::Int32)}), IndexError);
}

TEST_F(X86, ScatterMatchesNaive) {
    using Mode = param::Scatter::Mode;
    struct Case {
        int32_t axis;
        TensorShape data, index;
    };
    const std::vector<Case> cases = {
            {0, {7}, {20}},
            {0, {1}, {1}},
            {1, {13, 17}, {11, 40}},
            {0, {13, 17}, {30, 5}},
            {-1, {3, 5, 7}, {2, 4, 9}},
            {1, {4, 300, 301}, {4, 500, 301}},
            {0, {5, 3}, {0, 3}},
    };
    for (const Case& s : cases)
        for (bool padded : {false, true}) {
            auto n = static_cast<double>(s.data[static_cast<size_t>(
                    s.axis < 0 ? s.axis + int32_t(s.data.ndim) : s.axis)]);
            for (DType dt : {dtype::Float32, dtype::Int8, dtype::Float16, dtype::Int32}) {
                Checker<Scatter> c(handle.get());
                c.set_param(scatter(s.axis, Mode::SET)).set_epsilon(0).set_noncontiguous(padded);
                c.set_dtype(0, dt).set_dtype(2, dt).set_dtype(1, dtype::Int32).set_range(1, 0, n);
                c.execs({s.data, s.index, s.index});
            }
            for (DType dt : {dtype::Float32, dtype::Int32, dtype::Float16}) {
                Checker<Scatter> c(handle.get());
                c.set_param(scatter(s.axis, Mode::ADD)).set_epsilon(0).set_noncontiguous(padded);
                c.set_dtype(0, dt).set_dtype(2, dt).set_dtype(1, dtype::Int32).set_range(1, 0, n);
                c.set_range(2, -1000, 1000).execs({s.data, s.index, s.index});
            }
            // Narrow integers wrap where repeated indices sum past their range; bfloat16 rounds
            // each partial sum.
            for (DType dt : {dtype::Int8, dtype::Uint8, dtype::Int16, dtype::BFloat16}) {
                Checker<Scatter> c(handle.get());
                c.set_param(scatter(s.axis, Mode::ADD)).set_epsilon(0).set_noncontiguous(padded);
                c.set_dtype(0, dt).set_dtype(2, dt).set_dtype(1, dtype::Int32).set_range(1, 0, n);
                c.set_range(0, 0, 100).set_range(2, 0, 100).execs({s.data, s.index, s.index});
            }
            // data (ADD: Gather's gradient) or src (SET: Scatter's) as one broadcast element.
            for (auto mode : {Mode::SET, Mode::ADD}) {
                Checker<Scatter> c(handle.get());
                c.set_param(scatter(s.axis, mode)).set_epsilon(0).set_noncontiguous(padded);
                c.set_dtype(1, dtype::Int32).set_range(1, 0, n);
                TensorLayout index(s.index, dtype::Int32);
                std::vector<ptrdiff_t> zero(s.data.ndim, 0);
                c.exec_layouts({TensorLayout(s.data, zero, dtype::Float32), index,
                                TensorLayout(s.index, dtype::Float32)});
                c.exec_layouts({TensorLayout(s.data, dtype::Float32), index,
                                TensorLayout(s.index, zero, dtype::Float32)});
            }
        }
}

TEST_F(X86, IndexingOutOfRangeRaisesNaivesError) {
    auto src = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    auto bad = HostTensor::from({2}, {0, 3}, dtype::Int32);
    auto get = handle->create_operator<IndexingMultiAxisVec>();
    get->param() = axes({1});
    EXPECT_THROW(run_op(*get, {src, bad}), IndexError);
    auto sc = handle->create_operator<Scatter>();
    sc->param() = scatter(1, param::Scatter::Mode::SET);
    auto idx = HostTensor::from({2, 1}, {0, -1}, dtype::Int32);
    EXPECT_THROW(run_op(*sc, {src, idx, HostTensor::from({2, 1}, {7, 8})}), IndexError);
}

TEST_F(X86, IndexingFloat32DoesNotWarn) {
    x86::forget_naive_warnings();
    testing::internal::CaptureStderr();
    auto src = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    auto idx = HostTensor::from({2}, {2, -3}, dtype::Int32);
    std::string k1 = run_and_compare<IndexingMultiAxisVec>(*handle, axes({1}), {src, idx}, {}, 0);
    std::string k2 = run_and_compare<IndexingIncrMultiAxisVec>(
            *handle, axes({1}), {src, HostTensor::from({2, 2}, {1, 1, 1, 1}), idx}, {}, 0);
    auto sidx = HostTensor::from({1, 3}, {1, 0, 1}, dtype::Int32);
    std::string k3 =
            run_and_compare<Scatter>(*handle, scatter(0, param::Scatter::Mode::ADD),
                                     {src, sidx, HostTensor::from({1, 3}, {5, 6, 7})}, {}, 0);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.find("warning"), std::string::npos) << err;
    EXPECT_EQ(k1, "view");  // two indices are a progression: a slice
    EXPECT_EQ(k2, "loop");
    EXPECT_EQ(k3, "loop");
}

// A slice (an index tensor that is a progression, as Tensor.__getitem__ makes for x[:, a:b:c])
// runs as a strided view copied by relayout (on axis 0 too, before the embedding form): steps 1, 3
// and -1, negative values that wrap into a progression, one element, the leading, middle and last
// axis, padded inputs and outputs, three element sizes, and the cross_entropy input x[:, :1000] of
// a 1024x2048 tensor (above the grain). An index that is no progression keeps the table walk.
TEST_F(X86, IndexingSlicesRunAsViews) {
    struct Slice {
        TensorShape data;
        int32_t axis;
        std::vector<double> index;
    };
    std::vector<double> first1000(1000);
    for (size_t i = 0; i < first1000.size(); ++i)
        first1000[i] = double(i);
    const std::vector<Slice> slices = {
            {{4, 9, 6}, 0, {1, 2, 3}},           {{4, 9, 6}, 1, {0, 3, 6}},
            {{4, 9, 6}, 2, {5, 4, 3, 2, 1, 0}},  {{4, 9, 6}, 1, {-9, -8, -7, -6}},
            {{4, 9, 6}, 1, {6, -2, 8}},          {{4, 9, 6}, 2, {4}},
            {{31, 67}, 1, {66, 63, 60, 57, 54}}, {{1024, 2048}, 1, first1000}};
    for (const Slice& s : slices)
        for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8}) {
            SCOPED_TRACE(testing::Message() << s.data.to_string() << " axis " << s.axis);
            TensorShape ishape{s.index.size()};
            for (bool padded : {false, true}) {
                Checker<IndexingMultiAxisVec> c(handle.get());
                c.set_param(axes({s.axis})).set_epsilon(0).set_dtype(0, dt);
                c.set_dtype(1, dtype::Int32).set_values(1, s.index).set_noncontiguous(padded);
                c.execs({s.data, ishape});
            }
            std::mt19937 rng(5);
            HostTensor src(s.data, dt);
            fill_uniform(src, -100, 100, rng);
            auto idx = HostTensor::from(ishape, s.index, dtype::Int32);
            EXPECT_EQ(run_and_compare<IndexingMultiAxisVec>(*handle, axes({s.axis}), {src, idx}, {},
                                                            0),
                      "view");
        }
    auto src = HostTensor::from({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
    auto idx = HostTensor::from({3}, {0, 1, 3}, dtype::Int32);
    EXPECT_EQ(run_and_compare<IndexingMultiAxisVec>(*handle, axes({1}), {src, idx}, {}, 0), "loop");
    // A progression up to its last step is no slice: the embedding form's rows on axis 0.
    auto rows = HostTensor::from({5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    auto almost = HostTensor::from({4}, {0, 1, 2, 4}, dtype::Int32);
    EXPECT_EQ(run_and_compare<IndexingMultiAxisVec>(*handle, axes({0}), {rows, almost}, {}, 0),
              "rows");
}
