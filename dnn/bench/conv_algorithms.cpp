// The CIFAR-style ResNet-18's convolutions (batch 32) through raw oneDNN, per algorithm and per
// data layout, in one command:
//
//   OMP_NUM_THREADS=2 build/dnn/neomeg_conv_algorithms [repeat=10] [cpu|wall] [batch=32]
//                                                      [case...] [IC,OC,HW[,K[,STRIDE]]...]
//
// Each further argument keeps only the cases whose name contains it ("3x3 64", "1x1"); an
// argument IC,OC,HW (3x3 stride 1 unless K and STRIDE follow) times that shape instead of the
// ResNet-18 list, to find where one algorithm stops winning (the default choice in
// dnn/src/x86/conv_algo.h was drawn from such runs).
//
// Per shape and pass (forward, backward data, backward weights) it times:
//   * blocked: convolution_direct on nChw16c src/dst (diff_src/diff_dst) and the weights layout
//     oneDNN picks, the layouts the traced graph feeds ConvBiasBlocked and the blocked backward
//     convolutions (dnn/src/x86/conv_*_blocked.cpp);
//   * any: convolution_direct with every layout format_tag::any (oneDNN's own choice);
//   * winograd: convolution_winograd with format_tag::any, where oneDNN has an implementation for
//     the shape (oneDNN 2.6: 3x3, stride 1, on AVX-512; it changes the rounding);
//   * auto: convolution_auto, oneDNN's own pick between the two;
//   * wino-inf: the forward of convolution_winograd for inference (forward_inference), the form a
//     traced graph's constant filter takes, its filter transformed once, outside the timing;
// and, for the weights the traced step keeps plain (OIHW parameters), the reorder from OIHW to the
// blocked primitive's weights layout and the diff-weights reorder back. Each figure is the best of
// `repeat` calls after two warm-ups, in milliseconds, with the implementation's name. `cpu` times
// by the process's CPU time (on a shared machine wall times swing with other work).
#include <oneapi/dnnl/dnnl.hpp>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Tag = memory::format_tag;

namespace {

int g_repeat = 10;
bool g_cpu_time = false;
std::vector<std::string> g_only;

double now_seconds() {
    if (!g_cpu_time)
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
                .count();
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double best_ms(const std::function<void()>& f) {
    f();
    f();
    double best = 1e30;
    for (int i = 0; i < g_repeat; ++i) {
        double t0 = now_seconds();
        f();
        best = std::min(best, now_seconds() - t0);
    }
    return best * 1e3;
}

struct Shape {
    int ic, oc, hw, k, stride, count;  // count: how many of it one ResNet-18 step runs
};

// conv1, then per stage the 3x3 convolutions and the 1x1 stride-2 shortcut.
const std::vector<Shape> kShapes = {
        {3, 64, 32, 3, 1, 1},    {64, 64, 32, 3, 1, 4},   {64, 128, 32, 3, 2, 1},
        {128, 128, 16, 3, 1, 3}, {64, 128, 32, 1, 2, 1},  {128, 256, 16, 3, 2, 1},
        {256, 256, 8, 3, 1, 3},  {128, 256, 16, 1, 2, 1}, {256, 512, 8, 3, 2, 1},
        {512, 512, 4, 3, 1, 3},  {256, 512, 8, 1, 2, 1},
};
int g_batch = 32;

struct Bench {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    std::unordered_map<size_t, memory> scratch;

    memory filled(const memory::desc& md) {
        memory m(md, eng);
        auto* p = static_cast<float*>(m.get_data_handle());
        for (size_t i = 0; i < md.get_size() / sizeof(float); ++i)
            p[i] = float((i * 2654435761u) % 1000) / 1000.f - 0.5f;
        return m;
    }

    // Runs a primitive on freshly allocated memories of the layouts it chose.
    double time_prim(const dnnl::primitive& prim, const dnnl::primitive_desc_base& pd,
                     const std::vector<int>& args) {
        std::unordered_map<int, memory> m;
        for (int a : args)
            m[a] = filled(pd.query_md(dnnl::query::exec_arg_md, a));
        m[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), eng);
        return best_ms([&] {
            prim.execute(strm, m);
            strm.wait();
        });
    }

    double time_reorder(const memory::desc& from, const memory::desc& to) {
        memory a = filled(from), b(to, eng);
        dnnl::reorder r(a, b);
        return best_ms([&] {
            r.execute(strm, a, b);
            strm.wait();
        });
    }
};

struct Descs {
    memory::desc src, wei, dst;
};

Descs descs(const Shape& s, bool blocked) {
    int o = (s.hw + 2 * (s.k / 2) - s.k) / s.stride + 1;
    // oneDNN has no fast kernel for a 3-channel blocked src: the graph reorders it (plain src).
    Tag src_tag = blocked && s.ic % 16 == 0 ? Tag::nChw16c : Tag::any;
    return {memory::desc({g_batch, s.ic, s.hw, s.hw}, memory::data_type::f32, src_tag),
            memory::desc({s.oc, s.ic, s.k, s.k}, memory::data_type::f32, Tag::any),
            memory::desc({g_batch, s.oc, o, o}, memory::data_type::f32,
                         blocked ? Tag::nChw16c : Tag::any)};
}

struct Variant {
    const char* name;
    algorithm alg;
    bool blocked;
};

void run_shape(Bench& b, const Shape& s) {
    const memory::dims st = {s.stride, s.stride}, dil = {0, 0}, pad = {s.k / 2, s.k / 2};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const Variant variants[] = {{"blocked", algorithm::convolution_direct, true},
                                {"any", algorithm::convolution_direct, false},
                                {"winograd", algorithm::convolution_winograd, false},
                                {"wino-blk", algorithm::convolution_winograd, true},
                                {"auto", algorithm::convolution_auto, false}};
    char name[96];
    std::snprintf(name, sizeof name, "%dx%d %d->%d %dx%d s%d (x%d)", s.k, s.k, s.ic, s.oc, s.hw,
                  s.hw, s.stride, s.count);
    std::printf("%s\n", name);
    std::optional<dnnl::convolution_forward::primitive_desc> blocked_fwd;
    for (const Variant& v : variants) {
        Descs d = descs(s, v.blocked);
        dnnl::convolution_forward::primitive_desc fwd;
        try {
            fwd = {{prop_kind::forward_training, v.alg, d.src, d.wei, d.dst, st, dil, pad, pad},
                   attr,
                   b.eng};
        } catch (const dnnl::error&) {
            std::printf("  %-9s no implementation\n", v.name);
            continue;
        }
        if (v.blocked)
            blocked_fwd = fwd;
        double tf = b.time_prim(dnnl::convolution_forward(fwd), fwd,
                                {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST});
        std::printf("  %-9s fwd %7.3f ms %-28s", v.name, tf, fwd.impl_info_str());
        dnnl::convolution_backward_data::primitive_desc bd;
        try {
            bd = {{v.alg, d.src, d.wei, d.dst, st, dil, pad, pad}, attr, b.eng, fwd};
            double t = b.time_prim(dnnl::convolution_backward_data(bd), bd,
                                   {DNNL_ARG_DIFF_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_DST});
            std::printf(" bwd_d %7.3f ms %-28s", t, bd.impl_info_str());
        } catch (const dnnl::error&) {
            std::printf(" bwd_d %-39s", "none");
        }
        try {
            dnnl::convolution_backward_weights::primitive_desc bw(
                    {v.alg, d.src, d.wei, d.dst, st, dil, pad, pad}, attr, b.eng, fwd);
            double t = b.time_prim(dnnl::convolution_backward_weights(bw), bw,
                                   {DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_DST});
            std::printf(" bwd_w %7.3f ms %s\n", t, bw.impl_info_str());
        } catch (const dnnl::error&) {
            std::printf(" bwd_w none\n");
        }
    }
    try {
        Descs d = descs(s, false);
        dnnl::convolution_forward::primitive_desc inf(
                {prop_kind::forward_inference, algorithm::convolution_winograd, d.src, d.wei, d.dst,
                 st, dil, pad, pad},
                attr, b.eng);
        double t = b.time_prim(dnnl::convolution_forward(inf), inf,
                               {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST});
        std::printf("  %-9s fwd %7.3f ms %s\n", "wino-inf", t, inf.impl_info_str());
    } catch (const dnnl::error&) {
        std::printf("  %-9s no implementation\n", "wino-inf");
    }
    if (blocked_fwd) {
        memory::desc plain({s.oc, s.ic, s.k, s.k}, memory::data_type::f32, Tag::oihw);
        std::printf("  weights reorder OIHW->prim %.3f ms, prim->OIHW %.3f ms\n",
                    b.time_reorder(plain, blocked_fwd->weights_desc()),
                    b.time_reorder(blocked_fwd->weights_desc(), plain));
    }
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "cpu")
            g_cpu_time = true;
        else if (a == "wall")
            g_cpu_time = false;
        else if (!a.empty() && std::isdigit(static_cast<unsigned char>(a[0])) &&
                 a.find_first_not_of("0123456789") == std::string::npos)
            g_repeat = std::max(1, std::atoi(a.c_str()));
        else
            g_only.push_back(a);
    }
    Bench b;
    std::vector<Shape> shapes;
    for (auto it = g_only.begin(); it != g_only.end();) {
        if (it->rfind("batch=", 0) == 0) {
            g_batch = std::max(1, std::atoi(it->c_str() + 6));
            it = g_only.erase(it);
        } else if (it->find(',') != std::string::npos) {
            Shape s{0, 0, 0, 3, 1, 1};
            std::sscanf(it->c_str(), "%d,%d,%d,%d,%d", &s.ic, &s.oc, &s.hw, &s.k, &s.stride);
            if (s.ic > 0 && s.oc > 0 && s.hw > 0 && s.k > 0 && s.stride > 0)
                shapes.push_back(s);
            else
                std::fprintf(stderr, "ignored shape %s (IC,OC,HW[,K[,STRIDE]])\n", it->c_str());
            it = g_only.erase(it);
        } else {
            ++it;
        }
    }
    if (shapes.empty())
        shapes = kShapes;
    for (const Shape& s : shapes) {
        char name[64];
        std::snprintf(name, sizeof name, "%dx%d %d->%d", s.k, s.k, s.ic, s.oc);
        bool keep = g_only.empty();
        for (const std::string& w : g_only)
            keep = keep || std::string(name).find(w) != std::string::npos;
        if (keep)
            run_shape(b, s);
    }
}
