// CondTake and NonZero on the x86 handle against naive, exactly: every dtype, ranks 1 to 4, empty
// tensors, no and every element kept, sizes above the threading grain (the two-pass chunked
// compaction), -0.0 as zero and NaN as nonzero, strided, transposed, negatively strided and
// broadcast inputs, padded outputs; and that they run their own loops.
#include <limits>

#include "neomeg/dnn/operators/indexing.h"
#include "neomeg/dnn/param_base.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const std::vector<DType> kAll = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                                 dtype::Uint8,   dtype::Int16,   dtype::Int32,    dtype::Bool};

const std::vector<TensorShape> kShapes = {{},      {1},       {0},          {13},
                                          {7, 11}, {3, 0, 2}, {2, 3, 4, 5}, {401, 503}};

}  // namespace

TEST_F(X86, CondTakeMatchesNaive) {
    for (DType dt : kAll)
        for (const TensorShape& s : kShapes) {
            Checker<CondTake> c(handle.get());
            c.set_dtype(0, dt).set_dtype(1, dtype::Bool).set_epsilon(0).set_range(0, -50, 50);
            c.execs({s, s});
            c.set_noncontiguous(true).execs({s, s});
            std::vector<double> none(s.total_nr_elems(), 0.0), all(s.total_nr_elems(), 1.0);
            c.set_noncontiguous(false).set_values(1, none).execs({s, s});
            c.set_values(1, all).execs({s, s});
        }
    for (DType dt : {dtype::Float32, dtype::Int8}) {
        Checker<CondTake> c(handle.get());
        c.set_dtype(0, dt).set_dtype(1, dtype::Bool).set_epsilon(0);
        c.exec_layouts(
                {TensorLayout({7, 11}, {1, 7}, dt), TensorLayout({7, 11}, {0, 1}, dtype::Bool)});
        c.exec_layouts({TensorLayout({4, 7}, {7, -1}, dt), TensorLayout({4, 7}, dtype::Bool)});
    }
}

TEST_F(X86, NonZeroMatchesNaive) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (DType dt : kAll)
        for (const TensorShape& s : kShapes) {
            if (s.ndim == 0)
                continue;  // NonZero rejects 0-d src, as np.nonzero does
            Checker<NonZero> c(handle.get());
            c.set_dtype(0, dt).set_epsilon(0).set_range(0, -1, 2);
            c.execs({s});
            c.set_noncontiguous(true).execs({s});
            std::vector<double> zeros(s.total_nr_elems(), 0.0);
            c.set_noncontiguous(false).set_values(0, zeros).execs({s});
            if (dt.is_float() && !s.is_empty()) {
                std::vector<double> special(s.total_nr_elems());
                for (size_t i = 0; i < special.size(); ++i)
                    special[i] = i % 3 == 0 ? -0.0 : (i % 3 == 1 ? nan : 0.0);
                c.set_values(0, special).execs({s});
            }
        }
    Checker<NonZero> c(handle.get());
    c.set_range(0, -1, 2).set_dtype(0, dtype::Int8).set_epsilon(0);
    c.exec_layouts({TensorLayout({5, 7}, {1, 5}, dtype::Int8)});
    c.exec_layouts({TensorLayout({4, 7}, {0, -1}, dtype::Int8)});
}

TEST_F(X86, CompactionRunsItsLoops) {
    std::mt19937 rng(8);
    HostTensor x({6, 7}, dtype::Float32), m({6, 7}, dtype::Bool);
    fill_uniform(x, -1, 1, rng);
    fill_uniform(m, 0, 2, rng);
    EXPECT_EQ(run_and_compare<CondTake>(*handle, param::Empty{}, {x, m}, {}, 0), "loop");
    EXPECT_EQ(run_and_compare<NonZero>(*handle, param::Empty{}, {m}, {}, 0), "loop");
}
