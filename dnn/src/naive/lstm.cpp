// Naive LSTMForward/Backward: every tensor is read into a dense double array in logical order
// (any strides), the recurrence runs in plain loops with products accumulated in double (as
// naive MatrixMul's), and the results are stored through the outputs' strides. h and c are
// rounded to float32 after each step, as the y output and a float32 kernel carry them; the
// backward's recurrent gradients stay in double.
#include <cmath>
#include <vector>

#include "neomeg/dnn/operators/rnn.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

std::vector<double> read(const TensorND& t) {
    std::vector<double> v;
    v.reserve(t.layout.total_nr_elems());
    for (ptrdiff_t off : offsets_of(t.layout))
        v.push_back(load(t, off));
    return v;
}

void write(const TensorND& t, const std::vector<double>& v) {
    auto offs = offsets_of(t.layout);
    for (size_t k = 0; k < offs.size(); ++k)
        store(t, offs[k], v[k]);
}

double sigmoid(double a) {
    return 1.0 / (1.0 + std::exp(-a));
}

double to_float(double v) {
    return static_cast<double>(static_cast<float>(v));
}

// The step at position s of the order the recurrence takes.
size_t step_time(size_t s, size_t t, bool reverse) {
    return reverse ? t - 1 - s : s;
}

class LSTMForwardImpl final : public LSTMForward {
public:
    using LSTMForward::LSTMForward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorLayout& xl = in[0].layout;
        size_t t_len = xl[0], batch = xl[1], isz = xl[2], hs = in[1].layout[1], g4 = 4 * hs;
        auto x = read(in[0]), h = read(in[1]), c = read(in[2]), w_ih = read(in[3]),
             w_hh = read(in[4]);
        std::vector<double> bias = m_param.bias ? read(in[5]) : std::vector<double>(g4, 0.0);
        for (double* s : {h.data(), c.data()})
            for (size_t k = 0; k < batch * hs; ++k)
                s[k] = to_float(s[k]);
        std::vector<double> y(t_len * batch * hs), reserve(t_len * batch * 7 * hs), a(g4);
        for (size_t s = 0; s < t_len; ++s) {
            size_t t = step_time(s, t_len, m_param.reverse);
            for (size_t b = 0; b < batch; ++b) {
                const double* xr = x.data() + (t * batch + b) * isz;
                double* hr = h.data() + b * hs;
                double* cr = c.data() + b * hs;
                for (size_t r = 0; r < g4; ++r) {
                    double acc = bias[r];
                    for (size_t k = 0; k < isz; ++k)
                        acc += xr[k] * w_ih[r * isz + k];
                    for (size_t k = 0; k < hs; ++k)
                        acc += hr[k] * w_hh[r * hs + k];
                    a[r] = acc;
                }
                double* res = reserve.data() + (t * batch + b) * 7 * hs;
                for (size_t j = 0; j < hs; ++j) {
                    double i = sigmoid(a[j]), f = sigmoid(a[hs + j]), g = std::tanh(a[2 * hs + j]),
                           o = sigmoid(a[3 * hs + j]);
                    double c_new = to_float(f * cr[j] + i * g), tc = std::tanh(c_new);
                    double gates[7] = {i, f, g, o, hr[j], cr[j], tc};
                    for (size_t q = 0; q < 7; ++q)
                        res[q * hs + j] = gates[q];
                    cr[j] = c_new;
                    y[(t * batch + b) * hs + j] = to_float(o * tc);
                }
                for (size_t j = 0; j < hs; ++j)
                    hr[j] = y[(t * batch + b) * hs + j];
            }
        }
        write(out[0], y);
        write(out[1], h);
        write(out[2], c);
        write(out[3], reserve);
    }
};

class LSTMBackwardImpl final : public LSTMBackward {
public:
    using LSTMBackward::LSTMBackward;
    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace) override {
        const TensorLayout& xl = in[0].layout;
        size_t t_len = xl[0], batch = xl[1], isz = xl[2], hs = in[1].layout[0] / 4, g4 = 4 * hs;
        auto x = read(in[0]), w_ih = read(in[1]), w_hh = read(in[2]), reserve = read(in[3]),
             dy = read(in[4]), dh = read(in[5]), dc = read(in[6]);
        // dg: the gradient of the gates' pre-activations a, per step and row.
        std::vector<double> dg(t_len * batch * g4), dh_next(batch * hs);
        for (size_t s = t_len; s-- > 0;) {
            size_t t = step_time(s, t_len, m_param.reverse);
            for (size_t b = 0; b < batch; ++b) {
                const double* res = reserve.data() + (t * batch + b) * 7 * hs;
                double* d = dg.data() + (t * batch + b) * g4;
                for (size_t j = 0; j < hs; ++j) {
                    double i = res[j], f = res[hs + j], g = res[2 * hs + j], o = res[3 * hs + j],
                           c_prev = res[5 * hs + j], tc = res[6 * hs + j];
                    double dhj = dy[(t * batch + b) * hs + j] + dh[b * hs + j];
                    double dcj = dc[b * hs + j] + dhj * o * (1 - tc * tc);
                    d[j] = dcj * g * i * (1 - i);
                    d[hs + j] = dcj * c_prev * f * (1 - f);
                    d[2 * hs + j] = dcj * i * (1 - g * g);
                    d[3 * hs + j] = dhj * tc * o * (1 - o);
                    dc[b * hs + j] = dcj * f;
                }
                for (size_t k = 0; k < hs; ++k) {
                    double acc = 0;
                    for (size_t r = 0; r < g4; ++r)
                        acc += d[r] * w_hh[r * hs + k];
                    dh_next[b * hs + k] = acc;
                }
            }
            dh = dh_next;
        }
        size_t rows = t_len * batch;
        std::vector<double> dx(rows * isz, 0.0), dw_ih(g4 * isz, 0.0), dw_hh(g4 * hs, 0.0),
                dbias(g4, 0.0);
        for (size_t n = 0; n < rows; ++n) {
            const double* d = dg.data() + n * g4;
            const double* h_prev = reserve.data() + n * 7 * hs + 4 * hs;
            for (size_t r = 0; r < g4; ++r) {
                dbias[r] += d[r];
                for (size_t k = 0; k < isz; ++k) {
                    dx[n * isz + k] += d[r] * w_ih[r * isz + k];
                    dw_ih[r * isz + k] += d[r] * x[n * isz + k];
                }
                for (size_t k = 0; k < hs; ++k)
                    dw_hh[r * hs + k] += d[r] * h_prev[k];
            }
        }
        write(out[0], dx);
        write(out[1], dh);
        write(out[2], dc);
        write(out[3], dw_ih);
        write(out[4], dw_hh);
        if (m_param.bias)
            write(out[5], dbias);
    }
};

}  // namespace
NM_REGISTER_NAIVE(LSTMForward, LSTMForwardImpl);
NM_REGISTER_NAIVE(LSTMBackward, LSTMBackwardImpl);
}  // namespace neomeg::dnn::naive
