// Raw oneDNN primitives on the shapes of issue 12's per-op benchmark, one source for oneDNN 2.x
// and 3.x (onednn_shim.h holds the API difference), to decide which version the x86 backend
// builds on:
//
//   bash dnn/bench/onednn_versions.sh [rounds]      # builds against both, runs 1 and 2 threads
//   OMP_NUM_THREADS=2 <binary> [repeat=10] [filter]
//   <binary> list                                    # the case names, one a line
//
// Every primitive runs on the layouts it prefers (format_tag::any: oneDNN's blocked formats),
// with no reorders: the kernels' own speed. Per case it prints the best and the median of
// `repeat` timed calls after two warm-ups, the least process CPU time of a call (on a machine
// shared with other work, wall time swings with descheduling while one thread's CPU time barely
// does; with two threads it includes OpenMP's spinning at barriers), and the implementation
// oneDNN chose. A `filter` runs
// the case of that name, or, when no case has it, every case whose name contains it.
#include <oneapi/dnnl/dnnl.hpp>

#include <time.h>
#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "onednn_shim.h"

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DT = memory::data_type;
namespace shim = onednn_shim;

int g_repeat = 10;
const char* g_filter = "";

// Fills a memory with values in [0.5, 1.5): valid as data, weights, means and variances alike.
void fill(memory& m) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0.5f, 1.5f);
    size_t bytes = m.get_desc().get_size();
    auto* p = static_cast<unsigned char*>(m.get_data_handle());
    if (shim::data_type_of(m.get_desc()) == DT::f32) {
        auto* f = reinterpret_cast<float*>(p);
        for (size_t i = 0; i < bytes / sizeof(float); ++i)
            f[i] = u(rng);
        return;
    }
    // bfloat16: the upper half of a float32.
    auto* h = reinterpret_cast<uint16_t*>(p);
    for (size_t i = 0; i < bytes / 2; ++i) {
        float v = u(rng);
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        h[i] = static_cast<uint16_t>(bits >> 16);
    }
}

double cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct Case {
    std::string name;
    dnnl::primitive prim;
    std::string impl;
    // argument id -> descriptor; every argument gets a buffer of its own.
    std::vector<std::pair<int, memory::desc>> args;
};

void run_case(const dnnl::engine& eng, dnnl::stream& s, const Case& c) {
    std::unordered_map<int, memory> args;
    for (const auto& [id, md] : c.args) {
        if (md.get_size() == 0)
            continue;
        memory m(md, eng);
        fill(m);
        args[id] = m;
    }
    auto once = [&] {
        c.prim.execute(s, args);
        s.wait();
    };
    once();
    once();
    std::vector<double> t;
    double cpu = 1e30;
    for (int i = 0; i < g_repeat; ++i) {
        double c0 = cpu_seconds();
        auto t0 = std::chrono::steady_clock::now();
        once();
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        cpu = std::min(cpu, cpu_seconds() - c0);
    }
    std::sort(t.begin(), t.end());
    std::printf("%-36s best %9.3f ms  median %9.3f ms  cpu %9.3f ms  %s\n", c.name.c_str(),
                t.front() * 1e3, t[t.size() / 2] * 1e3, cpu * 1e3, c.impl.c_str());
    std::fflush(stdout);
}

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return a;
}

memory::desc any(const memory::dims& d, DT dt = DT::f32) {
    return {d, dt, Tag::any};
}

// Forward (training), backward data and backward weights of one convolution.
std::vector<Case> conv_cases(const dnnl::engine& eng, const std::string& name, memory::dim n,
                             memory::dim ic, memory::dim oc, memory::dim hw, memory::dim k,
                             memory::dim group, DT dt = DT::f32, bool backward = true) {
    memory::dims src{n, ic, hw, hw}, dst{n, oc, hw, hw};
    memory::dims wd = group == 1 ? memory::dims{oc, ic, k, k}
                                 : memory::dims{group, oc / group, ic / group, k, k};
    shim::ConvGeom g{{1, 1}, {0, 0}, {k / 2, k / 2}};
    auto attr = user_scratchpad();
    auto fpd = shim::conv_fwd(eng, dnnl::prop_kind::forward_training, any(src, dt), any(wd, dt),
                              any(dst, dt), g, attr);
    std::vector<Case> cases;
    cases.push_back({name + " fwd",
                     dnnl::convolution_forward(fpd),
                     fpd.impl_info_str(),
                     {{DNNL_ARG_SRC, fpd.src_desc()},
                      {DNNL_ARG_WEIGHTS, fpd.weights_desc()},
                      {DNNL_ARG_DST, fpd.dst_desc()},
                      {DNNL_ARG_SCRATCHPAD, fpd.scratchpad_desc()}}});
    if (!backward)
        return cases;
    auto bpd = shim::conv_bwd_data(eng, any(src, dt), any(wd, dt), any(dst, dt), g, fpd, attr);
    cases.push_back({name + " bwd data",
                     dnnl::convolution_backward_data(bpd),
                     bpd.impl_info_str(),
                     {{DNNL_ARG_WEIGHTS, bpd.weights_desc()},
                      {DNNL_ARG_DIFF_DST, bpd.diff_dst_desc()},
                      {DNNL_ARG_DIFF_SRC, bpd.diff_src_desc()},
                      {DNNL_ARG_SCRATCHPAD, bpd.scratchpad_desc()}}});
    auto wpd = shim::conv_bwd_weights(eng, any(src, dt), any(wd, dt), any(dst, dt), g, fpd, attr);
    cases.push_back({name + " bwd weights",
                     dnnl::convolution_backward_weights(wpd),
                     wpd.impl_info_str(),
                     {{DNNL_ARG_SRC, wpd.src_desc()},
                      {DNNL_ARG_DIFF_DST, wpd.diff_dst_desc()},
                      {DNNL_ARG_DIFF_WEIGHTS, wpd.diff_weights_desc()},
                      {DNNL_ARG_SCRATCHPAD, wpd.scratchpad_desc()}}});
    return cases;
}

Case matmul_case(const dnnl::engine& eng, memory::dim n, DT dt = DT::f32) {
    memory::desc a({n, n}, dt, Tag::ab);
    auto pd = shim::matmul(eng, a, a, a, user_scratchpad());
    return {std::string("matmul ") + std::to_string(n) + (dt == DT::bf16 ? " bf16" : ""),
            dnnl::matmul(pd),
            pd.impl_info_str(),
            {{DNNL_ARG_SRC, pd.src_desc()},
             {DNNL_ARG_WEIGHTS, pd.weights_desc()},
             {DNNL_ARG_DST, pd.dst_desc()},
             {DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc()}}};
}

// Max pooling 2x2 stride 2, forward (training: it keeps the indices) and backward, on a plain
// (nchw) or blocked (nChw16c) tensor.
std::vector<Case> pool_cases(const dnnl::engine& eng, Tag tag, const char* tag_name) {
    memory::dims src{32, 64, 56, 56}, dst{32, 64, 28, 28};
    shim::PoolGeom g{{2, 2}, {2, 2}, {0, 0}};
    memory::desc s(src, DT::f32, tag), d(dst, DT::f32, tag);
    auto attr = user_scratchpad();
    auto fpd = shim::pool_fwd(eng, dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max,
                              s, d, g, attr);
    auto bpd = shim::pool_bwd(eng, dnnl::algorithm::pooling_max, s, d, g, fpd, attr);
    std::string name = std::string("max pool 2x2 32x64x56x56 ") + tag_name;
    return {{name + " fwd",
             dnnl::pooling_forward(fpd),
             fpd.impl_info_str(),
             {{DNNL_ARG_SRC, fpd.src_desc()},
              {DNNL_ARG_DST, fpd.dst_desc()},
              {DNNL_ARG_WORKSPACE, fpd.workspace_desc()},
              {DNNL_ARG_SCRATCHPAD, fpd.scratchpad_desc()}}},
            {name + " bwd",
             dnnl::pooling_backward(bpd),
             bpd.impl_info_str(),
             {{DNNL_ARG_DIFF_DST, bpd.diff_dst_desc()},
              {DNNL_ARG_DIFF_SRC, bpd.diff_src_desc()},
              {DNNL_ARG_WORKSPACE, fpd.workspace_desc()},
              {DNNL_ARG_SCRATCHPAD, bpd.scratchpad_desc()}}}};
}

// Batch normalisation with scale and shift, training forward (statistics computed) and backward.
std::vector<Case> bnorm_cases(const dnnl::engine& eng, Tag tag, const char* tag_name) {
    memory::desc src({32, 64, 56, 56}, DT::f32, tag);
    auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    auto attr = user_scratchpad();
    auto fpd = shim::bnorm_fwd(eng, dnnl::prop_kind::forward_training, src, 1e-5f, flags, attr);
    auto hint = shim::bnorm_fwd(eng, dnnl::prop_kind::forward_training, src, 1e-5f,
                                shim::bnorm_bwd_flags(), attr);
    auto bpd = shim::bnorm_bwd(eng, src, 1e-5f, shim::bnorm_bwd_flags(), hint, attr);
    memory::desc vec({64}, DT::f32, Tag::a);
    std::string name = std::string("batch norm 32x64x56x56 ") + tag_name;
    Case bwd{name + " bwd",
             dnnl::batch_normalization_backward(bpd),
             bpd.impl_info_str(),
             {{DNNL_ARG_SRC, bpd.src_desc()},
              {DNNL_ARG_DIFF_DST, bpd.diff_dst_desc()},
              {DNNL_ARG_MEAN, bpd.mean_desc()},
              {DNNL_ARG_VARIANCE, bpd.variance_desc()},
              {DNNL_ARG_DIFF_SRC, bpd.diff_src_desc()},
              {DNNL_ARG_WORKSPACE, hint.workspace_desc()},
              {DNNL_ARG_SCRATCHPAD, bpd.scratchpad_desc()}}};
    for (const auto& arg : shim::bnorm_bwd_scale_args(64))
        bwd.args.push_back(arg);
    return {{name + " fwd",
             dnnl::batch_normalization_forward(fpd),
             fpd.impl_info_str(),
             {{DNNL_ARG_SRC, fpd.src_desc()},
              {DNNL_ARG_DST, fpd.dst_desc()},
              {DNNL_ARG_SCALE, vec},
              {DNNL_ARG_SHIFT, vec},
              {DNNL_ARG_MEAN, fpd.mean_desc()},
              {DNNL_ARG_VARIANCE, fpd.variance_desc()},
              {DNNL_ARG_WORKSPACE, fpd.workspace_desc()},
              {DNNL_ARG_SCRATCHPAD, fpd.scratchpad_desc()}}},
            bwd};
}

}  // namespace

int main(int argc, char** argv) {
    bool list = argc > 1 && std::string(argv[1]) == "list";
    if (argc > 1 && !list)
        g_repeat = std::max(1, std::atoi(argv[1]));
    if (argc > 2)
        g_filter = argv[2];
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    const char* threads = std::getenv("OMP_NUM_THREADS");
    if (!list)
        std::printf("oneDNN %d.%d.%d (%s API), OMP_NUM_THREADS=%s, %d timed calls per case\n",
                    dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
                    shim::kV3 ? "v3" : "v2", threads ? threads : "(all)", g_repeat);
    std::vector<std::function<std::vector<Case>()>> groups{
            [&] { return conv_cases(eng, "conv 3x3 64->64 56x56 b32", 32, 64, 64, 56, 3, 1); },
            [&] { return conv_cases(eng, "conv 1x1 64->256 56x56 b32", 32, 64, 256, 56, 1, 1); },
            [&] { return conv_cases(eng, "depthwise 3x3 64 56x56 b32", 32, 64, 64, 56, 3, 64); },
            [&] {
                return std::vector<Case>{matmul_case(eng, 256), matmul_case(eng, 1024),
                                         matmul_case(eng, 2048)};
            },
            [&] { return pool_cases(eng, Tag::nchw, "nchw"); },
            [&] { return pool_cases(eng, Tag::nChw16c, "nChw16c"); },
            [&] { return bnorm_cases(eng, Tag::nchw, "nchw"); },
            [&] { return bnorm_cases(eng, Tag::nChw16c, "nChw16c"); },
            // bfloat16 (AMX or AVX-512 BF16 where the CPU has them).
            [&] {
                return conv_cases(eng, "conv 3x3 64->64 56x56 b32 bf16", 32, 64, 64, 56, 3, 1,
                                  DT::bf16, false);
            },
            [&] { return std::vector<Case>{matmul_case(eng, 1024, DT::bf16)}; },
    };
    std::vector<Case> cases;
    for (auto& group : groups) {
        try {
            for (Case& c : group())
                cases.push_back(std::move(c));
        } catch (const dnnl::error& e) {
            std::printf("(a group failed to plan: %s)\n", e.what());
        }
    }
    bool exact = false;
    for (const Case& c : cases)
        exact |= c.name == g_filter;
    for (const Case& c : cases) {
        if (list) {
            std::puts(c.name.c_str());
            continue;
        }
        if (exact ? c.name != g_filter : c.name.find(g_filter) == std::string::npos)
            continue;
        try {
            run_case(eng, s, c);
        } catch (const dnnl::error& e) {
            std::printf("%-36s failed: %s\n", c.name.c_str(), e.what());
        }
    }
    return 0;
}
