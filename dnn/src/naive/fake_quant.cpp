// Naive FakeQuant, TQT, LSQ and their backward operators: one walk over src's shape that reads
// each operand through its layout broadcast to that shape (scale may be a scalar or per channel)
// and applies the formulas of src/common/fake_quant_math.h.
#include "neomeg/dnn/operators/quantization.h"
#include "src/common/fake_quant_math.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

namespace fq = fake_quant;

fq::Range range_of(const param::FakeQuant& p) {
    return {static_cast<float>(p.qmin), static_cast<float>(p.qmax)};
}

// Calls f(v, store) for every element of `shape`: v[k] is in[k]'s element there (as float) and
// store(j, value) writes out[j]'s.
template <class F>
void walk(const TensorShape& shape, std::span<const TensorND> in, std::span<const TensorND> out,
          F&& f) {
    std::vector<TensorLayout> il, ol;
    for (const TensorND& t : in)
        il.push_back(t.layout.broadcast(shape));
    for (const TensorND& t : out)
        ol.push_back(t.layout);
    float v[5];
    for_each_index(shape, [&](const auto& idx) {
        for (size_t k = 0; k < in.size(); ++k)
            v[k] = static_cast<float>(load(in[k], offset_of(il[k], idx.data())));
        f(v, [&](size_t j, float value) { store(out[j], offset_of(ol[j], idx.data()), value); });
    });
}

class FakeQuantImpl final : public FakeQuant {
public:
    using FakeQuant::FakeQuant;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        auto r = range_of(m_param);
        walk(in[0].layout, in, out,
             [&](const float* v, auto&& put) { put(0, fq::fake_quant(v[0], v[1], v[2], r)); });
    }
};

class FakeQuantBackwardImpl final : public FakeQuantBackward {
public:
    using FakeQuantBackward::FakeQuantBackward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        auto r = range_of(m_param);
        walk(in[1].layout, in, out, [&](const float* v, auto&& put) {
            put(0, fq::fake_quant_grad(v[0], v[1], v[2], v[3], r));
        });
    }
};

class TQTImpl final : public TQT {
public:
    using TQT::TQT;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        auto r = range_of(m_param);
        walk(in[0].layout, in, out,
             [&](const float* v, auto&& put) { put(0, fq::tqt(v[0], v[1], r)); });
    }
};

class TQTBackwardImpl final : public TQTBackward {
public:
    using TQTBackward::TQTBackward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        auto r = range_of(m_param);
        walk(in[1].layout, in, out, [&](const float* v, auto&& put) {
            fq::Grads g = fq::tqt_grad(v[0], v[1], v[2], r);
            put(0, g.src);
            put(1, g.scale);
        });
    }
};

class LSQImpl final : public LSQ {
public:
    using LSQ::LSQ;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        auto r = range_of(m_param);
        walk(in[0].layout, in, out,
             [&](const float* v, auto&& put) { put(0, fq::lsq(v[0], v[1], v[2], r)); });
    }
};

class LSQBackwardImpl final : public LSQBackward {
public:
    using LSQBackward::LSQBackward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        auto r = range_of(m_param);
        walk(in[1].layout, in, out, [&](const float* v, auto&& put) {
            fq::Grads g = fq::lsq_grad(v[0], v[1], v[2], v[3], v[4], r);
            put(0, g.src);
            put(1, g.scale);
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(FakeQuant, FakeQuantImpl);
NM_REGISTER_NAIVE(FakeQuantBackward, FakeQuantBackwardImpl);
NM_REGISTER_NAIVE(TQT, TQTImpl);
NM_REGISTER_NAIVE(TQTBackward, TQTBackwardImpl);
NM_REGISTER_NAIVE(LSQ, LSQImpl);
NM_REGISTER_NAIVE(LSQBackward, LSQBackwardImpl);
}  // namespace neomeg::dnn::naive
