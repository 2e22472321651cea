// Runs a test body at each Highway instruction set the CPU has, so that one machine checks the
// vector loops of the lower ISAs too (AVX2, the emulation, scalar) and not only its best one.
#pragma once

#ifdef NEOMEG_WITH_DNNL
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include <hwy/targets.h>

namespace neomeg::dnn::test {

// Calls body(target) with Highway's dispatch pinned to each of `targets` the CPU supports, in
// order, and returns how many ran. The CPU's own set comes back afterwards, also when the body
// throws or a fatal assertion returns from it, so later tests dispatch as usual.
template <class Body>
size_t for_each_highway_target(std::initializer_list<int64_t> targets, Body&& body) {
    struct Restore {
        int64_t had = hwy::SupportedTargets();
        ~Restore() { hwy::SetSupportedTargetsForTest(had); }
    } restore;
    size_t ran = 0;
    for (int64_t target : targets) {
        if ((restore.had & target) == 0)
            continue;
        hwy::SetSupportedTargetsForTest(target);
        ++ran;
        body(target);
    }
    return ran;
}

}  // namespace neomeg::dnn::test
#endif
