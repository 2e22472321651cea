// The index arithmetic of the CUDA indexing kernels, on the CPU: the walk that
// src/cuda/indexed_args.h builds for IndexingMultiAxisVec (and its Set and Incr forms) and
// Scatter is run here on host tensors, one position at a time as each device thread runs it,
// and compared with naive. Set's election runs its writes in reverse order, so only the election,
// not the loop order, can make the last write win. Needs no GPU.
#include <algorithm>
#include <cstring>

#include "common/host_tensor.h"
#include "neomeg/dnn/operators/indexing.h"
#include "src/common/dtype_dispatch.h"
#include "src/cuda/indexed_args.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using neomeg::dnn::cuda::kern::IndexedArgs;
using neomeg::dnn::cuda::kern::IndexedMode;

namespace {

void move_elem(void* dst, int64_t d, const void* src, int64_t s, int size) {
    std::memcpy(static_cast<std::byte*>(dst) + d * size,
                static_cast<const std::byte*>(src) + s * size, static_cast<size_t>(size));
}

// What indexed.cu's kernels do, one walk position after another.
void run_walk(const IndexedArgs& a, DType dt) {
    using cuda::kern::indexed_target;
    if (a.mode == IndexedMode::Gather) {
        for (int64_t j = 0; j < a.n; ++j) {
            auto t = indexed_target(a, a.shape, j);
            move_elem(a.plain, t.plain, a.indexed, t.indexed, a.elem_size);
        }
    } else if (a.mode == IndexedMode::Set) {
        std::vector<uint32_t> winner(static_cast<size_t>(a.nr_keys), 0);
        for (int64_t j = 0; j < a.elect_n; ++j) {
            auto t = indexed_target(a, a.elect_shape, j);
            ASSERT_GE(t.key, 0);
            ASSERT_LT(t.key, a.nr_keys);
            auto& w = winner[static_cast<size_t>(t.key)];
            w = std::max(w, static_cast<uint32_t>(t.rank + 1));
        }
        for (int64_t j = a.n; j-- > 0;) {
            auto t = indexed_target(a, a.shape, j);
            if (winner[static_cast<size_t>(t.key)] == static_cast<uint32_t>(t.rank + 1))
                move_elem(a.indexed, t.indexed, a.plain, t.plain, a.elem_size);
        }
    } else {
        dispatch_numeric(dt, "walk", [&](auto tag) {
            using T = typename decltype(tag)::type;
            using C = compute_type_t<T>;
            for (int64_t j = 0; j < a.n; ++j) {
                auto t = indexed_target(a, a.shape, j);
                T& d = static_cast<T*>(a.indexed)[t.indexed];
                d = static_cast<T>(static_cast<C>(d) +
                                   static_cast<C>(static_cast<T*>(a.plain)[t.plain]));
            }
        });
    }
}

std::vector<double> small_ints(size_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int> dist(-4, 4);
    std::vector<double> v(n);
    for (auto& x : v)
        x = dist(rng);
    return v;
}

HostTensor random_index(const TensorShape& shape, int lo, int hi, std::mt19937& rng,
                        bool padded = false) {
    TensorLayout l(shape, dtype::Int32);
    HostTensor t(padded ? padded_layout(l) : l);
    std::uniform_int_distribution<int> dist(lo, hi - 1);
    std::vector<double> v(shape.total_nr_elems());
    for (auto& x : v)
        x = dist(rng);
    t.set_values(v);
    return t;
}

// dst laid out as `layout` holding data's values.
HostTensor copy_into(const HostTensor& data, const TensorLayout& layout) {
    HostTensor t(layout);
    t.set_values(data.values());
    return t;
}

struct MultiCase {
    TensorShape data;
    std::vector<int32_t> axes;
    std::vector<TensorShape> indices;
};

const MultiCase kMultiCases[] = {
        {{5, 6, 7}, {1}, {{4}}},              // one axis, block in place
        {{5, 6, 7}, {0, 2}, {{3, 1}, {4}}},   // apart: the block goes in front
        {{5, 6, 7}, {1, 2}, {{2, 3}, {3}}},   // adjacent, broadcast indices
        {{4, 5, 3, 2}, {-1, 1}, {{6}, {6}}},  // negative axis, apart
        {{9}, {0}, {{20}}},                   // many repeats
        {{3, 4}, {0, 1}, {{}, {}}},           // 0-d indices: one element
        {{3, 4, 5}, {2}, {{2, 0}}},           // empty result
        {{2, 3, 2, 3}, {0, 1, 2, 3}, {{5}, {5}, {1}, {5}}},
};

template <class Op>
Op& with_axes(std::unique_ptr<Op>& op, const std::vector<int32_t>& axes) {
    op->param().axes = axes;
    return *op;
}

}  // namespace

TEST(CudaIndexedWalk, MultiAxisGatherMatchesNaive) {
    auto naive = Handle::make_naive();
    std::mt19937 rng(7);
    for (const MultiCase& c : kMultiCases)
        for (bool padded : {false, true}) {
            TensorLayout dl(c.data, dtype::Float32);
            HostTensor src(padded ? padded_layout(dl) : dl);
            fill_uniform(src, -1, 1, rng);
            std::vector<HostTensor> inputs{src};
            std::vector<TensorND> index_nds;
            for (size_t k = 0; k < c.indices.size(); ++k) {
                auto size = static_cast<int>(
                        c.data[c.axes[k] < 0 ? c.data.ndim + c.axes[k] : c.axes[k]]);
                inputs.push_back(random_index(c.indices[k], -size, size, rng, padded));
                index_nds.push_back(inputs.back().nd());
            }
            auto op = naive->create_operator<IndexingMultiAxisVec>();
            auto want = run_op(with_axes(op, c.axes), inputs)[0];
            HostTensor got(padded ? padded_layout(want.layout()) : want.layout());
            auto a = cuda::multi_axis_args(IndexedMode::Gather, src.nd(), index_nds, got.nd(),
                                           c.axes, "test");
            EXPECT_EQ(a.n, static_cast<int64_t>(want.layout().total_nr_elems()));
            run_walk(a, dtype::Float32);
            EXPECT_TRUE(tensors_near(got, want, 0)) << src.layout().to_string();
        }
}

TEST(CudaIndexedWalk, MultiAxisSetAndIncrMatchNaive) {
    auto naive = Handle::make_naive();
    std::mt19937 rng(11);
    for (const MultiCase& c : kMultiCases)
        for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Int32})
            for (bool padded : {false, true})
                for (bool incr : {false, true}) {
                    TensorLayout dl(c.data, dt);
                    HostTensor data(dl);
                    data.set_values(small_ints(dl.total_nr_elems(), rng));
                    std::vector<HostTensor> indices;
                    std::vector<TensorND> index_nds;
                    std::vector<TensorShape> shapes;
                    for (size_t k = 0; k < c.indices.size(); ++k) {
                        auto size = static_cast<int>(
                                c.data[c.axes[k] < 0 ? c.data.ndim + c.axes[k] : c.axes[k]]);
                        indices.push_back(random_index(c.indices[k], -size, size, rng, padded));
                        index_nds.push_back(indices.back().nd());
                    }
                    // The value broadcasts along its leading axis: shape (1, rest...).
                    auto gather = naive->create_operator<IndexingMultiAxisVec>();
                    std::vector<HostTensor> gin{data};
                    gin.insert(gin.end(), indices.begin(), indices.end());
                    TensorShape vshape = run_op(with_axes(gather, c.axes), gin)[0].shape();
                    if (vshape.ndim > 0)
                        vshape[0] = 1;
                    HostTensor value(vshape, dt);
                    value.set_values(small_ints(vshape.total_nr_elems(), rng));

                    std::vector<HostTensor> in{data, value};
                    in.insert(in.end(), indices.begin(), indices.end());
                    HostTensor want;
                    if (incr) {
                        auto op = naive->create_operator<IndexingIncrMultiAxisVec>();
                        want = run_op(with_axes(op, c.axes), in)[0];
                    } else {
                        auto op = naive->create_operator<IndexingSetMultiAxisVec>();
                        want = run_op(with_axes(op, c.axes), in)[0];
                    }
                    HostTensor got = copy_into(data, padded ? padded_layout(dl) : dl);
                    auto a = cuda::multi_axis_args(incr ? IndexedMode::Add : IndexedMode::Set,
                                                   got.nd(), index_nds, value.nd(), c.axes, "test");
                    EXPECT_EQ(static_cast<size_t>(a.nr_keys),
                              cuda::multi_axis_keys(dl, c.axes, "test"));
                    run_walk(a, dt);
                    EXPECT_TRUE(tensors_near(got, want, 0))
                            << (incr ? "incr " : "set ") << dl.to_string();
                }
}

TEST(CudaIndexedWalk, ScatterMatchesNaive) {
    auto naive = Handle::make_naive();
    std::mt19937 rng(13);
    struct Case {
        TensorShape data, index;
    };
    const Case cases[] = {{{4, 5}, {6, 3}}, {{4, 5, 3}, {2, 5, 3}}, {{7}, {12}}, {{3, 4}, {0, 2}}};
    for (const Case& c : cases)
        for (int32_t axis = -1; axis < static_cast<int32_t>(c.data.ndim); ++axis)
            for (DType dt : {dtype::Float32, dtype::BFloat16, dtype::Uint8, dtype::Int16})
                for (bool padded : {false, true})
                    for (auto mode : {param::Scatter::Mode::SET, param::Scatter::Mode::ADD}) {
                        size_t ax = static_cast<size_t>(axis < 0 ? axis + c.data.ndim : axis);
                        // index may be longer than data along the axis only.
                        TensorShape ishape = c.index;
                        for (size_t d = 0; d < ishape.ndim; ++d)
                            if (d != ax)
                                ishape[d] = std::min(ishape[d], c.data[d]);
                        TensorLayout dl(c.data, dt);
                        HostTensor data(dl), src(TensorLayout(ishape, dt));
                        data.set_values(small_ints(dl.total_nr_elems(), rng));
                        src.set_values(small_ints(ishape.total_nr_elems(), rng));
                        HostTensor index =
                                random_index(ishape, 0, static_cast<int>(c.data[ax]), rng, padded);
                        auto op = naive->create_operator<Scatter>();
                        op->param().axis = axis;
                        op->param().mode = mode;
                        auto want = run_op(*op, {data, index, src})[0];
                        HostTensor got = copy_into(data, padded ? padded_layout(dl) : dl);
                        bool set = mode == param::Scatter::Mode::SET;
                        auto a = cuda::scatter_args(set ? IndexedMode::Set : IndexedMode::Add,
                                                    got.nd(), index.nd(), src.nd(), ax);
                        EXPECT_EQ(static_cast<size_t>(a.nr_keys),
                                  cuda::scatter_keys(dl, TensorLayout(ishape, dt), ax));
                        run_walk(a, dt);
                        EXPECT_TRUE(tensors_near(got, want, 0))
                                << (set ? "set " : "add ") << dl.to_string() << " axis " << axis;
                    }
}
