// Naive CheckNonFinite: one pass over every element of every input.
#include <cmath>

#include "neomeg/dnn/operators/random.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

class CheckNonFiniteImpl final : public CheckNonFinite {
public:
    using CheckNonFinite::CheckNonFinite;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        bool found = false;
        for (const TensorND& t : in)
            for_each_offset(t.layout,
                            [&](ptrdiff_t off) { found |= !std::isfinite(load(t, off)); });
        elem<int32_t>(out[0], 0) = found ? 1 : 0;
    }
};

}  // namespace
NM_REGISTER_NAIVE(CheckNonFinite, CheckNonFiniteImpl);
}  // namespace neomeg::dnn::naive
