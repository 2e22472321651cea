// A forked child (a DataLoader worker) runs the x86 kernels after its parent did: GNU OpenMP's
// thread pool does not survive fork, so without the handle's fork handler the child hangs.
#include <sys/wait.h>
#include <unistd.h>

#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/operators/linalg.h"
#include "neomeg/dnn/operators/reduce.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(X86, KernelsRunInAForkedChild) {
    std::mt19937 rng(23);
    HostTensor x({4, 8, 16, 16}, dtype::Float32), w({16, 8, 3, 3}, dtype::Float32);
    HostTensor a({96, 80}, dtype::Float32), b({80, 64}, dtype::Float32);
    for (HostTensor* t : {&x, &w, &a, &b})
        fill_uniform(*t, -1, 1, rng);
    auto conv = handle->create_operator<ConvolutionForward>();
    conv->param() = conv_param({1, 1}, {1, 1}, {1, 1});
    auto mm = handle->create_operator<MatrixMul>();
    // The parent plans and runs both (starting OpenMP's pool) before the fork.
    auto conv_want = run_op(*conv, {x, w})[0];
    auto mm_want = run_op(*mm, {a, b})[0];
    ASSERT_TRUE(ran_onednn(*conv) && ran_onednn(*mm));
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        alarm(30);  // a regression fails the test instead of hanging it
        bool ok = tensors_near(run_op(*conv, {x, w})[0], conv_want, 1e-4) &&
                  tensors_near(run_op(*mm, {a, b})[0], mm_want, 1e-4) && ran_onednn(*conv);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child computed wrong results";
    // The parent keeps its plans and threads.
    EXPECT_TRUE(tensors_near(run_op(*conv, {x, w})[0], conv_want, 1e-4));
}

// The Highway kernels split large tensors over the same OpenMP pool; a child runs them on one
// thread (the fork handler caps OpenMP there), whatever the parent started.
TEST_F(X86, ThreadedElemwiseAndReduceRunInAForkedChild) {
    std::mt19937 rng(29);
    HostTensor a({4, 1 << 16}, dtype::Float32), b({4, 1 << 16}, dtype::Float32);
    fill_uniform(a, -1, 1, rng);
    fill_uniform(b, -1, 1, rng);
    auto add = handle->create_operator<Elemwise>();
    add->param().mode = param::Elemwise::Mode::ADD;
    auto sum = handle->create_operator<Reduce>();
    sum->param().axis = 1;
    // Large enough for several threads in the parent, which starts OpenMP's pool before the fork.
    auto add_want = run_op(*add, {a, b})[0];
    auto sum_want = run_op(*sum, {a})[0];
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        alarm(30);
        bool ok = tensors_near(run_op(*add, {a, b})[0], add_want, 0) &&
                  tensors_near(run_op(*sum, {a})[0], sum_want, 0);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child computed wrong results";
    EXPECT_TRUE(tensors_near(run_op(*add, {a, b})[0], add_want, 0));
}
