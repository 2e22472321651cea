// The operators that had only naive kernels on x86 (issue 12: sorting, adaptive pooling, resize,
// the generators, compaction, Dot and the small linear algebra) now each run a kernel of their
// own on float32: the operator reports which (KernelReport), that kernel is not naive, and no
// "naive reference kernel" warning is printed. The vision and quantization ops' own suites
// (roi.cpp, remap.cpp, deformable_conv.cpp, fake_quant.cpp) check theirs; the last test lists
// the operators still left to naive.
#include <set>
#include <string>

#include "neomeg/dnn/op_types.h"
#include "neomeg/dnn/operators/indexing.h"
#include "neomeg/dnn/operators/linalg.h"
#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/random.h"
#include "neomeg/dnn/operators/reduce.h"
#include "neomeg/dnn/operators/tensor_basic.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/x86/exec_report.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

template <class Op>
std::string run_kernel(Handle& h, const typename Op::Param& p, const std::vector<HostTensor>& in,
                       const std::vector<TensorShape>& out = {}) {
    auto op = h.create_operator<Op>();
    op->param() = p;
    run_op(*op, in, out);
    return last_kernel(*op);
}

}  // namespace

TEST_F(X86, FormerlyNaiveOnlyOpsRunTheirOwnKernels) {
    std::mt19937 rng(17);
    HostTensor x({2, 3, 10, 10}, dtype::Float32), v({10}, dtype::Float32),
            m({2, 3, 10, 10}, dtype::Bool), sq({3, 4, 4}, dtype::Float32),
            dy({2, 3, 4, 4}, dtype::Float32), dy3({2, 3, 3, 3}, dtype::Float32);
    for (HostTensor* t : {&x, &v, &sq, &dy, &dy3})
        fill_uniform(*t, -1, 1, rng);
    fill_uniform(m, 0, 2, rng);
    param::TopK topk;
    topk.k = 3;
    topk.mode = param::TopK::Mode::VALUE_IDX_SORTED;
    param::AdaptivePooling ap;
    ap.shape = {3, 3};
    param::Resize rs;
    rs.out_h = 4;
    rs.out_w = 4;
    x86::forget_naive_warnings();
    testing::internal::CaptureStderr();
    std::vector<std::pair<const char*, std::string>> ran = {
            {"Argsort", run_kernel<Argsort>(*handle, {}, {x})},
            {"TopK", run_kernel<TopK>(*handle, topk, {x})},
            {"AdaptivePoolingForward", run_kernel<AdaptivePoolingForward>(*handle, ap, {x})},
            {"AdaptivePoolingBackward",
             run_kernel<AdaptivePoolingBackward>(*handle, ap, {x, dy3, dy3})},
            {"Resize", run_kernel<Resize>(*handle, rs, {x})},
            {"ResizeBackward", run_kernel<ResizeBackward>(*handle, rs, {dy}, {{2, 3, 10, 10}})},
            {"CondTake", run_kernel<CondTake>(*handle, {}, {x, m})},
            {"NonZero", run_kernel<NonZero>(*handle, {}, {x})},
            {"Dot", run_kernel<Dot>(*handle, {}, {v, v})},
            {"Eye", run_kernel<Eye>(*handle, {}, {}, {{5, 5}})},
            {"Arange", run_kernel<Arange>(*handle, {}, {}, {{5}})},
            {"Linspace", run_kernel<Linspace>(*handle, {}, {}, {{5}})},
            {"Diag", run_kernel<Diag>(*handle, {}, {v})},
            {"MatrixInverse", run_kernel<MatrixInverse>(*handle, {}, {sq})},
            {"SVD", run_kernel<SVD>(*handle, {}, {sq})},
            {"PermutationRNG", run_kernel<PermutationRNG>(*handle, {}, {}, {{9}})},
    };
    std::string err = testing::internal::GetCapturedStderr();
    for (auto& [op, kernel] : ran) {
        EXPECT_NE(kernel, "no kernel report") << op;
        EXPECT_NE(kernel, "naive") << op;
        EXPECT_EQ(err.find(op), std::string::npos) << err;
    }
    EXPECT_EQ(err.find("naive reference kernel"), std::string::npos) << err;
}

// Which operators have no x86 kernel of their own (they run naive, with the warning on float32):
// only those with nothing to compute. A new operator needs an x86 kernel, or a place here.
TEST_F(X86, OperatorsLeftToNaiveAreTheKnownOnes) {
    // No arithmetic: a shape, a view of valid rows.
    const std::set<std::string> known = {"GetVarShape", "TakePrefix"};
    std::set<std::string> naive_only;
    for (OpType type : kAllOpTypes) {
        auto op = handle->create_operator(type);
        if (!dynamic_cast<x86::KernelReport*>(op.get()))
            naive_only.insert(op_type_name(type));
    }
    EXPECT_EQ(naive_only, known);
}
