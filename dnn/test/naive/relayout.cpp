#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_basic.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Layouts of shape {3, 4, 5} that a relayout may read from; the first ones are writable too
// (no two elements share memory).
std::vector<TensorLayout> layouts_345(DType dt, bool with_broadcast) {
    std::vector<TensorLayout> v = {
            TensorLayout({3, 4, 5}, dt),
            padded_layout(TensorLayout({3, 4, 5}, dt)),
            TensorLayout({5, 4, 3}, dt).dimshuffle({2, 1, 0}),
            TensorLayout({4, 3, 5}, dt).dimshuffle({1, 0, 2}),
            TensorLayout({3, 4, 5}, {-20, 5, -1}, dt),
            TensorLayout({3, 4, 5}, {1, -3, 12}, dt),
            TensorLayout({3, 4, 5}, {80, 10, 2}, dt),
    };
    if (with_broadcast) {
        v.push_back(TensorLayout({3, 4, 5}, {0, 5, 1}, dt));
        v.push_back(TensorLayout({3, 4, 5}, {1, 0, 0}, dt));
        v.push_back(TensorLayout({3, 4, 5}, {0, 0, -1}, dt));
        v.push_back(TensorLayout({3, 4, 5}, {0, 0, 0}, dt));
    }
    return v;
}

void relayout(const HostTensor& src, HostTensor& dst) {
    auto h = Handle::make_naive();
    auto op = make_op<Relayout>(h.get());
    TensorND in = src.nd(), out = dst.nd();
    op->exec({&in, 1}, {&out, 1});
}

}  // namespace

TEST(Relayout, EveryLayoutPairKeepsLogicalValues) {
    std::mt19937 rng(3);
    for (DType dt : all_dtypes()) {
        for (const TensorLayout& sl : layouts_345(dt, true)) {
            for (const TensorLayout& dl : layouts_345(dt, false)) {
                HostTensor src(sl);
                fill_uniform(src, -100, 100, rng);
                HostTensor dst(dl);
                relayout(src, dst);
                ASSERT_EQ(dst.values(), src.values())
                        << dt.name() << " " << sl.to_string() << " -> " << dl.to_string();
            }
        }
    }
}

TEST(Relayout, WritesIntoASliceAndNothingElse) {
    for (DType dt : {dtype::Float32, dtype::Int8, dtype::Float16}) {
        auto big = HostTensor::from({6, 8, 10}, std::vector<double>(480, -7), dt);
        std::vector<double> sv(60);
        for (size_t i = 0; i < sv.size(); ++i)
            sv[i] = static_cast<double>(i);
        auto src = HostTensor::from({3, 4, 5}, sv, dt);
        // rows a < 3, b < 4 and every even c of big
        auto h = Handle::make_naive();
        auto op = make_op<Relayout>(h.get());
        TensorND in = src.nd(), out(big.nd().raw_ptr(), TensorLayout({3, 4, 5}, {80, 10, 2}, dt));
        op->exec({&in, 1}, {&out, 1});
        auto got = big.values();
        for (size_t a = 0; a < 6; ++a)
            for (size_t b = 0; b < 8; ++b)
                for (size_t c = 0; c < 10; ++c) {
                    bool inside = a < 3 && b < 4 && c % 2 == 0;
                    double want = inside ? sv[a * 20 + b * 5 + c / 2] : -7;
                    ASSERT_EQ(got[a * 80 + b * 10 + c], want) << a << "," << b << "," << c;
                }
    }
}

TEST(Relayout, TransposeHandComputed) {
    auto src = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    // dst is a column-major 2x3: memory holds the transpose
    HostTensor dst(TensorLayout({2, 3}, {1, 2}, dtype::Float32));
    relayout(src, dst);
    auto raw = static_cast<const float*>(dst.nd().raw_ptr());
    EXPECT_EQ(std::vector<float>(raw, raw + 6), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(Relayout, EdgeShapesThroughChecker) {
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes()) {
        Checker<Relayout> c(h.get());
        c.set_dtype(0, dt).set_range(0, 0, 100);
        c.execs({{0, 3}}).execs({{}}).execs({{1}}).execs({{7, 11, 13}}).execs({{64, 128, 33}});
        c.set_noncontiguous(true).execs({{0, 3}}).execs({{1}}).execs({{7, 11, 13}});
        c.exec_layouts({TensorLayout({4, 3}, {0, 1}, dt)});
        c.exec_layouts({TensorLayout({2, 3, 4}, dt).dimshuffle({2, 0, 1})});
    }
}

TEST(Relayout, MismatchIsAClearError) {
    auto h = Handle::make_naive();
    auto op = make_op<Relayout>(h.get());
    HostTensor src({2, 3}, dtype::Float32), wrong_shape({3, 2}, dtype::Float32),
            wrong_dtype({2, 3}, dtype::Int32);
    TensorND in = src.nd(), ws = wrong_shape.nd(), wd = wrong_dtype.nd();
    expect_error<ShapeError>(
            [&] {
                op->exec({&in, 1}, {&ws, 1});
            },
            {"Relayout()", "{3,2}", "{2,3}"});
    expect_error<DTypeError>(
            [&] {
                op->exec({&in, 1}, {&wd, 1});
            },
            {"Relayout()", "int32", "float32"});
}
