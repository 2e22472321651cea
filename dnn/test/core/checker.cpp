// The checker itself must fail when kernels disagree; these tests keep it honest.
#include <gtest/gtest-spi.h>

#include "common/checker.h"
#include "neomeg/dnn/operators/tensor_basic.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST(HostTensor, StridedValuesReadInLogicalOrder) {
    auto t = HostTensor(TensorLayout({2, 2}, {1, 2}, dtype::Float32));  // column-major view
    t.set_values({1, 2, 3, 4});
    EXPECT_EQ(t.values(), (std::vector<double>{1, 2, 3, 4}));
    EXPECT_EQ(t.at({0, 1}), 2);
    EXPECT_EQ(t.contiguous().layout().stride[0], 2);
}

TEST(HostTensor, ToleranceComparison) {
    auto a = HostTensor::from({3}, {1, 2, 3});
    auto b = HostTensor::from({3}, {1, 2, 3.001});
    EXPECT_TRUE(tensors_near(a, b, 1e-3));
    EXPECT_FALSE(tensors_near(a, b, 1e-4));
    EXPECT_FALSE(tensors_near(a, HostTensor::from({1, 3}, {1, 2, 3}), 1));
}

TEST(Checker, GeneratorOpAgainstNaive) {
    auto h = Handle::make_naive();
    param::Fill p;
    p.value = -7;
    p.dtype = DTypeEnum::Int8;
    Checker<Fill>(h.get()).set_param(p).set_output_shapes({{3, 5}}).execs({});
}

TEST(NumericGrad, MatchesAnalyticDerivativeOfSquare) {
    auto x = HostTensor::from({3}, {0.5, -1, 2});
    auto dy = HostTensor::from({3}, {1, 1, 1});
    auto g = numeric_grad(
            [](const std::vector<HostTensor>& in) {
                auto v = in[0].values();
                for (auto& e : v)
                    e = e * e;
                return HostTensor::from({3}, v);
            },
            {x}, 0, dy);
    EXPECT_TRUE(tensors_near(g, HostTensor::from({3}, {1, -2, 4}), 1e-3));
}

TEST(HostTensor, CopyOwnsItsValues) {
    auto a = HostTensor(TensorLayout({2, 2}, {-2, 1}, dtype::Float32));  // negative stride
    a.set_values({1, 2, 3, 4});
    HostTensor b = a;
    a.set_values({5, 6, 7, 8});
    EXPECT_EQ(b.values(), (std::vector<double>{1, 2, 3, 4}));
    HostTensor c;
    c = b;
    b.set_values({0, 0, 0, 0});
    EXPECT_EQ(c.values(), (std::vector<double>{1, 2, 3, 4}));
}
