// The x86 kernels against the raw oneDNN primitive on the same shapes, in one command:
//
//   OMP_NUM_THREADS=2 build/dnn/neomeg_x86_vs_onednn [repeat=10] [cpu|wall] [case...]
//
// Each further argument keeps only the cases whose name contains it ("depthwise", "matmul 256");
// a convolution's case name is its shape without the pass ("conv 1x1 256->64 56x56 b32", not
// "... fwd" nor "..., blocked"), the name its fwd, bwd data and bwd filter lines share;
// the argument `ours-vs-raw` leaves out the convolutions' plain-NCHW primitive and new-weights
// lines (several rounds of the depthwise cases on a loaded machine, where the plain primitives'
// gemm took most of the run); `unchecked` times our operator's exec_unchecked, the call the eager
// runtime and the graph make (imperative/src/dnn_exec.cpp, src/op/dnn_op_def.cpp: they deduce
// the layouts once themselves), instead of exec, which checks every call's layouts and workspace
// again (deduce_layout and a second plan lookup: up to 0.03 of the ratio on the batch-1 depthwise
// lines, about 0.5 us of a 15-us call).
//
// `cpu` times each call by the process's CPU time instead of the wall clock: on a machine shared
// with other work a descheduled thread inflates wall times several-fold while one thread's CPU
// time barely moves (with two threads it includes OpenMP's spinning at barriers).
//
// Per case it prints our operator's time (the x86 handle's kernel, NCHW tensors in and out) and
// two oneDNN figures: the primitive alone on its preferred (possibly blocked) layouts, what a
// framework that keeps oneDNN's layouts between ops pays, and the primitive with the reorders from
// and to NCHW that a caller holding plain tensors needs, which is the work our kernel does. The
// ratios are oneDNN's time over ours (1.0: as fast; the target is >= 0.95). Our inputs carry a
// storage identity, as the runtime's tensors do, so a filter that keeps its value is reordered once
// (the weight cache); the convolutions that read a filter are also timed with a filter that is new
// on every call ("new weights": a training step), which reorders it each time. Each figure is the
// best of `repeat` calls after two warm-ups, ours and the oneDNN figures it is held against taking
// turns (best_seconds_taking_turns), on buffers placed as the host allocator places tensors
// (AlignedOf); on a shared machine timings still swing, so run it twice.
//
// A convolution's raw primitive runs the algorithm our kernel's default rule picks for the case
// and pass (x86::default_conv_algorithm: Winograd for some 3x3 stride-1 shapes, direct elsewhere,
// direct where oneDNN has no Winograd kernel or NEOMEG_CONV_WINOGRAD=0), so the two compute the
// same thing; each line names the implementation both ran. The "nchw" lines are oneDNN's direct
// kernels on plain tensors (Winograd reads blocked layouts only). The ", blocked" lines run our
// blocked twins (ConvBiasBlocked, ConvolutionBackwardData/FilterBlocked) on ChannelBlock's layout
// of the handle's preferred block, as traced graphs and eager mode keep activations between ops:
// compare them with the "onednn" column, the primitive alone.
#include <oneapi/dnnl/dnnl.hpp>

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "neomeg/dnn/channel_blocked_rules.h"
#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/linalg.h"
#include "neomeg/dnn/operators/norm.h"
#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/rnn.h"
#include "src/x86/conv_algo.h"
#include "src/x86/kernel_report.h"

using namespace neomeg::dnn;
using dnnl::memory;
using Tag = memory::format_tag;

namespace {

int g_repeat = 10;
bool g_cpu_time = false;
std::vector<std::string> g_only;  // substrings of the case names to run; empty: all
std::string g_our_kernel;         // the kernel our last lone timing ran
bool g_extra_lines = true;        // the plain-NCHW and new-weights lines of the convolutions
bool g_unchecked = false;         // time exec_unchecked (the runtime's call) instead of exec

bool wanted(const std::string& name) {
    if (g_only.empty())
        return true;
    for (const std::string& w : g_only)
        if (name.find(w) != std::string::npos)
            return true;
    return false;
}

double now_seconds() {
    if (!g_cpu_time)
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
                .count();
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// The best time of each call, the calls taking turns: our operator and the oneDNN figures it is
// held against. On the 2-vCPU machines a process's speed moves between modes that last seconds
// (a depthwise filter gradient ran 0.85 ms for a while, then 1.3), and timed one after the other
// the two sides of a ratio met different modes: lines where ours runs the very same primitive
// read 0.83-1.15. Each turn of several calls first runs its call once untimed, so that it finds
// its own data in cache as when timed back to back, then times kTimedPerTurn calls.
std::vector<double> best_seconds_taking_turns(const std::vector<std::function<void()>>& calls) {
    constexpr int kTimedPerTurn = 4;
    for (const auto& f : calls) {
        f();  // warm-ups: plans, JIT code, first touch of buffers, the weight cache's entries
        f();
    }
    std::vector<double> best(calls.size(), 1e30);
    for (int done = 0; done < g_repeat; done += kTimedPerTurn)
        for (size_t c = 0; c < calls.size(); ++c) {
            if (calls.size() > 1)
                calls[c]();
            for (int i = 0; i < std::min(kTimedPerTurn, g_repeat - done); ++i) {
                double t0 = now_seconds();
                calls[c]();
                best[c] = std::min(best[c], now_seconds() - t0);
            }
        }
    return best;
}

// One call alone: `repeat` calls back to back after two warm-ups.
double best_seconds(const std::function<void()>& f) {
    return best_seconds_taking_turns({f})[0];
}

// The kernel an operator's last call ran, where it reports one (x86 kernels do).
template <class Op>
std::string kernel_of(const Op& op) {
    auto* report = dynamic_cast<const x86::KernelReport*>(&op);
    return report ? report->last_kernel() : "?";
}

std::vector<float> random_floats(size_t n, float lo = -1, float hi = 1) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (float& x : v)
        x = u(rng);
    return v;
}

// A buffer placed as the framework's host allocator places a tensor (src/core/host_memory.cpp):
// 64-byte aligned, and from 2 MiB on aligned to 2 MiB and advised to take transparent huge pages.
// Both sides of every comparison use it, oneDNN's memories included: std::vector's large blocks
// come from mmap 16 bytes past a page boundary (a kernel split across threads then shares the
// cache lines at their boundaries), and a block freshly mapped on 4 KiB pages ran the same oneDNN
// gemm convolution 10-20% slower than one reused from the heap, so that whichever side of a case
// ran first on fresh memory lost.
template <class T>
class AlignedOf {
public:
    explicit AlignedOf(const std::vector<T>& v) : m_p(allocate(v.size() * sizeof(T))) {
        std::copy(v.begin(), v.end(), m_p);
    }
    ~AlignedOf() { std::free(m_p); }
    AlignedOf(AlignedOf&& o) noexcept : m_p(std::exchange(o.m_p, nullptr)) {}
    AlignedOf(const AlignedOf&) = delete;
    AlignedOf& operator=(const AlignedOf&) = delete;
    AlignedOf& operator=(AlignedOf&&) = delete;
    T* data() const { return m_p; }

private:
    static T* allocate(size_t bytes) {
        constexpr size_t kHuge = size_t(2) << 20;
        const size_t align = bytes >= kHuge ? kHuge : 64;
        // One spare line: a zero-size buffer still gets a valid pointer.
        void* p = std::aligned_alloc(align, (bytes + 64 + align - 1) / align * align);
        if (align == kHuge)
            ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: small pages where THP is off
        return static_cast<T*>(p);
    }

    T* m_p;
};
using Aligned = AlignedOf<float>;

// Our operator ready to run: a call that keeps its operator and buffers alive, and the kernel it
// ran last (after a call).
struct Call {
    std::function<void()> run;
    std::function<std::string()> kernel;
};

// Our operator on contiguous float32 inputs of these shapes (outputs deduced, or preset).
// `new_weights`: the inputs get a new storage version on every call (values written in place), so
// nothing derived from them is reused.
template <class Op>
Call our_call(Handle& handle, const typename Op::Param& p, std::vector<TensorShape> inputs,
              std::vector<TensorShape> outputs = {}, bool new_weights = false) {
    struct State {
        std::unique_ptr<Op> op;
        std::vector<Aligned> bufs;
        std::deque<StorageId> ids;  // the inputs' TensorNDs point at them: never moved
        std::vector<TensorND> in, out;
        std::optional<Aligned> ws;
        Workspace w;
    };
    auto st = std::make_shared<State>();
    st->op = handle.create_operator<Op>();
    Op& op = *st->op;
    op.param() = p;
    std::vector<TensorLayout> in_l, out_l(op.num_outputs());
    for (const TensorShape& s : inputs) {
        in_l.emplace_back(s, dtype::Float32);
        // Positive values: a valid variance or inverse std wherever an input is one.
        st->bufs.emplace_back(random_floats(s.total_nr_elems(), 0.5f, 1.5f));
    }
    for (size_t i = 0; i < outputs.size(); ++i)
        static_cast<TensorShape&>(out_l[i]) = outputs[i];
    op.deduce_layout(in_l, out_l);
    for (size_t i = 0; i < in_l.size(); ++i)
        st->in.emplace_back(st->bufs[i].data(), in_l[i], &st->ids.emplace_back());
    for (const TensorLayout& l : out_l) {
        st->bufs.emplace_back(std::vector<float>(l.total_nr_elems()));
        st->out.emplace_back(st->bufs.back().data(), l);
    }
    const size_t ws_bytes = op.get_workspace_in_bytes(in_l, out_l);
    st->ws.emplace(std::vector<float>(ws_bytes / sizeof(float) + 1));
    st->w = Workspace{reinterpret_cast<std::byte*>(st->ws->data()), ws_bytes};
    Call call;
    call.run = [st, new_weights] {
        if (new_weights)
            for (StorageId& id : st->ids)
                id.note_write();
        if (g_unchecked)
            st->op->exec_unchecked(st->in, st->out, st->w);
        else
            st->op->exec(st->in, st->out, st->w);
    };
    call.kernel = [st] { return kernel_of(*st->op); };
    return call;
}

// One primitive with its arguments: `user` gives each argument's plain (NCHW) descriptor, the
// primitive's own descriptor comes from its primitive descriptor; inputs are reordered in and
// outputs out in the second call.
struct RawArg {
    int arg;
    memory::desc user, prim;
    bool output;
};

// The raw primitive ready to run, alone and with the reorders from and to the plain layouts.
struct RawCalls {
    std::function<void()> primitive, with_reorders;
};

RawCalls raw_calls(const dnnl::engine& eng, dnnl::stream& s, const dnnl::primitive& prim,
                   const std::vector<RawArg>& args, const memory::desc& scratch) {
    struct State {
        dnnl::primitive prim;
        std::unordered_map<int, memory> args;
        std::vector<std::function<void()>> before, after;
        std::vector<Aligned> keep;
    };
    auto st = std::make_shared<State>();
    st->prim = prim;
    for (const RawArg& a : args) {
        st->keep.emplace_back(random_floats(a.user.get_size() / sizeof(float), 0.5f, 1.5f));
        memory user(a.user, eng, st->keep.back().data());
        st->keep.emplace_back(std::vector<float>(a.prim.get_size() / sizeof(float)));
        memory pm(a.prim, eng, st->keep.back().data());
        dnnl::reorder(user, pm).execute(s, user, pm);
        st->args[a.arg] = pm;
        if (a.prim != a.user) {
            auto r = a.output ? dnnl::reorder(pm, user) : dnnl::reorder(user, pm);
            (a.output ? st->after : st->before)
                    .push_back([r, user, pm, &s, out = a.output]() mutable {
                        if (out)
                            r.execute(s, pm, user);
                        else
                            r.execute(s, user, pm);
                    });
        }
    }
    if (scratch.get_size()) {
        st->keep.emplace_back(std::vector<float>(scratch.get_size() / sizeof(float) + 1));
        st->args[DNNL_ARG_SCRATCHPAD] = memory(scratch, eng, st->keep.back().data());
    }
    RawCalls calls;
    calls.primitive = [st, &s] {
        st->prim.execute(s, st->args);
        s.wait();
    };
    calls.with_reorders = [st, &s] {
        for (auto& f : st->before)
            f();
        st->prim.execute(s, st->args);
        for (auto& f : st->after)
            f();
        s.wait();
    };
    return calls;
}

// Our call alone: its best time; g_our_kernel names the kernel it ran.
double seconds(const Call& ours) {
    const double t = best_seconds(ours.run);
    g_our_kernel = ours.kernel();
    return t;
}

// The primitive made for plain NCHW src and dst (weights as it prefers, reordered once outside
// the timing, as the weight cache does): whether oneDNN's own NCHW kernels would beat the blocked
// ones plus the activations' reorders that ours pays.
void report_plain(const char* name, const Call& ours, const dnnl::engine& eng, dnnl::stream& s,
                  const dnnl::primitive& prim, const std::vector<RawArg>& args,
                  const memory::desc& scratch, const std::string& impl) {
    RawCalls raw = raw_calls(eng, s, prim, args, scratch);
    const std::vector<double> t = best_seconds_taking_turns({ours.run, raw.with_reorders});
    std::printf("%-48s ours %8.3f ms  onednn on nchw %8.3f ms (%5.2fx)  %s\n", name, t[0] * 1e3,
                t[1] * 1e3, t[1] / t[0], impl.c_str());
}

// Ours against the primitive alone and with its reorders, the three taking turns. `impl`, where
// given: the raw primitive's implementation, printed after ours.
void report(const char* name, const Call& ours, const RawCalls& raw, const std::string& impl = {}) {
    const std::vector<double> t =
            best_seconds_taking_turns({ours.run, raw.primitive, raw.with_reorders});
    std::printf("%-48s ours %8.3f ms  onednn %8.3f ms (%5.2fx)  onednn+reorders %8.3f ms (%5.2fx)",
                name, t[0] * 1e3, t[1] * 1e3, t[1] / t[0], t[2] * 1e3, t[2] / t[0]);
    if (!impl.empty())
        std::printf("  ours %s, onednn %s", ours.kernel().c_str(), impl.c_str());
    std::printf("\n");
}

memory::desc plain(memory::dims d) {
    Tag t = d.size() == 1   ? Tag::a
            : d.size() == 2 ? Tag::ab
            : d.size() == 4 ? Tag::nchw
                            : Tag::goihw;
    return memory::desc(d, memory::data_type::f32, t);
}

memory::desc any(memory::dims d) {
    return memory::desc(d, memory::data_type::f32, Tag::any);
}

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return a;
}

struct ConvCase {
    const char* name;
    memory::dim n, ic, oc, hw, k, group, stride = 1;
};

void bench_conv(Handle& h, const dnnl::engine& eng, dnnl::stream& s, const ConvCase& c) {
    if (!wanted(c.name))
        return;
    memory::dim pad = c.k / 2;
    memory::dim ohw = (c.hw + 2 * pad - c.k) / c.stride + 1;
    memory::dims src{c.n, c.ic, c.hw, c.hw}, dst{c.n, c.oc, ohw, ohw};
    memory::dims wd = c.group == 1
                              ? memory::dims{c.oc, c.ic, c.k, c.k}
                              : memory::dims{c.group, c.oc / c.group, c.ic / c.group, c.k, c.k};
    memory::dims st{c.stride, c.stride}, dil{0, 0}, pd{pad, pad};
    // Our kernel's algorithm per pass (the rule on the shape), planned as choose_conv_pd does.
    x86::ConvDims g{st, dil, pd, uint32_t(c.group)};
    TensorLayout src_l({size_t(c.n), size_t(c.ic), size_t(c.hw), size_t(c.hw)}, dtype::Float32),
            filter_l({size_t(c.oc), size_t(c.ic / c.group), size_t(c.k), size_t(c.k)},
                     dtype::Float32),
            dst_l({size_t(c.n), size_t(c.oc), size_t(ohw), size_t(ohw)}, dtype::Float32);
    auto plan = [&](x86::ConvPass pass, auto&& make_pd) {
        dnnl::algorithm alg = x86::winograd_enabled()
                                      ? x86::default_conv_algorithm(pass, g, src_l, filter_l, dst_l)
                                      : dnnl::algorithm::convolution_direct;
        if (alg != dnnl::algorithm::convolution_direct) {
            try {
                return make_pd(alg);
            } catch (const dnnl::error&) {
                // No such kernel on this CPU: ours plans the direct one too.
            }
        }
        return make_pd(dnnl::algorithm::convolution_direct);
    };
    auto fpd = plan(x86::ConvPass::forward, [&](dnnl::algorithm alg) {
        dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, alg, any(src),
                                           any(wd), any(dst), st, dil, pd, pd);
        return dnnl::convolution_forward::primitive_desc(fd, user_scratchpad(), eng);
    });
    param::Convolution p;
    p.padding = {int32_t(pad), int32_t(pad)};
    p.stride = {int32_t(c.stride), int32_t(c.stride)};
    p.group = uint32_t(c.group);
    TensorShape xs{size_t(c.n), size_t(c.ic), size_t(c.hw), size_t(c.hw)},
            ws{size_t(c.oc), size_t(c.ic / c.group), size_t(c.k), size_t(c.k)},
            ys{size_t(c.n), size_t(c.oc), size_t(ohw), size_t(ohw)};
    std::string name = std::string(c.name) + " fwd";
    RawCalls raw = raw_calls(eng, s, dnnl::convolution_forward(fpd),
                             {{DNNL_ARG_SRC, plain(src), fpd.src_desc(), false},
                              {DNNL_ARG_WEIGHTS, plain(wd), fpd.weights_desc(), false},
                              {DNNL_ARG_DST, plain(dst), fpd.dst_desc(), true}},
                             fpd.scratchpad_desc());
    Call ours = our_call<ConvolutionForward>(h, p, {xs, ws});
    report(name.c_str(), ours, raw, fpd.impl_info_str());
    // The blocked twins on ChannelBlock's layout, as a traced graph and eager mode run them between
    // oneDNN ops: against the primitive alone (the "onednn" column; no reorders to pay).
    const size_t blk = h.preferred_channel_block();
    auto blocked = [&](const TensorShape& shape) {
        return channel_blocked::blocked_shape(shape, blk);
    };
    if (blk)
        report((name + ", blocked").c_str(),
               our_call<ConvBiasBlocked>(h, channel_blocked::conv_bias_blocked_param(p, blk, false),
                                         {blocked(xs), ws, TensorShape{}, TensorShape{}}),
               raw, fpd.impl_info_str());
    if (g_extra_lines) {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training,
                                          dnnl::algorithm::convolution_direct, plain(src), any(wd),
                                          plain(dst), st, dil, pd, pd);
        dnnl::convolution_forward::primitive_desc ppd(d, user_scratchpad(), eng);
        report_plain((name + ", nchw").c_str(), ours, eng, s, dnnl::convolution_forward(ppd),
                     {{DNNL_ARG_SRC, plain(src), ppd.src_desc(), false},
                      {DNNL_ARG_WEIGHTS, ppd.weights_desc(), ppd.weights_desc(), false},
                      {DNNL_ARG_DST, plain(dst), ppd.dst_desc(), true}},
                     ppd.scratchpad_desc(), ppd.impl_info_str());
    }
    if (g_extra_lines)
        report((name + ", new weights").c_str(),
               our_call<ConvolutionForward>(h, p, {xs, ws}, {}, true), raw, fpd.impl_info_str());
    auto bpd = plan(x86::ConvPass::backward_data, [&](dnnl::algorithm alg) {
        dnnl::convolution_backward_data::desc bd(alg, any(src), any(wd), any(dst), st, dil, pd, pd);
        return dnnl::convolution_backward_data::primitive_desc(bd, user_scratchpad(), eng, fpd);
    });
    name = std::string(c.name) + " bwd data";
    raw = raw_calls(eng, s, dnnl::convolution_backward_data(bpd),
                    {{DNNL_ARG_WEIGHTS, plain(wd), bpd.weights_desc(), false},
                     {DNNL_ARG_DIFF_DST, plain(dst), bpd.diff_dst_desc(), false},
                     {DNNL_ARG_DIFF_SRC, plain(src), bpd.diff_src_desc(), true}},
                    bpd.scratchpad_desc());
    ours = our_call<ConvolutionBackwardData>(h, p, {ws, ys}, {xs});
    report(name.c_str(), ours, raw, bpd.impl_info_str());
    if (blk)
        report((name + ", blocked").c_str(),
               our_call<ConvolutionBackwardDataBlocked>(h, p, {ws, blocked(ys)}, {blocked(xs)}),
               raw, bpd.impl_info_str());
    if (g_extra_lines) {
        dnnl::convolution_forward::desc fdp(dnnl::prop_kind::forward_training,
                                            dnnl::algorithm::convolution_direct, plain(src),
                                            any(wd), plain(dst), st, dil, pd, pd);
        dnnl::convolution_forward::primitive_desc fpdp(fdp, eng);
        dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, plain(src),
                                                any(wd), plain(dst), st, dil, pd, pd);
        dnnl::convolution_backward_data::primitive_desc ppd(d, user_scratchpad(), eng, fpdp);
        report_plain((name + ", nchw").c_str(), ours, eng, s, dnnl::convolution_backward_data(ppd),
                     {{DNNL_ARG_WEIGHTS, ppd.weights_desc(), ppd.weights_desc(), false},
                      {DNNL_ARG_DIFF_DST, plain(dst), ppd.diff_dst_desc(), false},
                      {DNNL_ARG_DIFF_SRC, plain(src), ppd.diff_src_desc(), true}},
                     ppd.scratchpad_desc(), ppd.impl_info_str());
    }
    if (g_extra_lines)
        report((name + ", new weights").c_str(),
               our_call<ConvolutionBackwardData>(h, p, {ws, ys}, {xs}, true), raw,
               bpd.impl_info_str());
    auto wpd = plan(x86::ConvPass::backward_filter, [&](dnnl::algorithm alg) {
        dnnl::convolution_backward_weights::desc wdsc(alg, any(src), any(wd), any(dst), st, dil, pd,
                                                      pd);
        return dnnl::convolution_backward_weights::primitive_desc(wdsc, user_scratchpad(), eng,
                                                                  fpd);
    });
    name = std::string(c.name) + " bwd filter";
    ours = our_call<ConvolutionBackwardFilter>(h, p, {xs, ys}, {ws});
    if (g_extra_lines) {
        dnnl::convolution_forward::desc fdp(dnnl::prop_kind::forward_training,
                                            dnnl::algorithm::convolution_direct, plain(src),
                                            any(wd), plain(dst), st, dil, pd, pd);
        dnnl::convolution_forward::primitive_desc fpdp(fdp, eng);
        dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, plain(src),
                                                   any(wd), plain(dst), st, dil, pd, pd);
        dnnl::convolution_backward_weights::primitive_desc ppd(d, user_scratchpad(), eng, fpdp);
        report_plain((name + ", nchw").c_str(), ours, eng, s,
                     dnnl::convolution_backward_weights(ppd),
                     {{DNNL_ARG_SRC, plain(src), ppd.src_desc(), false},
                      {DNNL_ARG_DIFF_DST, plain(dst), ppd.diff_dst_desc(), false},
                      {DNNL_ARG_DIFF_WEIGHTS, plain(wd), ppd.diff_weights_desc(), true}},
                     ppd.scratchpad_desc(), ppd.impl_info_str());
    }
    raw = raw_calls(eng, s, dnnl::convolution_backward_weights(wpd),
                    {{DNNL_ARG_SRC, plain(src), wpd.src_desc(), false},
                     {DNNL_ARG_DIFF_DST, plain(dst), wpd.diff_dst_desc(), false},
                     {DNNL_ARG_DIFF_WEIGHTS, plain(wd), wpd.diff_weights_desc(), true}},
                    wpd.scratchpad_desc());
    report(name.c_str(), ours, raw, wpd.impl_info_str());
    if (blk)
        report((name + ", blocked").c_str(),
               our_call<ConvolutionBackwardFilterBlocked>(h, p, {blocked(xs), blocked(ys)}, {ws}),
               raw, wpd.impl_info_str());
}

// ConvBias (a traced graph's fused conv + bias + relu) on a stride-1 1x1 shape against oneDNN's
// convolution for inference with its bias and a relu post-op: the primitive on the layouts it
// prefers, with the reorders from and to NCHW, and (the ", nchw" line) on plain NCHW tensors.
void bench_conv_bias(Handle& h, const dnnl::engine& eng, dnnl::stream& s, const char* name,
                     memory::dim n, memory::dim ic, memory::dim oc, memory::dim hw) {
    if (!wanted(name))
        return;
    memory::dims src{n, ic, hw, hw}, wd{oc, ic, 1, 1}, bd{oc}, dst{n, oc, hw, hw};
    memory::dims st{1, 1}, dil{0, 0}, pd{0, 0};
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    dnnl::primitive_attr attr = user_scratchpad();
    attr.set_post_ops(ops);
    auto make = [&](const memory::desc& x, const memory::desc& y) {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_direct, x, any(wd),
                                          plain(bd), y, st, dil, pd, pd);
        return dnnl::convolution_forward::primitive_desc(d, attr, eng);
    };
    auto args = [](const dnnl::convolution_forward::primitive_desc& fpd, const memory::desc& w) {
        return std::vector<RawArg>{
                {DNNL_ARG_SRC, plain(fpd.src_desc().dims()), fpd.src_desc(), false},
                {DNNL_ARG_WEIGHTS, w, fpd.weights_desc(), false},
                {DNNL_ARG_BIAS, fpd.bias_desc(), fpd.bias_desc(), false},
                {DNNL_ARG_DST, plain(fpd.dst_desc().dims()), fpd.dst_desc(), true}};
    };
    param::ConvBias p;
    p.padding = {0, 0};
    p.nonlineMode = param::ConvBias::NonlineMode::RELU;
    const size_t un = size_t(n), uic = size_t(ic), uoc = size_t(oc), uhw = size_t(hw);
    const Call ours = our_call<ConvBias>(
            h, p, {{un, uic, uhw, uhw}, {uoc, uic, 1, 1}, {1, uoc, 1, 1}, TensorShape{}});
    auto fpd = make(any(src), any(dst));
    report(name, ours,
           raw_calls(eng, s, dnnl::convolution_forward(fpd), args(fpd, plain(wd)),
                     fpd.scratchpad_desc()),
           fpd.impl_info_str());
    if (g_extra_lines) {
        auto ppd = make(plain(src), plain(dst));
        report_plain((std::string(name) + ", nchw").c_str(), ours, eng, s,
                     dnnl::convolution_forward(ppd), args(ppd, ppd.weights_desc()),
                     ppd.scratchpad_desc(), ppd.impl_info_str());
    }
}

void bench_matmul(Handle& h, const dnnl::engine& eng, dnnl::stream& s, memory::dim n) {
    memory::desc a = plain({n, n});
    dnnl::matmul::desc d(a, a, a);
    dnnl::matmul::primitive_desc pd(d, user_scratchpad(), eng);
    std::string name = "matmul " + std::to_string(n);
    if (!wanted(name + " "))
        return;
    size_t un = size_t(n);
    report(name.c_str(), our_call<MatrixMul>(h, {}, {{un, un}, {un, un}}),
           raw_calls(eng, s, dnnl::matmul(pd),
                     {{DNNL_ARG_SRC, a, pd.src_desc(), false},
                      {DNNL_ARG_WEIGHTS, a, pd.weights_desc(), false},
                      {DNNL_ARG_DST, a, pd.dst_desc(), true}},
                     pd.scratchpad_desc()));
}

// MAX pooling's backward, ours on NCHW (the plain operator) and, where the handle prefers a
// channel block, on blocked memory as eager mode runs it (the plain operator on the blocked
// tensors seen as planes, channel_blocked::blocks_as_planes), against oneDNN's forward for
// training (the operator gets src, not indices) plus its backward on nChw<b>c: the primitive
// alone, on the layout it runs fastest.
void bench_pooling_backward(Handle& h, const dnnl::engine& eng, dnnl::stream& s, const char* name,
                            const param::Pooling& p, const memory::dims& src,
                            const memory::dims& dst) {
    const size_t blk = h.preferred_channel_block();
    if (!blk)
        return;
    const Tag tag = blk == 16 ? Tag::nChw16c : Tag::nChw8c;
    memory::desc smd(src, memory::data_type::f32, tag), dmd(dst, memory::data_type::f32, tag);
    dnnl::pooling_forward::primitive_desc fpd(
            dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::pooling_max, smd, dmd,
                                        {p.stride[0], p.stride[1]}, {p.window[0], p.window[1]},
                                        {p.padding[0], p.padding[1]}, {p.padding[0], p.padding[1]}),
            eng);
    dnnl::pooling_backward::primitive_desc bpd(
            dnnl::pooling_backward::desc(dnnl::algorithm::pooling_max, smd, dmd,
                                         {p.stride[0], p.stride[1]}, {p.window[0], p.window[1]},
                                         {p.padding[0], p.padding[1]},
                                         {p.padding[0], p.padding[1]}),
            eng, fpd);
    std::vector<float> xs = random_floats(smd.get_size() / 4, -1, 1), ys(dmd.get_size() / 4),
                       dys = random_floats(dmd.get_size() / 4, -1, 1), gs(smd.get_size() / 4);
    memory xm(smd, eng, xs.data()), ym(dmd, eng, ys.data()), dym(dmd, eng, dys.data()),
            gm(smd, eng, gs.data()), wm(fpd.workspace_desc(), eng);
    dnnl::pooling_forward fwd(fpd);
    dnnl::pooling_backward bwd(bpd);
    auto raw_run = [&] {
        fwd.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}, {DNNL_ARG_WORKSPACE, wm}});
        bwd.execute(s,
                    {{DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_DIFF_SRC, gm}, {DNNL_ARG_WORKSPACE, wm}});
        s.wait();
    };
    auto shape = [](const memory::dims& d) {
        return TensorShape{size_t(d[0]), size_t(d[1]), size_t(d[2]), size_t(d[3])};
    };
    // The forward's output as dst (read only for the NaN check), so that the timing is the
    // operator's with a NaN-free dst.
    const Call plain = our_call<PoolingBackward>(h, p, {shape(src), shape(dst), shape(dst)});
    auto op = h.create_operator<PoolingBackward>();
    op->param() = p;
    auto planes = [&](std::vector<float>& v, const memory::dims& d) {
        TensorLayout l(channel_blocked::blocked_shape(shape(d), blk), dtype::Float32);
        return TensorND(v.data(), channel_blocked::blocks_as_planes(l));
    };
    std::vector<float> yb(ys.size(), 0.f);
    TensorND in[] = {planes(xs, src), planes(yb, dst), planes(dys, dst)}, out = planes(gs, src);
    TensorLayout in_l[] = {in[0].layout, in[1].layout, in[2].layout};
    std::vector<std::byte> ws(op->get_workspace_in_bytes(in_l, {&out.layout, 1}));
    const std::vector<double> t =
            best_seconds_taking_turns({plain.run,
                                       [&] {
                                           op->exec(in, {&out, 1}, {ws.data(), ws.size()});
                                       },
                                       raw_run});
    std::printf(
            "%-48s ours nchw %8.3f ms, blocked %8.3f ms  onednn fwd+bwd %8.3f ms  "
            "(nchw %5.2fx, blocked %5.2fx)  ours %s / %s, onednn %s\n",
            (std::string(name) + " bwd").c_str(), t[0] * 1e3, t[1] * 1e3, t[2] * 1e3, t[2] / t[0],
            t[2] / t[1], plain.kernel().c_str(), kernel_of(*op).c_str(), bpd.impl_info_str());
}

void bench_pooling(Handle& h, const dnnl::engine& eng, dnnl::stream& s) {
    struct Case {
        const char* name;
        memory::dim k, stride, pad, out, n = 32;
    };
    // The 2-image line has its tensors in cache (src 1.6 MB): the loops' compute, not memory.
    for (const Case& c : {Case{"max pool 2x2 32x64x56x56", 2, 2, 0, 28},
                          Case{"max pool 3x3/2 pad 1 32x64x56x56", 3, 2, 1, 28},
                          Case{"max pool 3x3/2 pad 1 2x64x56x56", 3, 2, 1, 28, 2}}) {
        if (!wanted(c.name))
            continue;
        memory::dims src{c.n, 64, 56, 56}, dst{c.n, 64, c.out, c.out};
        dnnl::pooling_forward::desc d(
                dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, plain(src),
                plain(dst), {c.stride, c.stride}, {c.k, c.k}, {c.pad, c.pad}, {c.pad, c.pad});
        dnnl::pooling_forward::primitive_desc pd(d, user_scratchpad(), eng);
        param::Pooling p;
        p.window = {int32_t(c.k), int32_t(c.k)};
        p.stride = {int32_t(c.stride), int32_t(c.stride)};
        p.padding = {int32_t(c.pad), int32_t(c.pad)};
        report(c.name, our_call<PoolingForward>(h, p, {{size_t(c.n), 64, 56, 56}}),
               raw_calls(eng, s, dnnl::pooling_forward(pd),
                         {{DNNL_ARG_SRC, plain(src), pd.src_desc(), false},
                          {DNNL_ARG_DST, plain(dst), pd.dst_desc(), true}},
                         pd.scratchpad_desc()));
        bench_pooling_backward(h, eng, s, c.name, p, src, dst);
    }
}

// bfloat16 (its bits) of random values in [lo, hi): no NaN, unlike random float bits.
std::vector<uint16_t> random_bf16(size_t n, float lo = -1, float hi = 1) {
    std::vector<uint16_t> v(n);
    std::vector<float> f = random_floats(n, lo, hi);
    for (size_t i = 0; i < n; ++i) {
        uint32_t b;
        std::memcpy(&b, &f[i], sizeof(b));
        v[i] = static_cast<uint16_t>(b >> 16);
    }
    return v;
}

// Our operator on bfloat16 tensors of these (possibly strided) layouts, outputs as given.
template <class Op>
Call bf16_call(Handle& handle, const typename Op::Param& p, const std::vector<TensorLayout>& in_l,
               const std::vector<TensorLayout>& out_l) {
    struct State {
        std::unique_ptr<Op> op;
        std::vector<AlignedOf<uint16_t>> bufs;  // 64-byte aligned, as the runtime's tensors are
        std::vector<TensorND> in, out;
        std::vector<std::byte> ws;
    };
    auto st = std::make_shared<State>();
    st->op = handle.create_operator<Op>();
    st->op->param() = p;
    for (const TensorLayout& l : in_l) {
        st->bufs.emplace_back(random_bf16(l.total_nr_elems()));  // dense views: no gaps
        st->in.emplace_back(st->bufs.back().data(), l);
    }
    for (const TensorLayout& l : out_l) {
        st->bufs.emplace_back(std::vector<uint16_t>(l.total_nr_elems()));
        st->out.emplace_back(st->bufs.back().data(), l);
    }
    st->ws.resize(st->op->get_workspace_in_bytes(in_l, out_l) + 64);
    Call call;
    call.run = [st] {
        st->op->exec(st->in, st->out, Workspace{st->ws.data(), st->ws.size() - 64});
    };
    call.kernel = [st] { return kernel_of(*st->op); };
    return call;
}

// bfloat16 MAX pooling of 32x64x56x56 on NCHW, NHWC and nChw16c memory: our NaN-keeping loops
// against oneDNN's bfloat16 kernel (which drops NaNs) on the same memory; the backward (which
// reruns the forward: the operator gets src, not indices) against oneDNN's forward for training
// plus its backward.
void bench_pooling_bf16(Handle& h, const dnnl::engine& eng, dnnl::stream& s) {
    struct Case {
        const char* name;
        memory::dim k, stride, pad, out;
        memory::dim n = 32;  // 2: the tensors in cache (the backward only)
    };
    using dt = memory::data_type;
    for (const Case& c :
         {Case{"bf16 max pool 2x2", 2, 2, 0, 28}, Case{"bf16 max pool 3x3/2 pad 1", 3, 2, 1, 28},
          Case{"bf16 max pool 3x3/2 pad 1", 3, 2, 1, 28, 2}})
        for (Tag tag : {Tag::nchw, Tag::nhwc, Tag::nChw16c}) {
            const char* fmt = tag == Tag::nchw ? "nchw" : tag == Tag::nhwc ? "nhwc" : "nChw16c";
            std::string name =
                    std::string(c.name) + " " + fmt + " " + std::to_string(c.n) + "x64x56x56";
            if (!wanted(name) || (c.n != 32 && tag != Tag::nhwc))
                continue;
            const size_t nb = size_t(c.n);
            memory::dims src{c.n, 64, 56, 56}, dst{c.n, 64, c.out, c.out};
            memory::desc smd(src, dt::bf16, tag), dmd(dst, dt::bf16, tag);
            param::Pooling p;
            p.window = {int32_t(c.k), int32_t(c.k)};
            p.stride = {int32_t(c.stride), int32_t(c.stride)};
            p.padding = {int32_t(c.pad), int32_t(c.pad)};
            const size_t o = size_t(c.out);
            auto layout = [&](size_t hw) {
                if (tag == Tag::nhwc)
                    return TensorLayout({nb, hw, hw, 64}, dtype::BFloat16).dimshuffle({0, 3, 1, 2});
                if (tag == Tag::nChw16c)
                    return TensorLayout({nb, 4, hw, hw, 16}, dtype::BFloat16);
                return TensorLayout({nb, 64, hw, hw}, dtype::BFloat16);
            };
            const Call ours = tag == Tag::nChw16c
                                      ? bf16_call<PoolingBlocked>(h, p, {layout(56)}, {layout(o)})
                                      : bf16_call<PoolingForward>(h, p, {layout(56)}, {layout(o)});
            dnnl::pooling_forward::desc d(
                    dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, smd, dmd,
                    {c.stride, c.stride}, {c.k, c.k}, {c.pad, c.pad}, {c.pad, c.pad});
            std::optional<dnnl::pooling_forward::primitive_desc> maybe_pd;
            try {
                maybe_pd.emplace(d, user_scratchpad(), eng);
            } catch (const dnnl::error&) {
                // Below AVX-512 oneDNN 2.6 has no bfloat16 pooling: nothing to compare with.
                const double t = seconds(ours);
                std::printf("%-48s ours %8.3f ms  (%s)  no oneDNN bfloat16 kernel on this CPU\n",
                            name.c_str(), t * 1e3, g_our_kernel.c_str());
                continue;
            }
            const auto& pd = *maybe_pd;
            report(name.c_str(), ours,
                   raw_calls(eng, s, dnnl::pooling_forward(pd),
                             {{DNNL_ARG_SRC, smd, pd.src_desc(), false},
                              {DNNL_ARG_DST, dmd, pd.dst_desc(), true}},
                             pd.scratchpad_desc()),
                   pd.impl_info_str());
            if (tag == Tag::nChw16c || c.k == 2)
                continue;  // no blocked backward; 2x2 takes our tiled loop as before
            // The backward: ours against oneDNN's forward (training) and backward.
            std::string bname = name + " bwd";
            const Call ours_b = bf16_call<PoolingBackward>(h, p, {layout(56), layout(o), layout(o)},
                                                           {layout(56)});
            dnnl::pooling_forward::desc ft(
                    dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max, smd, dmd,
                    {c.stride, c.stride}, {c.k, c.k}, {c.pad, c.pad}, {c.pad, c.pad});
            dnnl::pooling_forward::primitive_desc fpd(ft, eng);
            dnnl::pooling_backward::desc bd(dnnl::algorithm::pooling_max, smd, dmd,
                                            {c.stride, c.stride}, {c.k, c.k}, {c.pad, c.pad},
                                            {c.pad, c.pad});
            dnnl::pooling_backward::primitive_desc bpd(bd, eng, fpd);
            std::vector<uint16_t> xs = random_bf16(smd.get_size() / 2), ys(dmd.get_size() / 2),
                                  dys = random_bf16(dmd.get_size() / 2), gs(smd.get_size() / 2);
            memory xm(smd, eng, xs.data()), ym(dmd, eng, ys.data()), dym(dmd, eng, dys.data()),
                    gm(smd, eng, gs.data()), wm(fpd.workspace_desc(), eng);
            dnnl::pooling_forward fwd(fpd);
            dnnl::pooling_backward bwd(bpd);
            const std::vector<double> t =
                    best_seconds_taking_turns({ours_b.run, [&] {
                                                   fwd.execute(s, {{DNNL_ARG_SRC, xm},
                                                                   {DNNL_ARG_DST, ym},
                                                                   {DNNL_ARG_WORKSPACE, wm}});
                                                   bwd.execute(s, {{DNNL_ARG_DIFF_DST, dym},
                                                                   {DNNL_ARG_DIFF_SRC, gm},
                                                                   {DNNL_ARG_WORKSPACE, wm}});
                                                   s.wait();
                                               }});
            std::printf(
                    "%-48s ours %8.3f ms  onednn fwd+bwd %8.3f ms (%5.2fx)  ours %s, onednn %s\n",
                    bname.c_str(), t[0] * 1e3, t[1] * 1e3, t[1] / t[0], ours_b.kernel().c_str(),
                    bpd.impl_info_str());
        }
}

// bfloat16 1x1 convolutions' input gradient on channels-last (nhwc) tensors, whose oneDNN kernel
// is AMX's where the CPU has it, against the same on NCHW (the gemm kernel, or for a stride of 2
// the stride-1 one into the subsampled view): ours both, the kernels named.
void bench_pointwise_bf16_backward_data(Handle& h) {
    struct Case {
        const char* name;
        size_t n, ic, oc, hw, stride;
    };
    for (const Case& c : {Case{"bf16 1x1 bwd data 64->128 s2 32x32 b32", 32, 64, 128, 32, 2},
                          Case{"bf16 1x1 bwd data 128->256 s2 16x16 b32", 32, 128, 256, 16, 2},
                          Case{"bf16 1x1 bwd data 256->512 s2 8x8 b32", 32, 256, 512, 8, 2},
                          Case{"bf16 1x1 bwd data 64->256 56x56 b32", 32, 64, 256, 56, 1}}) {
        if (!wanted(c.name))
            continue;
        const size_t o = (c.hw - 1) / c.stride + 1;
        param::Convolution p;
        p.stride = {int32_t(c.stride), int32_t(c.stride)};
        p.padding = {0, 0};
        auto act = [](size_t n, size_t ch, size_t hw, bool nhwc) {
            if (nhwc)
                return TensorLayout({n, hw, hw, ch}, dtype::BFloat16).dimshuffle({0, 3, 1, 2});
            return TensorLayout({n, ch, hw, hw}, dtype::BFloat16);
        };
        TensorLayout w({c.oc, c.ic, 1, 1}, dtype::BFloat16);
        double t[2];
        std::string kernel[2];
        for (bool nhwc : {false, true}) {
            t[nhwc] = seconds(bf16_call<ConvolutionBackwardData>(h, p, {w, act(c.n, c.oc, o, nhwc)},
                                                                 {act(c.n, c.ic, c.hw, nhwc)}));
            kernel[nhwc] = g_our_kernel;
        }
        std::printf("%-48s nchw %8.3f ms  nhwc %8.3f ms (nchw/nhwc %5.2fx)  nchw %s, nhwc %s\n",
                    c.name, t[0] * 1e3, t[1] * 1e3, t[0] / t[1], kernel[0].c_str(),
                    kernel[1].c_str());
    }
}

// float32 convolutions whose two activations (src and dst; diff and grad; src and diff) come
// channels-last ("cl") or plain, in every mix: ours each, the kernel named. A traced graph hands a
// convolution a channels-last view (a transposed NHWC batch) beside its plain output; eager mode
// keeps channels-last on both sides, or meets a plain gradient seed beside a channels-last src.
// conv_common.h's rule says which mixes run oneDNN's nhwc kernel and which a blocked one.
template <class Op>
double time_ours_layouts(Handle& handle, const param::Convolution& p,
                         const std::vector<TensorLayout>& in_l,
                         const std::vector<TensorLayout>& out_l) {
    auto op = handle.create_operator<Op>();
    op->param() = p;
    std::vector<Aligned> bufs;
    std::vector<StorageId> ids(in_l.size());
    std::vector<TensorND> in, out;
    for (size_t i = 0; i < in_l.size(); ++i) {
        bufs.emplace_back(random_floats(in_l[i].total_nr_elems()));  // dense views: no gaps
        in.emplace_back(bufs.back().data(), in_l[i], &ids[i]);
    }
    for (const TensorLayout& l : out_l) {
        bufs.emplace_back(std::vector<float>(l.total_nr_elems()));
        out.emplace_back(bufs.back().data(), l);
    }
    const size_t ws_bytes = op->get_workspace_in_bytes(in_l, out_l);
    Aligned ws(std::vector<float>(ws_bytes / sizeof(float) + 1));
    Workspace w{reinterpret_cast<std::byte*>(ws.data()), ws_bytes};
    double t = best_seconds([&] { op->exec(in, out, w); });
    g_our_kernel = kernel_of(*op);
    return t;
}

void bench_conv_layouts(Handle& h) {
    struct Case {
        const char* name;
        size_t n, ic, oc, hw, k, group;
    };
    for (const Case& c : {Case{"layouts conv 3x3 32->64 56x56 b8", 8, 32, 64, 56, 3, 1},
                          Case{"layouts conv 3x3 64->64 28x28 b8", 8, 64, 64, 28, 3, 1},
                          Case{"layouts conv 1x1 64->128 28x28 b8", 8, 64, 128, 28, 1, 1},
                          Case{"layouts depthwise 3x3 64 56x56 b8", 8, 64, 64, 56, 3, 64}}) {
        param::Convolution p;
        p.padding = {int32_t(c.k / 2), int32_t(c.k / 2)};
        p.group = uint32_t(c.group);
        auto act = [](size_t n, size_t ch, size_t hw, bool cl) {
            if (cl)
                return TensorLayout({n, hw, hw, ch}, dtype::Float32).dimshuffle({0, 3, 1, 2});
            return TensorLayout({n, ch, hw, hw}, dtype::Float32);
        };
        TensorLayout w({c.oc, c.ic / c.group, c.k, c.k}, dtype::Float32);
        for (const char* pass : {"fwd", "bwd data", "bwd filter"})
            for (int mix = 0; mix < 4; ++mix) {
                const bool a = mix & 2, b = mix & 1;  // src (or diff) cl, the other cl
                std::string name = std::string(c.name) + " " + pass + " " + (a ? "cl" : "plain") +
                                   "," + (b ? "cl" : "plain");
                if (!wanted(name))
                    continue;
                TensorLayout x = act(c.n, c.ic, c.hw, a), y = act(c.n, c.oc, c.hw, b);
                double t = 0;
                if (pass[0] == 'f') {
                    t = time_ours_layouts<ConvolutionForward>(h, p, {x, w}, {y});
                } else if (pass[4] == 'd') {
                    // diff (first of the pair) and grad
                    TensorLayout diff = act(c.n, c.oc, c.hw, a), grad = act(c.n, c.ic, c.hw, b);
                    t = time_ours_layouts<ConvolutionBackwardData>(h, p, {w, diff}, {grad});
                } else {
                    t = time_ours_layouts<ConvolutionBackwardFilter>(h, p, {x, y}, {w});
                }
                std::printf("%-52s ours %8.3f ms  (%s)\n", name.c_str(), t * 1e3,
                            g_our_kernel.c_str());
            }
    }
}

void bench_batch_norm(Handle& h, const dnnl::engine& eng, dnnl::stream& s) {
    if (!wanted("batch norm fwd 32x64x56x56"))
        return;
    memory::dims src{32, 64, 56, 56};
    auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_training, plain(src), 1e-5f,
                                              flags);
    dnnl::batch_normalization_forward::primitive_desc pd(d, user_scratchpad(), eng);
    param::BatchNorm p;
    TensorShape x{32, 64, 56, 56}, c{1, 64, 1, 1};
    memory::desc vec = plain({64});
    report("batch norm fwd 32x64x56x56", our_call<BatchNormForward>(h, p, {x, c, c, c, c}),
           raw_calls(eng, s, dnnl::batch_normalization_forward(pd),
                     {{DNNL_ARG_SRC, plain(src), pd.src_desc(), false},
                      {DNNL_ARG_SCALE, vec, vec, false},
                      {DNNL_ARG_SHIFT, vec, vec, false},
                      {DNNL_ARG_DST, plain(src), pd.dst_desc(), true},
                      {DNNL_ARG_MEAN, vec, pd.mean_desc(), true},
                      {DNNL_ARG_VARIANCE, vec, pd.variance_desc(), true}},
                     pd.scratchpad_desc()));
}

// Softmax and log-softmax, forward and backward, against oneDNN's softmax primitive on the same
// dense tensors: ours are always our loops (softmax_hwy.h); oneDNN's figure is its JIT kernel where
// it has one (the last axis; AVX2: the forward only), elsewhere its `ref:any`, what these calls ran
// before our loops took them.
void bench_softmax(Handle& h, const dnnl::engine& eng, dnnl::stream& s) {
    struct Case {
        const char* name;
        memory::dims dims;
        int axis;
    };
    for (const Case& c :
         {Case{"32x10 axis 1", {32, 10}, 1}, Case{"64x1000 axis 1", {64, 1000}, 1},
          Case{"8x12x128x128 axis 3", {8, 12, 128, 128}, 3},
          Case{"8x64x28x28 axis 1", {8, 64, 28, 28}, 1}, Case{"1000x64 axis 0", {1000, 64}, 0}}) {
        memory::dims strides(c.dims.size(), 1);
        for (size_t i = c.dims.size() - 1; i-- > 0;)
            strides[i] = strides[i + 1] * c.dims[i + 1];
        memory::desc md(c.dims, memory::data_type::f32, strides);
        TensorShape shape;
        shape.ndim = c.dims.size();
        for (size_t i = 0; i < shape.ndim; ++i)
            shape[i] = static_cast<size_t>(c.dims[i]);
        param::Softmax p;
        p.axis = c.axis;
        for (bool log : {false, true}) {
            auto alg = log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
            std::string name = std::string(log ? "logsoftmax " : "softmax ") + c.name;
            if (wanted(name + " fwd")) {
                dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, md, md,
                                                 c.axis);
                dnnl::softmax_v2_forward::primitive_desc pd(d, user_scratchpad(), eng);
                Call ours = log ? our_call<LogSoftmaxForward>(h, p, {shape})
                                : our_call<SoftmaxForward>(h, p, {shape});
                report((name + " fwd").c_str(), ours,
                       raw_calls(eng, s, dnnl::softmax_v2_forward(pd),
                                 {{DNNL_ARG_SRC, md, md, false}, {DNNL_ARG_DST, md, md, true}},
                                 pd.scratchpad_desc()),
                       pd.impl_info_str());
            }
            if (wanted(name + " bwd")) {
                dnnl::softmax_v2_forward::desc hd(dnnl::prop_kind::forward_training, alg, md, md,
                                                  c.axis);
                dnnl::softmax_v2_forward::primitive_desc hint(hd, eng);
                dnnl::softmax_v2_backward::desc d(alg, md, md, md, c.axis);
                dnnl::softmax_v2_backward::primitive_desc pd(d, user_scratchpad(), eng, hint);
                Call ours = log ? our_call<LogSoftmaxBackward>(h, p, {shape, shape})
                                : our_call<SoftmaxBackward>(h, p, {shape, shape});
                report((name + " bwd").c_str(), ours,
                       raw_calls(eng, s, dnnl::softmax_v2_backward(pd),
                                 {{DNNL_ARG_DST, md, md, false},
                                  {DNNL_ARG_DIFF_DST, md, md, false},
                                  {DNNL_ARG_DIFF_SRC, md, md, true}},
                                 pd.scratchpad_desc()),
                       pd.impl_info_str());
            }
        }
    }
}

}  // namespace

// The CPU, as /proc/cpuinfo names it, and the instruction set oneDNN's kernels use on it: the
// ratios move with both (AMD Zen 4 splits 512-bit operations, Intel's AMX changes the bfloat16
// lines), so a figure read later needs the machine it came from.
// An LSTM layer, issue 12's case ((35, 16, 64) -> 128, bench/rnn_train.py), forward and backward:
// our LSTMForward / LSTMBackward (sgemm and our gate loops) against oneDNN's vanilla_lstm primitive
// (forward_training, then backward with its workspace), which takes the same gate order (i, f, c~,
// o). Its weights are in the layouts it prefers (`any`): "onednn+reorders" reorders them every
// call from ours ((4H, I) row-major: ldgoi), as a training step whose weights change must, and the
// weight gradients back.
void bench_lstm(Handle& h, const dnnl::engine& eng, dnnl::stream& s) {
    const char* fname = "lstm (35, 16, 64) -> 128 fwd";
    const char* bname = "lstm (35, 16, 64) -> 128 bwd";
    if (!wanted(fname) && !wanted(bname))
        return;
    const memory::dim t = 35, n = 16, i = 64, hs = 128;
    auto f32 = memory::data_type::f32;
    memory::desc x({t, n, i}, f32, Tag::tnc), st({1, 1, n, hs}, f32, Tag::ldnc),
            wl({1, 1, i, 4, hs}, f32, Tag::ldgoi), wi({1, 1, hs, 4, hs}, f32, Tag::ldgoi),
            b({1, 1, 4, hs}, f32, Tag::ldgo), y({t, n, hs}, f32, Tag::tnc);
    memory::desc wl_any({1, 1, i, 4, hs}, f32, Tag::any), wi_any({1, 1, hs, 4, hs}, f32, Tag::any);
    auto dir = dnnl::rnn_direction::unidirectional_left2right;
    dnnl::lstm_forward::desc fd(dnnl::prop_kind::forward_training, dir, x, st, st, wl_any, wi_any,
                                b, y, st, st);
    dnnl::lstm_forward::primitive_desc fpd(fd, user_scratchpad(), eng);
    param::LSTM p;
    TensorShape xs{35, 16, 64}, state{16, 128}, w_ih{512, 64}, w_hh{512, 128}, bias{512};
    Call ours_f = our_call<LSTMForward>(h, p, {xs, state, state, w_ih, w_hh, bias});
    memory::desc ws = fpd.workspace_desc();
    RawCalls rf = raw_calls(eng, s, dnnl::lstm_forward(fpd),
                            {{DNNL_ARG_SRC_LAYER, x, fpd.src_layer_desc(), false},
                             {DNNL_ARG_SRC_ITER, st, fpd.src_iter_desc(), false},
                             {DNNL_ARG_SRC_ITER_C, st, fpd.src_iter_c_desc(), false},
                             {DNNL_ARG_WEIGHTS_LAYER, wl, fpd.weights_layer_desc(), false},
                             {DNNL_ARG_WEIGHTS_ITER, wi, fpd.weights_iter_desc(), false},
                             {DNNL_ARG_BIAS, b, fpd.bias_desc(), false},
                             {DNNL_ARG_DST_LAYER, y, fpd.dst_layer_desc(), true},
                             {DNNL_ARG_DST_ITER, st, fpd.dst_iter_desc(), true},
                             {DNNL_ARG_DST_ITER_C, st, fpd.dst_iter_c_desc(), true},
                             {DNNL_ARG_WORKSPACE, ws, ws, true}},
                            fpd.scratchpad_desc());
    report(fname, ours_f, rf, fpd.impl_info_str());
    dnnl::lstm_backward::desc bd(dnnl::prop_kind::backward, dir, x, st, st, wl_any, wi_any, b, y,
                                 st, st, x, st, st, wl_any, wi_any, b, y, st, st);
    dnnl::lstm_backward::primitive_desc bpd(bd, user_scratchpad(), eng, fpd);
    TensorShape reserve{35, 16, 7 * 128}, ys{35, 16, 128};
    Call ours_b = our_call<LSTMBackward>(h, p, {xs, w_ih, w_hh, reserve, ys, state, state});
    RawCalls rb = raw_calls(eng, s, dnnl::lstm_backward(bpd),
                            {{DNNL_ARG_SRC_LAYER, x, bpd.src_layer_desc(), false},
                             {DNNL_ARG_SRC_ITER, st, bpd.src_iter_desc(), false},
                             {DNNL_ARG_SRC_ITER_C, st, bpd.src_iter_c_desc(), false},
                             {DNNL_ARG_WEIGHTS_LAYER, wl, bpd.weights_layer_desc(), false},
                             {DNNL_ARG_WEIGHTS_ITER, wi, bpd.weights_iter_desc(), false},
                             {DNNL_ARG_BIAS, b, bpd.bias_desc(), false},
                             {DNNL_ARG_DST_LAYER, y, bpd.dst_layer_desc(), false},
                             {DNNL_ARG_DST_ITER, st, bpd.dst_iter_desc(), false},
                             {DNNL_ARG_DST_ITER_C, st, bpd.dst_iter_c_desc(), false},
                             {DNNL_ARG_WORKSPACE, ws, ws, false},
                             {DNNL_ARG_DIFF_DST_LAYER, y, bpd.diff_dst_layer_desc(), false},
                             {DNNL_ARG_DIFF_DST_ITER, st, bpd.diff_dst_iter_desc(), false},
                             {DNNL_ARG_DIFF_DST_ITER_C, st, bpd.diff_dst_iter_c_desc(), false},
                             {DNNL_ARG_DIFF_SRC_LAYER, x, bpd.diff_src_layer_desc(), true},
                             {DNNL_ARG_DIFF_SRC_ITER, st, bpd.diff_src_iter_desc(), true},
                             {DNNL_ARG_DIFF_SRC_ITER_C, st, bpd.diff_src_iter_c_desc(), true},
                             {DNNL_ARG_DIFF_WEIGHTS_LAYER, wl, bpd.diff_weights_layer_desc(), true},
                             {DNNL_ARG_DIFF_WEIGHTS_ITER, wi, bpd.diff_weights_iter_desc(), true},
                             {DNNL_ARG_DIFF_BIAS, b, bpd.diff_bias_desc(), true}},
                            bpd.scratchpad_desc());
    report(bname, ours_b, rb, bpd.impl_info_str());
}

std::string cpu_line() {
    std::FILE* f = std::fopen("/proc/cpuinfo", "r");
    std::string name = "unknown CPU", family, model;
    if (f) {
        char buf[1024];
        while (std::fgets(buf, sizeof buf, f) && buf[0] != '\n') {
            std::string line(buf);
            auto value = [&] {
                std::string v = line.substr(line.find(':') + 1);
                v.erase(0, v.find_first_not_of(' '));
                v.erase(v.find_last_not_of(" \n") + 1);
                return v;
            };
            if (line.rfind("model name", 0) == 0)
                name = value();
            else if (line.rfind("cpu family", 0) == 0)
                family = value();
            else if (line.rfind("model\t", 0) == 0)
                model = value();
        }
        std::fclose(f);
    }
    if (!family.empty())
        name += " (family " + family + " model " + model + ")";
    static const std::pair<dnnl::cpu_isa, const char*> isas[] = {
            {dnnl::cpu_isa::avx2, "avx2"},
            {dnnl::cpu_isa::avx512_core, "avx512_core"},
            {dnnl::cpu_isa::avx512_core_vnni, "avx512_core_vnni"},
            {dnnl::cpu_isa::avx512_core_bf16, "avx512_core_bf16"},
            {dnnl::cpu_isa::avx512_core_amx, "avx512_core_amx"}};
    const char* isa = "below avx2";
    for (const auto& [value, label] : isas)
        if (dnnl::get_effective_cpu_isa() == value)
            isa = label;
    return name + ", oneDNN ISA " + isa;
}

int main(int argc, char** argv) {
    // A case name in the place of repeat or of the clock once ran the whole suite without a word
    // (an hour's run for a one-line question): those two places take nothing else.
    if (argc > 1 && std::atoi(argv[1]) <= 0) {
        std::fprintf(stderr, "usage: %s [repeat >= 1] [cpu|wall] [case...]; got repeat '%s'\n",
                     argv[0], argv[1]);
        return 2;
    }
    if (argc > 2 && std::string(argv[2]) != "cpu" && std::string(argv[2]) != "wall") {
        std::fprintf(stderr,
                     "usage: %s [repeat >= 1] [cpu|wall] [case...]; got '%s' for the clock\n",
                     argv[0], argv[2]);
        return 2;
    }
    if (argc > 1)
        g_repeat = std::atoi(argv[1]);
    g_cpu_time = argc > 2 && std::string(argv[2]) == "cpu";
    for (int i = 3; i < argc; ++i) {
        if (std::string(argv[i]) == "ours-vs-raw")
            g_extra_lines = false;
        else if (std::string(argv[i]) == "unchecked")
            g_unchecked = true;
        else
            g_only.emplace_back(argv[i]);
    }
    if (!Handle::x86_available()) {
        std::puts("built without oneDNN: nothing to compare");
        return 0;
    }
    auto handle = Handle::make_x86();
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    const char* threads = std::getenv("OMP_NUM_THREADS");
    std::printf("oneDNN %d.%d.%d, OMP_NUM_THREADS=%s, best of %d, %s time\n", dnnl_version()->major,
                dnnl_version()->minor, dnnl_version()->patch, threads ? threads : "(all)", g_repeat,
                g_cpu_time ? "process CPU" : "wall");
    std::printf("%s\n", cpu_line().c_str());
    for (const ConvCase& c :
         {ConvCase{"conv 3x3 64->64 56x56 b32", 32, 64, 64, 56, 3, 1},
          ConvCase{"conv 1x1 64->256 56x56 b32", 32, 64, 256, 56, 1, 1},
          // ResNet-50's bottleneck 1x1 convolutions and the CIFAR MobileNet's pointwise ones
          // (bench/bench_models.py), for the plain-gemm against blocked choice.
          ConvCase{"conv 1x1 256->64 56x56 b32", 32, 256, 64, 56, 1, 1},
          ConvCase{"conv 1x1 512->128 28x28 b32", 32, 512, 128, 28, 1, 1},
          ConvCase{"conv 1x1 256->1024 14x14 b32", 32, 256, 1024, 14, 1, 1},
          ConvCase{"conv 1x1 32->64 32x32 b32", 32, 32, 64, 32, 1, 1},
          ConvCase{"conv 1x1 128->128 16x16 b32", 32, 128, 128, 16, 1, 1},
          ConvCase{"conv 1x1 512->512 4x4 b32", 32, 512, 512, 4, 1, 1},
          // ResNet-50's last stage and a CIFAR ResNet's 8x8 one: where the input gradient's plain
          // gemm stops paying (conv_common.h).
          ConvCase{"conv 1x1 2048->512 7x7 b32", 32, 2048, 512, 7, 1, 1},
          ConvCase{"conv 1x1 256->256 8x8 b32", 32, 256, 256, 8, 1, 1},
          // ResNet-50's other bottleneck shapes, both sides of the 128-pixel bound (10x10 and
          // 12x12) and batch 1, for the forward's plain-gemm choice.
          ConvCase{"conv 1x1 64->64 56x56 b32", 32, 64, 64, 56, 1, 1},
          ConvCase{"conv 1x1 128->512 28x28 b32", 32, 128, 512, 28, 1, 1},
          ConvCase{"conv 1x1 1024->256 14x14 b32", 32, 1024, 256, 14, 1, 1},
          ConvCase{"conv 1x1 256->256 12x12 b32", 32, 256, 256, 12, 1, 1},
          ConvCase{"conv 1x1 256->256 10x10 b32", 32, 256, 256, 10, 1, 1},
          ConvCase{"conv 1x1 256->64 56x56 b1", 1, 256, 64, 56, 1, 1},
          ConvCase{"depthwise 3x3 64 56x56 b32", 32, 64, 64, 56, 3, 64},
          ConvCase{"depthwise 3x3 64 56x56 b1", 1, 64, 64, 56, 3, 64},
          ConvCase{"depthwise 3x3 s2 128 56x56 b32", 32, 128, 128, 56, 3, 128, 2},
          ConvCase{"depthwise 3x3 s2 128 56x56 b1", 1, 128, 128, 56, 3, 128, 2}})
        bench_conv(*handle, eng, s, c);
    // Small pointwise images (conv_pointwise_matmul.h): both sides of its 64-pixel bound below
    // AVX-512 and of the 128-pixel gemm bound, and batch 1.
    for (const auto& [name, n, ic, oc, hw] :
         {std::tuple<const char*, int, int, int, int>{"conv_bias relu 1x1 256->256 8x8 b32", 32,
                                                      256, 256, 8},
          {"conv_bias relu 1x1 512->512 4x4 b32", 32, 512, 512, 4},
          {"conv_bias relu 1x1 128->128 8x8 b32", 32, 128, 128, 8},
          {"conv_bias relu 1x1 64->64 8x8 b32", 32, 64, 64, 8},
          {"conv_bias relu 1x1 256->256 7x7 b32", 32, 256, 256, 7},
          {"conv_bias relu 1x1 256->256 10x10 b32", 32, 256, 256, 10},
          {"conv_bias relu 1x1 256->256 12x12 b32", 32, 256, 256, 12},
          {"conv_bias relu 1x1 256->256 8x8 b1", 1, 256, 256, 8}})
        bench_conv_bias(*handle, eng, s, name, n, ic, oc, hw);
    for (memory::dim n : {256, 1024, 2048})
        bench_matmul(*handle, eng, s, n);
    bench_pooling(*handle, eng, s);
    bench_pooling_bf16(*handle, eng, s);
    bench_pointwise_bf16_backward_data(*handle);
    bench_conv_layouts(*handle);
    bench_batch_norm(*handle, eng, s);
    bench_softmax(*handle, eng, s);
    bench_lstm(*handle, eng, s);
    return 0;
}
