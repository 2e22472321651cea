// GroupNormForward and GroupNormBackward on the x86 handle against naive: the backward exactly, the
// forward (its moments summed in double lanes, another order than naive's) within 1e-6 relative,
// with and without affine, one group and one channel per group, ranks 2 to 4 (no spatial axes
// too), runs shorter than a vector and with vector tails, sizes above the threading grain,
// magnitudes where the summation order would show, a large mean over a small spread; strided
// inputs and other dtypes, which go to naive.
#include "neomeg/dnn/operators/norm.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::GroupNorm gn(bool affine, uint32_t group) {
    param::GroupNorm p;
    p.affine = affine;
    p.group = group;
    return p;
}

void check(Handle* handle, bool affine, uint32_t group, const TensorShape& s, float lo = -1e3,
           float hi = 1e3) {
    TensorShape ch{s.shape[1]}, stats{s.shape[0], group};
    Checker<GroupNormForward> f(handle);
    f.set_param(gn(affine, group)).set_epsilon(1e-6).set_range(0, lo, hi);
    std::vector<TensorShape> in{s};
    if (affine)
        in.insert(in.end(), {ch, ch});
    f.execs(in);
    Checker<GroupNormBackward> b(handle);
    b.set_param(gn(affine, group)).set_epsilon(0).set_range(1, -1e3, 1e3).set_range(3, 0.5, 2);
    std::vector<TensorShape> bin{s, s, stats, stats};
    if (affine)
        bin.push_back(ch);
    b.execs(bin);
}

}  // namespace

TEST_F(X86, GroupNormMatchesNaive) {
    for (bool affine : {false, true}) {
        check(handle.get(), affine, 1, {3, 4, 5});
        check(handle.get(), affine, 2, {3, 4, 5});
        check(handle.get(), affine, 4, {2, 4, 7, 3});
        check(handle.get(), affine, 3, {5, 6});
        check(handle.get(), affine, 8, {16, 64, 30, 30});
        check(handle.get(), affine, 1, {1, 1, 1});
        check(handle.get(), affine, 3, {2, 6, 33});
        check(handle.get(), affine, 2, {2, 4, 9, 7}, 1e3f, 1e3f + 1);
    }
    HostTensor x({2, 4, 3}, dtype::Float32), w({4}, dtype::Float32), bias({4}, dtype::Float32);
    EXPECT_EQ(run_and_compare<GroupNormForward>(*handle, gn(true, 2), {x, w, bias}, {}, 0), "loop");
}

TEST_F(X86, GroupNormStridedAndOtherDtypesRunNaive) {
    Checker<GroupNormForward> c(handle.get());
    c.set_param(gn(true, 2)).set_noncontiguous(true).execs({{3, 4, 5}, {4}, {4}});
    Checker<GroupNormBackward> b(handle.get());
    b.set_param(gn(true, 2)).set_range(3, 0.5, 2).set_noncontiguous(true);
    b.execs({{3, 4, 5}, {3, 4, 5}, {3, 2}, {3, 2}, {4}});
    Checker<GroupNormForward> h(handle.get());
    h.set_param(gn(true, 3)).set_dtype(0, dtype::Float16).set_dtype(1, dtype::Float16);
    h.set_dtype(2, dtype::Float16).execs({{2, 6, 5}, {6}, {6}});
    HostTensor x({2, 4, 3}, dtype::Float16);
    EXPECT_EQ(run_and_compare<GroupNormForward>(*handle, gn(false, 2), {x}, {}, 1e-2), "naive");
}
