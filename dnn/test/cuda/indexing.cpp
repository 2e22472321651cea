// IndexingOneHot, IndexingSetOneHot and Gather on the CUDA handle against naive: every axis,
// every dtype, strided and broadcast inputs and padded outputs, in place, empty tensors, and an
// index outside its axis as the same IndexError as naive's.
#include "neomeg/dnn/operators/indexing.h"
#include "cuda/cuda_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const DType kAll[] = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                      dtype::Uint8,   dtype::Int16,   dtype::Int32,    dtype::Bool};

param::IndexingAxis at(int32_t axis) {
    param::IndexingAxis p;
    p.axis = axis;
    return p;
}

TensorShape without(TensorShape s, size_t axis) {
    for (size_t i = axis; i + 1 < s.ndim; ++i)
        s[i] = s[i + 1];
    --s.ndim;
    return s;
}

TensorShape one_at(TensorShape s, size_t axis) {
    s[axis] = 1;
    return s;
}

}  // namespace

TEST_F(Cuda, IndexingOneHotAndSetOneHot) {
    TensorShape s{4, 7, 5};
    for (DType dt : kAll)
        for (size_t axis = 0; axis < 3; ++axis) {
            CudaChecker<IndexingOneHot> g(handle.get());
            g.set_param(at(static_cast<int32_t>(axis))).set_dtype(0, dt).set_epsilon(0);
            g.set_dtype(1, dtype::Int32).set_range(1, 0, static_cast<double>(s[axis]));
            g.expect_kernel("cuda").execs({s, without(s, axis)});
            g.set_noncontiguous(true).execs({s, without(s, axis)});
            CudaChecker<IndexingSetOneHot> w(handle.get());
            w.set_param(at(static_cast<int32_t>(axis))).set_epsilon(0).expect_kernel("cuda");
            w.set_dtype(0, dt).set_dtype(2, dt).set_dtype(1, dtype::Int32);
            w.set_range(1, 0, static_cast<double>(s[axis]));
            w.execs({s, without(s, axis), one_at(s, axis)});
            w.set_noncontiguous(true).execs({s, without(s, axis), one_at(s, axis)});
        }
    CudaChecker<IndexingOneHot> e(handle.get());
    e.set_param(at(1)).set_dtype(1, dtype::Int32).execs({{0, 3}, {0}});
    // data, or sub, as one broadcast element: the gradient rules' zeros.
    CudaChecker<IndexingSetOneHot> z(handle.get());
    z.set_param(at(1)).set_epsilon(0).expect_kernel("cuda").set_range(1, 0, 7);
    z.exec_layouts({TensorLayout(s, {0, 0, 0}, dtype::Float32),
                    TensorLayout(without(s, 1), dtype::Int32),
                    TensorLayout(one_at(s, 1), dtype::Float32)});
    z.exec_layouts({TensorLayout(s, dtype::Float32), TensorLayout(without(s, 1), dtype::Int32),
                    TensorLayout(one_at(s, 1), {0, 0, 0}, dtype::Float32)});
}

TEST_F(Cuda, GatherEveryAxis) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int32, dtype::Bool})
        for (int32_t axis : {0, 1, -1}) {
            CudaChecker<Gather> c(handle.get());
            c.set_param(at(axis)).set_dtype(0, dt).set_dtype(1, dtype::Int32).set_epsilon(0);
            // index no larger than src off the axis, any length along it.
            std::vector<size_t> index{3, 4, 2};
            index[axis < 0 ? 2 : static_cast<size_t>(axis)] = 9;
            c.set_range(1, 0, 6).expect_kernel("cuda").execs({{6, 6, 6}, TensorShape(index)});
            c.set_noncontiguous(true).execs({{6, 6, 6}, {5, 2, 4}});
        }
}

TEST_F(Cuda, BadIndexIsAnIndexError) {
    auto op = handle->create_operator<IndexingOneHot>();
    op->param() = at(1);
    HostTensor src({2, 3}, dtype::Float32), index = HostTensor::from({2}, {1, 3}, dtype::Int32);
    DeviceTensor ds = DeviceTensor::from(src), di = DeviceTensor::from(index),
                 dd(TensorLayout({2, 1}, dtype::Float32));
    std::vector<TensorND> in{ds.nd(), di.nd()}, out{dd.nd()};
    try {
        op->exec(in, out);
        FAIL() << "expected IndexError";
    } catch (const IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("IndexingOneHot"), std::string::npos) << e.what();
    }
    // The operator works again afterwards.
    HostTensor good = HostTensor::from({2}, {1, 2}, dtype::Int32);
    DeviceTensor dg = DeviceTensor::from(good);
    std::vector<TensorND> in2{ds.nd(), dg.nd()};
    op->exec(in2, out);
}
