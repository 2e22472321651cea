// IndexingMultiAxisVec, IndexingSetMultiAxisVec, IndexingIncrMultiAxisVec and Scatter on the CUDA
// handle against naive: every dtype, adjacent and apart axes, broadcast and negative indices,
// repeated indices (the last write wins, every increment adds), strided inputs and padded
// outputs, empty results, and a bad index as naive's IndexError with nothing written. Increments
// use small integers, exact in every dtype, so the atomics' order cannot change the sums.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/indexing.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const DType kAll[] = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                      dtype::Uint8,   dtype::Int16,   dtype::Int32,    dtype::Bool};

std::vector<double> small_ints(const TensorShape& s, uint32_t seed, bool is_bool) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> dist(is_bool ? 0 : -4, is_bool ? 1 : 4);
    std::vector<double> v(s.total_nr_elems());
    for (auto& x : v)
        x = dist(rng);
    return v;
}

struct MultiCase {
    TensorShape data;
    std::vector<int32_t> axes;
    std::vector<TensorShape> indices;
    TensorShape result;
};

// result: data[indices]'s shape (NumPy's rule, worked out by hand).
const MultiCase kCases[] = {
        {{5, 6, 7}, {1}, {{4}}, {5, 4, 7}},
        {{5, 6, 7}, {0, 2}, {{3, 1}, {4}}, {3, 4, 6}},
        {{5, 6, 7}, {1, 2}, {{2, 3}, {3}}, {5, 2, 3}},
        {{4, 5, 3, 2}, {-1, 1}, {{6}, {6}}, {6, 4, 3}},
        {{9}, {0}, {{40}}, {40}},
        {{3, 4}, {0, 1}, {{}, {}}, {}},
        {{3, 4, 5}, {2}, {{2, 0}}, {3, 4, 2, 0}},
        {{1, 300, 1}, {1}, {{1000}}, {1, 1000, 1}},
};

size_t axis_size(const MultiCase& c, size_t k) {
    int32_t a = c.axes[k];
    return c.data[static_cast<size_t>(a < 0 ? a + static_cast<int32_t>(c.data.ndim) : a)];
}

template <class Op>
void check_multi(Handle* h, const MultiCase& c, DType dt, bool assigns) {
    typename Op::Param p;
    p.axes = c.axes;
    CudaChecker<Op> k(h);
    k.set_param(p).set_epsilon(0).expect_kernel("cuda").set_dtype(0, dt);
    size_t first = assigns ? 2 : 1;
    std::vector<TensorShape> shapes{c.data};
    if (assigns) {
        // The value broadcasts along the result's first axis.
        TensorShape v = c.result;
        if (v.ndim)
            v[0] = 1;
        shapes.push_back(v);
        k.set_dtype(1, dt).set_values(0, small_ints(c.data, 1, dt.is_bool()));
        k.set_values(1, small_ints(v, 2, dt.is_bool()));
    }
    for (size_t i = 0; i < c.indices.size(); ++i) {
        auto n = static_cast<double>(axis_size(c, i));
        k.set_dtype(first + i, dtype::Int32).set_range(first + i, -n, n);
        shapes.push_back(c.indices[i]);
    }
    k.execs(shapes);
    k.set_noncontiguous(true).execs(shapes);
}

param::Scatter scatter(int32_t axis, param::Scatter::Mode mode) {
    param::Scatter p;
    p.axis = axis;
    p.mode = mode;
    return p;
}

}  // namespace

TEST_F(Cuda, IndexingMultiAxisVecEveryDtype) {
    for (DType dt : kAll)
        for (const MultiCase& c : kCases) {
            check_multi<IndexingMultiAxisVec>(handle.get(), c, dt, false);
            check_multi<IndexingSetMultiAxisVec>(handle.get(), c, dt, true);
            if (!dt.is_bool())
                check_multi<IndexingIncrMultiAxisVec>(handle.get(), c, dt, true);
        }
}

TEST_F(Cuda, ScatterEveryModeAndDtype) {
    struct Case {
        TensorShape data, index;
    };
    // index longer than data along the axis repeats indices; shorter elsewhere leaves data alone.
    const Case cases[] = {{{4, 5}, {9, 3}}, {{4, 5, 3}, {2, 5, 3}}, {{7}, {300}}, {{3, 4}, {0, 2}}};
    for (DType dt : kAll)
        for (auto mode : {param::Scatter::Mode::SET, param::Scatter::Mode::ADD}) {
            if (dt.is_bool() && mode == param::Scatter::Mode::ADD)
                continue;
            for (const Case& c : cases)
                for (int32_t axis = -1; axis < static_cast<int32_t>(c.data.ndim); ++axis) {
                    size_t ax = static_cast<size_t>(axis < 0 ? axis + c.data.ndim : axis);
                    TensorShape ishape = c.index;
                    for (size_t d = 0; d < ishape.ndim; ++d)
                        if (d != ax)
                            ishape[d] = std::min(ishape[d], c.data[d]);
                    CudaChecker<Scatter> k(handle.get());
                    k.set_param(scatter(axis, mode)).set_epsilon(0).expect_kernel("cuda");
                    k.set_dtype(0, dt).set_dtype(2, dt).set_dtype(1, dtype::Int32);
                    k.set_values(0, small_ints(c.data, 3, dt.is_bool()));
                    k.set_values(2, small_ints(ishape, 4, dt.is_bool()));
                    k.set_range(1, 0, static_cast<double>(c.data[ax]));
                    k.execs({c.data, ishape, ishape});
                    k.set_noncontiguous(true).execs({c.data, ishape, ishape});
                }
        }
    // The gradient rules' zeros as one broadcast element: data (ADD, Gather's gradient) or src
    // (SET, Scatter's).
    for (auto mode : {param::Scatter::Mode::SET, param::Scatter::Mode::ADD}) {
        CudaChecker<Scatter> k(handle.get());
        k.set_param(scatter(0, mode)).set_epsilon(0).expect_kernel("cuda");
        k.set_dtype(1, dtype::Int32).set_range(1, 0, 4);
        TensorLayout index({9, 3}, dtype::Int32);
        k.set_values(0, std::vector<double>(20, 0.0)).set_values(2, small_ints({9, 3}, 4, false));
        k.exec_layouts({TensorLayout({4, 5}, {0, 0}, dtype::Float32), index,
                        TensorLayout({9, 3}, dtype::Float32)});
        k.set_values(0, small_ints({4, 5}, 3, false)).set_values(2, std::vector<double>(27, 0.0));
        k.exec_layouts({TensorLayout({4, 5}, dtype::Float32), index,
                        TensorLayout({9, 3}, {0, 0}, dtype::Float32)});
    }
}

TEST_F(Cuda, IndexingBadIndexIsNaivesErrorAndWritesNothing) {
    // data (2, 3) updated in place: the second index tensor's 3 is outside axis 1.
    HostTensor data = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    HostTensor value = HostTensor::from({1}, {9});
    HostTensor i0 = HostTensor::from({2}, {0, -1}, dtype::Int32);
    HostTensor i1 = HostTensor::from({2}, {2, 3}, dtype::Int32);
    param::IndexingMultiAxis p;
    p.axes = {0, 1};
    auto naive = Handle::make_naive()->create_operator<IndexingSetMultiAxisVec>();
    naive->param() = p;
    std::string want;
    try {
        run_op(*naive, {data, value, i0, i1});
    } catch (const IndexError& e) {
        want = e.what();
    }
    ASSERT_FALSE(want.empty());
    auto op = handle->create_operator<IndexingSetMultiAxisVec>();
    op->param() = p;
    DeviceTensor dd = DeviceTensor::from(data), dv = DeviceTensor::from(value),
                 d0 = DeviceTensor::from(i0), d1 = DeviceTensor::from(i1);
    std::vector<TensorND> in{dd.nd(), dv.nd(), d0.nd(), d1.nd()}, out{dd.nd()};
    std::vector<TensorLayout> in_layouts{dd.nd().layout, dv.nd().layout, d0.nd().layout,
                                         d1.nd().layout},
            out_layouts{dd.nd().layout};
    size_t ws = op->get_workspace_in_bytes(in_layouts, out_layouts);
    DeviceTensor w(TensorLayout({ws}, dtype::Uint8));
    try {
        op->exec(in, out, {static_cast<std::byte*>(w.nd().raw_ptr()), ws});
        FAIL() << "expected IndexError";
    } catch (const IndexError& e) {
        EXPECT_EQ(std::string(e.what()), want);
    }
    EXPECT_EQ(dd.to_host().values(), data.values());

    auto sc = handle->create_operator<Scatter>();
    sc->param() = scatter(0, param::Scatter::Mode::ADD);
    HostTensor bad = HostTensor::from({1, 2}, {1, -1}, dtype::Int32);
    HostTensor src = HostTensor::from({1, 2}, {7, 8});
    DeviceTensor db = DeviceTensor::from(bad), ds = DeviceTensor::from(src);
    std::vector<TensorND> sin{dd.nd(), db.nd(), ds.nd()};
    EXPECT_THROW(sc->exec(sin, out), IndexError);
    EXPECT_EQ(dd.to_host().values(), data.values());
}

TEST_F(Cuda, ScatterInPlace) {
    HostTensor data = HostTensor::from({3, 2}, {1, 2, 3, 4, 5, 6});
    HostTensor index = HostTensor::from({2, 2}, {2, 0, 2, 0}, dtype::Int32);
    HostTensor src = HostTensor::from({2, 2}, {10, 20, 30, 40});
    DeviceTensor dd = DeviceTensor::from(data), di = DeviceTensor::from(index),
                 ds = DeviceTensor::from(src);
    auto op = handle->create_operator<Scatter>();
    op->param() = scatter(0, param::Scatter::Mode::ADD);
    std::vector<TensorND> in{dd.nd(), di.nd(), ds.nd()}, out{dd.nd()};
    op->exec(in, out);
    EXPECT_EQ(last_kernel(*op), "cuda");
    // Column 0 adds 10 + 30 to row 2, column 1 adds 20 + 40 to row 0.
    EXPECT_EQ(dd.to_host().values(), (std::vector<double>{1, 62, 3, 4, 45, 6}));
}
