// Naive softmax and log-softmax, forward and backward. The axis is moved last in every layout, so
// each run of `len` logical offsets is one vector to normalise.
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/norm.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

size_t axis_index(const TensorLayout& l, int32_t axis) {
    return static_cast<size_t>(axis < 0 ? axis + static_cast<int32_t>(l.ndim) : axis);
}

std::vector<ptrdiff_t> axis_last_offsets(const TensorLayout& l, size_t axis) {
    std::vector<size_t> perm;
    for (size_t i = 0; i < l.ndim; ++i)
        if (i != axis)
            perm.push_back(i);
    perm.push_back(axis);
    return offsets_of(l.dimshuffle(perm));
}

void forward(const TensorND& src, const TensorND& dst, int32_t axis_param, bool log) {
    size_t axis = axis_index(src.layout, axis_param);
    auto s = axis_last_offsets(src.layout, axis);
    auto d = axis_last_offsets(dst.layout, axis);
    size_t len = src.layout[axis];
    if (s.empty())
        return;
    std::vector<double> row(len);
    for (size_t base = 0; base < s.size(); base += len) {
        // Subtracting the maximum keeps exp from overflowing.
        double mx = -std::numeric_limits<double>::infinity();
        for (size_t k = 0; k < len; ++k) {
            row[k] = load(src, s[base + k]);
            mx = std::max(mx, row[k]);
        }
        double sum = 0;
        for (size_t k = 0; k < len; ++k)
            sum += std::exp(row[k] - mx);
        double log_sum = std::log(sum);
        for (size_t k = 0; k < len; ++k)
            store(dst, d[base + k], log ? row[k] - mx - log_sum : std::exp(row[k] - mx) / sum);
    }
}

void backward(const TensorND& y, const TensorND& dy, const TensorND& grad, int32_t axis_param,
              bool log) {
    size_t axis = axis_index(y.layout, axis_param);
    auto yo = axis_last_offsets(y.layout, axis);
    auto dyo = axis_last_offsets(dy.layout, axis);
    auto go = axis_last_offsets(grad.layout, axis);
    size_t len = y.layout[axis];
    if (yo.empty())
        return;
    for (size_t base = 0; base < yo.size(); base += len) {
        double dot = 0;
        for (size_t k = 0; k < len; ++k)
            dot += log ? load(dy, dyo[base + k]) : load(dy, dyo[base + k]) * load(y, yo[base + k]);
        for (size_t k = 0; k < len; ++k) {
            double yk = load(y, yo[base + k]), dyk = load(dy, dyo[base + k]);
            store(grad, go[base + k], log ? dyk - std::exp(yk) * dot : yk * (dyk - dot));
        }
    }
}

class SoftmaxForwardImpl final : public SoftmaxForward {
public:
    using SoftmaxForward::SoftmaxForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        forward(in[0], out[0], m_param.axis, false);
    }
};

class LogSoftmaxForwardImpl final : public LogSoftmaxForward {
public:
    using LogSoftmaxForward::LogSoftmaxForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        forward(in[0], out[0], m_param.axis, true);
    }
};

class SoftmaxBackwardImpl final : public SoftmaxBackward {
public:
    using SoftmaxBackward::SoftmaxBackward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        backward(in[0], in[1], out[0], m_param.axis, false);
    }
};

class LogSoftmaxBackwardImpl final : public LogSoftmaxBackward {
public:
    using LogSoftmaxBackward::LogSoftmaxBackward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        backward(in[0], in[1], out[0], m_param.axis, true);
    }
};

}  // namespace
NM_REGISTER_NAIVE(SoftmaxForward, SoftmaxForwardImpl);
NM_REGISTER_NAIVE(LogSoftmaxForward, LogSoftmaxForwardImpl);
NM_REGISTER_NAIVE(SoftmaxBackward, SoftmaxBackwardImpl);
NM_REGISTER_NAIVE(LogSoftmaxBackward, LogSoftmaxBackwardImpl);
}  // namespace neomeg::dnn::naive
