// Backward rule of MatrixMul: C = op(A) op(B) gives dA and dB as MatrixMuls with the transpose
// flags arranged so that no explicit transpose is materialised.
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/linalg.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

Tensor mm(const Tensor& a, const Tensor& b, bool ta, bool tb, const dnn::param::MatrixMul& base) {
    dnn::param::MatrixMul p = base;
    p.transposeA = ta;
    p.transposeB = tb;
    std::array<Tensor, 2> in{a, b};
    return imperative::apply(*shared_op<ops::MatrixMul>(p), in)[0];
}

std::vector<Tensor> matmul_grad(const OpDef& def, std::span<const Tensor> x,
                                std::span<const Tensor>, std::span<const Tensor> dy,
                                std::span<const bool> needs) {
    const auto& p = static_cast<const ops::MatrixMul&>(def).param();
    const Tensor &a = x[0], &b = x[1], &dc = dy[0];
    std::vector<Tensor> g(2);
    bool ta = p.transposeA, tb = p.transposeB;
    if (needs[0])
        g[0] = ta ? mm(b, dc, tb, true, p) : mm(dc, b, false, !tb, p);
    if (needs[1])
        g[1] = tb ? mm(dc, a, true, ta, p) : mm(a, dc, !ta, false, p);
    return g;
}

}  // namespace

NM_REGISTER_GRAD(MatrixMul, matmul_grad);

}  // namespace neomeg::imperative
