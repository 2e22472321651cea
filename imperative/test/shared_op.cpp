// shared_op: one op per (type, params) per thread for backward rules, so that its kernels'
// plans outlive a call.
#include <gtest/gtest.h>

#include <array>
#include <thread>
#include <vector>

#include "../src/shared_op.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/linalg.h"
#include "neomeg/op/defs/tensor_basic.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

TEST(SharedOp, OnePerParamsAndThread) {
    dnn::param::MatrixMul p;
    auto a = shared_op<ops::MatrixMul>(p);
    EXPECT_EQ(a.get(), shared_op<ops::MatrixMul>(p).get());
    EXPECT_TRUE(a->param() == p);
    dnn::param::MatrixMul pt = p;
    pt.transposeA = true;
    auto b = shared_op<ops::MatrixMul>(pt);
    EXPECT_NE(a.get(), b.get());
    EXPECT_TRUE(b->param().transposeA);
    // Another thread gets its own: an op object must not run on two threads at once.
    const ops::MatrixMul* other = nullptr;
    std::thread([&] { other = shared_op<ops::MatrixMul>(p).get(); }).join();
    EXPECT_NE(other, a.get());
    // The kernel-library operator, and with it its plans, stays with the shared op.
    auto* h = CompNode::load("cpu0").dnn_handle();
    EXPECT_EQ(&a->dnn_operator(h), &shared_op<ops::MatrixMul>(p)->dnn_operator(h));
}

TEST(SharedOp, VaryingParamsAreBounded) {
    dnn::param::Fill p;
    p.value = -1;
    auto first = shared_op<ops::Fill>(p);
    for (size_t i = 0; i < kSharedOpsPerType; ++i) {
        dnn::param::Fill q;
        q.value = static_cast<float>(i);
        EXPECT_EQ(shared_op<ops::Fill>(q)->param().value, q.value);
    }
    // The cache was dropped once it held kSharedOpsPerType ops; `first` lives on in its holder.
    EXPECT_NE(shared_op<ops::Fill>(p).get(), first.get());
    EXPECT_EQ(first->param().value, -1);
}

TEST(SharedOp, RepeatedBackwardGivesTheSameGradients) {
    // The second backward pass runs the rules' shared ops (and their cached plans) again.
    auto cn = CompNode::load("cpu0");
    std::vector<float> av{1, 2, 3, 4, 5, 6}, bv{1, -1, 2, 0, 0.5f, 3};
    auto a = Tensor::from_host(av.data(), {2, 3}, dnn::dtype::Float32, cn);
    auto b = Tensor::from_host(bv.data(), {3, 2}, dnn::dtype::Float32, cn);
    std::vector<std::vector<float>> grads;
    for (int step = 0; step < 2; ++step) {
        auto key = GradKey::make();
        key->attach(a);
        key->activate();
        std::array<Tensor, 2> in{a, b};
        Tensor c = imperative::apply(ops::MatrixMul(), in)[0];
        key->deactivate();
        std::vector<Tensor> ys{c}, wrt{a};
        auto g = key->backward(ys, {}, wrt)[0];
        std::vector<float> v(6);
        g.to_host(v.data());
        grads.push_back(v);
    }
    // dA = ones(2, 2) @ B^T: each row is B's row sums.
    std::vector<float> expected{0, 2, 3.5f, 0, 2, 3.5f};
    EXPECT_EQ(grads[0], expected);
    EXPECT_EQ(grads[1], expected);
}
