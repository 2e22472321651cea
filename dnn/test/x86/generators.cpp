// Arange, Linspace, Eye and Diag on the x86 handle against naive, exactly: every dtype each takes,
// lengths of 0, 1, primes and above the threading grain, values beyond an integer dtype's range
// (saturating) and beyond float16's (infinite), endpoint both ways, every diagonal offset inside
// and outside the matrix, strided sources and padded outputs; and that they run their own loops.
#include "neomeg/dnn/operators/tensor_basic.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const std::vector<DType> kAll = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                                 dtype::Uint8,   dtype::Int16,   dtype::Int32,    dtype::Bool};

}  // namespace

TEST_F(X86, ArangeMatchesNaive) {
    for (DType dt : kAll) {
        if (dt.is_bool())
            continue;
        for (auto [start, step] : {std::pair{0.f, 1.f}, std::pair{-3.25f, 0.1f},
                                   std::pair{100.f, -7.5f}, std::pair{1e3f, 3e3f}})
            for (size_t n : {size_t(0), size_t(1), size_t(97), size_t(300001)}) {
                param::Arange p;
                p.start = start;
                p.step = step;
                p.dtype = dt.enumv();
                Checker<Arange> c(handle.get());
                c.set_param(p).set_epsilon(0).set_output_shapes({{n}}).execs({});
                c.set_noncontiguous(true).execs({});
            }
    }
}

TEST_F(X86, LinspaceMatchesNaive) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (auto [start, stop] :
             {std::pair{0.f, 1.f}, std::pair{-3.25f, 7.1f}, std::pair{1e5f, -1e5f}})
            for (bool endpoint : {false, true})
                for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(97), size_t(300001)}) {
                    param::Linspace p;
                    p.start = start;
                    p.stop = stop;
                    p.endpoint = endpoint;
                    p.dtype = dt.enumv();
                    Checker<Linspace> c(handle.get());
                    c.set_param(p).set_epsilon(0).set_output_shapes({{n}}).execs({});
                    c.set_noncontiguous(true).execs({});
                }
}

TEST_F(X86, EyeMatchesNaive) {
    for (DType dt : kAll)
        for (TensorShape s : {TensorShape{1, 1}, TensorShape{5, 3}, TensorShape{3, 5},
                              TensorShape{0, 4}, TensorShape{700, 300}})
            for (int32_t k : {-6, -1, 0, 2, 5}) {
                param::Eye p;
                p.k = k;
                p.dtype = dt.enumv();
                Checker<Eye> c(handle.get());
                c.set_param(p).set_epsilon(0).set_output_shapes({s}).execs({});
                c.set_noncontiguous(true).execs({});
            }
}

TEST_F(X86, DiagMatchesNaive) {
    for (DType dt : kAll)
        for (int32_t k : {-7, -2, 0, 1, 4}) {
            param::Diag p;
            p.k = k;
            Checker<Diag> c(handle.get());
            c.set_param(p).set_epsilon(0).set_dtype(0, dt).set_range(0, -100, 100);
            for (TensorShape s : {TensorShape{1}, TensorShape{0}, TensorShape{7}, TensorShape{400},
                                  TensorShape{5, 3}, TensorShape{3, 5}, TensorShape{1, 1},
                                  TensorShape{0, 3}, TensorShape{60, 61}}) {
                c.set_noncontiguous(false).execs({s});
                c.set_noncontiguous(true).execs({s});
            }
            c.set_noncontiguous(false).exec_layouts({TensorLayout({7, 5}, dt).dimshuffle({1, 0})});
        }
}

TEST_F(X86, GeneratorsRunTheirLoops) {
    std::mt19937 rng(2);
    HostTensor v({9}, dtype::Float32);
    fill_uniform(v, -1, 1, rng);
    EXPECT_EQ(run_and_compare<Arange>(*handle, param::Arange{}, {}, {{10}}, 0), "loop");
    EXPECT_EQ(run_and_compare<Linspace>(*handle, param::Linspace{}, {}, {{10}}, 0), "loop");
    EXPECT_EQ(run_and_compare<Eye>(*handle, param::Eye{}, {}, {{4, 4}}, 0), "loop");
    EXPECT_EQ(run_and_compare<Diag>(*handle, param::Diag{}, {v}, {}, 0), "loop");
}
