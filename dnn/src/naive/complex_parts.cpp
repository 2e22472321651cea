// Naive CreateComplex and ComplexPart: one walk over dst's indices, reading each element as
// std::complex<float> (complex64's bytes) or float through its own strides.
#include "neomeg/dnn/operators/elemwise.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

class CreateComplexImpl final : public CreateComplex {
public:
    using CreateComplex::CreateComplex;

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND& dst = outputs[0];
        TensorLayout re = inputs[0].layout.broadcast(dst.layout),
                     im = inputs[1].layout.broadcast(dst.layout);
        for_each_index(dst.layout, [&](const auto& idx) {
            elem<dt_complex64>(dst, offset_of(dst.layout, idx.data())) = {
                    elem<float>(inputs[0], offset_of(re, idx.data())),
                    elem<float>(inputs[1], offset_of(im, idx.data()))};
        });
    }
};

class ComplexPartImpl final : public ComplexPart {
public:
    using ComplexPart::ComplexPart;

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        const bool real = m_param.part == Param::Part::REAL;
        for_each_index(dst.layout, [&](const auto& idx) {
            dt_complex64 z = elem<dt_complex64>(src, offset_of(src.layout, idx.data()));
            elem<float>(dst, offset_of(dst.layout, idx.data())) = real ? z.real() : z.imag();
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(CreateComplex, CreateComplexImpl);
NM_REGISTER_NAIVE(ComplexPart, ComplexPartImpl);
}  // namespace neomeg::dnn::naive
