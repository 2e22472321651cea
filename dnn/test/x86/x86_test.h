// Shared by the x86 suites: a fixture that skips (saying why) where NeoMeg was built without
// oneDNN, and helpers to run one operator object and ask which kernel it ran.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "common/checker.h"
#include "src/x86/kernel_report.h"

namespace neomeg::dnn::test {

class X86 : public ::testing::Test {
protected:
    void SetUp() override {
        if (!Handle::x86_available())
            GTEST_SKIP() << "NeoMeg was built without oneDNN (NEOMEG_WITH_DNNL=OFF)";
        handle = Handle::make_x86();
    }
    std::unique_ptr<Handle> handle;
};

// "onednn:<impl>" or "naive", from an operator the x86 handle created.
inline std::string last_kernel(const OperatorBase& op) {
    auto* report = dynamic_cast<const x86::KernelReport*>(&op);
    return report ? report->last_kernel() : "no kernel report";
}

inline bool ran_onednn(const OperatorBase& op) {
    return last_kernel(op).starts_with("onednn:");
}

// Runs a fresh operator of the x86 handle on `inputs`, checks it against naive within eps, and
// returns which kernel the x86 operator ran.
template <class Op>
std::string run_and_compare(Handle& handle, const typename Op::Param& p,
                            const std::vector<HostTensor>& inputs,
                            const std::vector<TensorShape>& output_shapes = {}, double eps = 1e-4) {
    auto op = handle.create_operator<Op>();
    op->param() = p;
    auto got = run_op(*op, inputs, output_shapes);
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<Op>();
    ref->param() = p;
    std::vector<HostTensor> dense;
    for (auto& t : inputs)
        dense.push_back(t.contiguous());
    auto want = run_op(*ref, dense, output_shapes);
    EXPECT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size() && i < want.size(); ++i)
        EXPECT_TRUE(tensors_near(got[i], want[i], eps)) << op->param_str() << " output " << i;
    return last_kernel(*op);
}

// Sets the environment variable `name` for a scope (unsets it where `value` is null) and restores
// it after: the x86 switches read at plan time (NEOMEG_CONV_WINOGRAD, ...).
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : m_name(name) {
        if (const char* old = std::getenv(name))
            m_old = old;
        set(value);
    }
    ~ScopedEnv() { set(m_old ? m_old->c_str() : nullptr); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    void set(const char* value) {
        if (value)
            setenv(m_name.c_str(), value, 1);
        else
            unsetenv(m_name.c_str());
    }
    std::string m_name;
    std::optional<std::string> m_old;
};

}  // namespace neomeg::dnn::test
