#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_shape.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

std::vector<HostTensor> split(const HostTensor& src, int axis, std::vector<int32_t> sizes) {
    auto h = Handle::make_naive();
    param::Split p;
    p.axis = axis;
    p.sizes = std::move(sizes);
    auto op = make_op<Split>(h.get(), p);
    return run_op(*op, {src});
}

}  // namespace

TEST(Split, HandComputed) {
    auto src = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    auto r = split(src, 1, {1, 0, 2});
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].values(), (std::vector<double>{1, 4}));
    EXPECT_EQ(r[1].shape().to_string(), "{2,0}");
    EXPECT_EQ(r[2].values(), (std::vector<double>{2, 3, 5, 6}));
    auto rows = split(src, -2, {1, 1});
    EXPECT_EQ(rows[0].values(), (std::vector<double>{1, 2, 3}));
    EXPECT_EQ(rows[1].values(), (std::vector<double>{4, 5, 6}));
    auto whole = split(src, 0, {2});
    EXPECT_EQ(whole[0].values(), src.values());
    auto empty = split(HostTensor::from({0, 4}, {}), 1, {3, 1});
    EXPECT_EQ(empty[1].shape().to_string(), "{0,1}");
}

TEST(Split, UndoesConcatForEveryDtype) {
    std::mt19937 rng(13);
    auto h = Handle::make_naive();
    for (DType dt : all_dtypes())
        for (int axis : {0, 2, -2}) {
            HostTensor src({6, 7, 11}, dt);
            fill_uniform(src, 0, 100, rng);
            size_t len = src.shape()[axis < 0 ? axis + 3 : axis];
            std::vector<int32_t> sizes = {1, 0, static_cast<int32_t>(len) - 3, 2};
            auto parts = split(src, axis, sizes);
            ASSERT_EQ(parts.size(), 4u);
            param::Concat cp;
            cp.axis = axis;
            auto cat = make_op<Concat>(h.get(), cp);
            auto back = run_op(*cat, parts);
            EXPECT_TRUE(tensors_near(back[0], src, 0)) << dt.name() << " axis " << axis;
        }
}

TEST(Split, StridedInputsThroughChecker) {
    auto h = Handle::make_naive();
    param::Split p;
    p.axis = 1;
    p.sizes = {2, 3, 0, 2};
    Checker<Split> c(h.get());
    c.set_param(p).set_noncontiguous(true).execs({{3, 7, 5}}).execs({{0, 7}}).execs({{1, 7}});
    c.exec_layouts({TensorLayout({7, 3}, dtype::Float32).dimshuffle({1, 0})});
    c.exec_layouts({TensorLayout({3, 7}, {0, -1}, dtype::Float32)});
    p.axis = 0;
    p.sizes = {1000, 24, 1};
    c.set_param(p).set_noncontiguous(false).set_dtype(0, dtype::BFloat16).execs({{1025, 9}});
}

TEST(Split, WritesIntoStridedOutputs) {
    auto h = Handle::make_naive();
    param::Split p;
    p.axis = 0;
    p.sizes = {1, 2};
    auto op = make_op<Split>(h.get(), p);
    std::vector<HostTensor> dst;
    dst.emplace_back(TensorLayout({1, 2}, {2, -1}, dtype::Int32));
    dst.emplace_back(TensorLayout({2, 2}, {1, 2}, dtype::Int32));
    exec_into(*op, {HostTensor::from({3, 2}, {1, 2, 3, 4, 5, 6}, dtype::Int32)}, dst);
    EXPECT_EQ(dst[0].values(), (std::vector<double>{1, 2}));
    EXPECT_EQ(dst[1].values(), (std::vector<double>{3, 4, 5, 6}));
}

TEST(Split, BadSizesAreClearErrors) {
    auto h = Handle::make_naive();
    param::Split p;
    p.axis = 1;
    p.sizes = {1, 1};
    auto op = make_op<Split>(h.get(), p);
    HostTensor src({2, 3}, dtype::Float32);
    expect_error<ShapeError>([&] { run_op(*op, {src}); },
                             {"Split(axis=1, sizes=[1,1])", "{2(3),3(1)}", "sum to 2"});
    op->param().sizes = {4, -1};
    expect_error<ParamError>([&] { run_op(*op, {src}); }, {"Split(axis=1, sizes=[4,-1])"});
    op->param().sizes = {};
    expect_error<ParamError>([&] { run_op(*op, {src}); }, {"Split(axis=1, sizes=[])", "empty"});
    op->param().sizes = {3};
    op->param().axis = 2;
    expect_error<ParamError>([&] { run_op(*op, {src}); },
                             {"Split(axis=2, sizes=[3])", "{2(3),3(1)}"});
}
