#include "fused_elemwise.h"

#include "neomeg/dnn/param_base.h"
#include "neomeg/op/defs/elemwise.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace neomeg::graph {
namespace {

constexpr size_t kBufferAlign = 64;

size_t align_up(size_t n) {
    return (n + kBufferAlign - 1) & ~(kBufferAlign - 1);
}

ops::Elemwise make_elemwise(FusedElemwise::Mode mode) {
    dnn::param::Elemwise p;
    p.mode = mode;
    return ops::Elemwise(p);
}

// ---- The float32 loops: modes whose one IEEE operation (or comparison) in float rounds as the
// kernels' formula in double does, so these loops give the Elemwise kernels' results exactly.

bool simple_f32(FusedElemwise::Mode mode) {
    using M = FusedElemwise::Mode;
    switch (mode) {
        case M::RELU:
        case M::ABS:
        case M::NEGATE:
        case M::SQUARE:
        case M::SQRT:
        case M::ADD:
        case M::SUB:
        case M::MUL:
        case M::TRUE_DIV:
        case M::MAX:
        case M::MIN:
        case M::SWITCH_GT0:
        case M::FUSE_MUL_ADD3:  // the kernels' double formula, written out (run_f32)
            return true;
        default:
            return false;
    }
}

// An operand of a run: p[i], or *p for every i when scalar.
struct Run {
    const float* p;
    bool scalar;
};

template <class F>
void unary(Run a, float* d, size_t n, F f) {
    if (a.scalar) {
        std::fill(d, d + n, f(*a.p));
        return;
    }
    for (size_t i = 0; i < n; ++i)
        d[i] = f(a.p[i]);
}

// One loop per broadcast case, so that the compiler vectorises each.
template <class F>
void binary(Run a, Run b, float* d, size_t n, F f) {
    if (a.scalar && b.scalar) {
        std::fill(d, d + n, f(*a.p, *b.p));
    } else if (a.scalar) {
        const float x = *a.p;
        for (size_t i = 0; i < n; ++i)
            d[i] = f(x, b.p[i]);
    } else if (b.scalar) {
        const float y = *b.p;
        for (size_t i = 0; i < n; ++i)
            d[i] = f(a.p[i], y);
    } else {
        for (size_t i = 0; i < n; ++i)
            d[i] = f(a.p[i], b.p[i]);
    }
}

// a * b + c (SGD's updates) with b, the hyperparameter, usually a scalar.
template <class F>
void ternary(Run a, Run b, Run c, float* d, size_t n, F f) {
    if (!a.scalar && b.scalar && !c.scalar) {
        const float y = *b.p;
        for (size_t i = 0; i < n; ++i)
            d[i] = f(a.p[i], y, c.p[i]);
        return;
    }
    const size_t sa = !a.scalar, sb = !b.scalar, sc = !c.scalar;
    for (size_t i = 0; i < n; ++i)
        d[i] = f(a.p[i * sa], b.p[i * sb], c.p[i * sc]);
}

void run_f32(FusedElemwise::Mode mode, const Run* s, float* d, size_t n) {
    using M = FusedElemwise::Mode;
    switch (mode) {
        case M::RELU:
            return unary(s[0], d, n, [](float a) { return a > 0 ? a : 0.0f; });
        case M::ABS:
            return unary(s[0], d, n, [](float a) { return std::fabs(a); });
        case M::NEGATE:
            return unary(s[0], d, n, [](float a) { return -a; });
        case M::SQUARE:
            return unary(s[0], d, n, [](float a) { return a * a; });
        case M::SQRT:
            return unary(s[0], d, n, [](float a) { return std::sqrt(a); });
        case M::ADD:
            return binary(s[0], s[1], d, n, [](float a, float b) { return a + b; });
        case M::SUB:
            return binary(s[0], s[1], d, n, [](float a, float b) { return a - b; });
        case M::MUL:
            return binary(s[0], s[1], d, n, [](float a, float b) { return a * b; });
        case M::TRUE_DIV:
            return binary(s[0], s[1], d, n, [](float a, float b) { return a / b; });
        // The first operand on ties; NaN when either is (a + b is NaN then).
        case M::MAX:
            return binary(s[0], s[1], d, n, [](float a, float b) {
                return a != a || b != b ? a + b : a < b ? b : a;
            });
        case M::MIN:
            return binary(s[0], s[1], d, n, [](float a, float b) {
                return a != a || b != b ? a + b : b < a ? b : a;
            });
        case M::SWITCH_GT0:
            return binary(s[0], s[1], d, n, [](float x, float dy) { return x > 0 ? dy : 0.0f; });
        // As the kernels compute it: the product of two floats is exact in double, so the sum
        // rounds once in double and once to float (a fused multiply-add gives the same).
        case M::FUSE_MUL_ADD3:
            return ternary(s[0], s[1], s[2], d, n, [](float a, float b, float c) {
                return static_cast<float>(static_cast<double>(a) * b + c);
            });
        default:
            break;
    }
}

}  // namespace

FusedElemwise::FusedElemwise(size_t num_inputs, std::vector<Step> steps,
                             std::vector<uint32_t> exports)
    : m_num_inputs(num_inputs), m_steps(std::move(steps)), m_exports(std::move(exports)) {
    NM_THROW_IF(m_steps.empty(), ParamError, "FusedElemwise: an empty chain");
    m_output_of.assign(m_steps.size(), kNoOutput);
    m_output_of.back() = 0;
    for (size_t j = 0; j < m_exports.size(); ++j) {
        uint32_t k = m_exports[j];
        NM_THROW_IF(k + 1 >= m_steps.size() || m_output_of[k] != kNoOutput, ParamError,
                    "FusedElemwise: export ", j, " is step ", k,
                    ", not one of the steps before the last (", m_steps.size(),
                    " steps), or exported twice");
        m_output_of[k] = 1 + j;
    }
    // The step after which each step's result is read no more.
    std::vector<size_t> last_use(m_steps.size(), 0);
    for (size_t k = 0; k < m_steps.size(); ++k) {
        const Step& s = m_steps[k];
        NM_THROW_IF(static_cast<size_t>(dnn::param::Elemwise::arity(s.mode)) != s.operands.size(),
                    ParamError, "FusedElemwise: step ", k, " ", dnn::param::to_string(s.mode),
                    " has ", s.operands.size(), " operands");
        for (uint32_t o : s.operands) {
            NM_THROW_IF(o >= m_num_inputs + k, ParamError, "FusedElemwise: step ", k,
                        " reads operand ", o, ", neither an input nor an earlier step");
            if (o >= m_num_inputs)
                last_use[o - m_num_inputs] = k;
        }
        m_ops.push_back(std::make_shared<ops::Elemwise>(make_elemwise(s.mode)));
        m_all_simple = m_all_simple && simple_f32(s.mode);
    }
    // Block buffers for the intermediate results: a buffer is free again at the step that reads
    // its value last, which may then write its own result there (same block, same indices).
    // Exported steps write their outputs and hold no buffer.
    std::vector<size_t> free_buffers;
    m_buffer_of.assign(m_steps.size() - 1, kNoOutput);
    for (size_t k = 0; k + 1 < m_steps.size(); ++k) {
        for (uint32_t o : m_steps[k].operands)
            if (o >= m_num_inputs && last_use[o - m_num_inputs] == k &&
                m_buffer_of[o - m_num_inputs] != kNoOutput &&
                std::find(free_buffers.begin(), free_buffers.end(),
                          m_buffer_of[o - m_num_inputs]) == free_buffers.end())
                free_buffers.push_back(m_buffer_of[o - m_num_inputs]);
        if (m_output_of[k] != kNoOutput)
            continue;
        if (free_buffers.empty()) {
            m_buffer_of[k] = m_num_buffers++;
        } else {
            m_buffer_of[k] = free_buffers.back();
            free_buffers.pop_back();
        }
    }
}

size_t FusedElemwise::hash() const {
    size_t h = m_num_inputs * 0x9e3779b97f4a7c15ull;
    for (const Step& s : m_steps) {
        h = h * 1000003u ^ static_cast<size_t>(s.mode);
        for (uint32_t o : s.operands)
            h = h * 31u ^ o;
    }
    for (uint32_t k : m_exports)
        h = h * 131u ^ k;
    return h;
}

bool FusedElemwise::is_same(const OpDef& rhs) const {
    const auto* r = dynamic_cast<const FusedElemwise*>(&rhs);
    return r && r->m_num_inputs == m_num_inputs && r->m_steps == m_steps &&
           r->m_exports == m_exports;
}

std::string FusedElemwise::to_string() const {
    std::ostringstream os;
    os << "FusedElemwise(";
    for (size_t k = 0; k < m_steps.size(); ++k) {
        os << (k ? ", " : "") << dnn::param::to_string(m_steps[k].mode) << "(";
        for (size_t j = 0; j < m_steps[k].operands.size(); ++j) {
            uint32_t o = m_steps[k].operands[j];
            os << (j ? "," : "") << (o < m_num_inputs ? 'i' : 's')
               << (o < m_num_inputs ? o : o - m_num_inputs);
        }
        os << ")";
    }
    for (size_t j = 0; j < m_exports.size(); ++j)
        os << (j ? ", s" : "; out s") << m_exports[j];
    os << ")";
    return os.str();
}

std::shared_ptr<OpDef> FusedElemwise::clone() const {
    return std::make_shared<FusedElemwise>(m_num_inputs, m_steps, m_exports);
}

void FusedElemwise::set_param_field(std::string_view name, const ParamValue&) {
    throw dnn::ParamError(dnn::str_cat(to_string(), ": no param field '", name, "'"));
}

std::vector<dnn::TensorLayout> FusedElemwise::infer_layouts(
        CompNode cn, std::span<const dnn::TensorLayout> inputs,
        std::span<const dnn::TensorShape> output_shapes) const {
    NM_THROW_IF(inputs.size() != m_num_inputs, ParamError, to_string(), ": ", m_num_inputs,
                " inputs needed, got ", inputs.size());
    NM_THROW_IF(!output_shapes.empty(), ParamError, to_string(), ": takes no output shapes");
    std::vector<dnn::TensorLayout> values(inputs.begin(), inputs.end());
    for (size_t k = 0; k < m_steps.size(); ++k) {
        std::vector<dnn::TensorLayout> operands;
        for (uint32_t o : m_steps[k].operands)
            operands.push_back(values[o]);
        values.push_back(m_ops[k]->infer_layouts(cn, operands, {})[0]);
    }
    // Every step computes whole blocks of the output, in the inputs' dtype.
    const dnn::TensorLayout& out = values.back();
    for (size_t k = 0; k < m_steps.size(); ++k) {
        const dnn::TensorLayout& v = values[m_num_inputs + k];
        NM_THROW_IF(!v.eq_shape(out) || v.dtype != out.dtype ||
                            (m_num_inputs && v.dtype != inputs[0].dtype),
                    ParamError, to_string(), ": step ", k, " gives ", v.to_string(),
                    "; every step must give the output's shape ", out.TensorShape::to_string(),
                    " in the inputs' dtype");
    }
    return std::vector<dnn::TensorLayout>(1 + m_exports.size(), out);
}

FusedElemwise::Blocking FusedElemwise::blocking_of(const dnn::TensorShape& out) {
    Blocking b;
    size_t k = out.ndim, inner = 1;
    while (k > 0 && inner * out[k - 1] <= kBlockElems) {
        inner *= out[k - 1];
        --k;
    }
    if (k == 0) {  // one block: the whole tensor
        b.axis = 0;
        b.rows = out.ndim ? out[0] : 1;
        b.inner = out.ndim ? inner / std::max<size_t>(out[0], 1) : 1;
        return b;
    }
    b.axis = k - 1;
    b.inner = inner;
    b.rows = std::max<size_t>(1, kBlockElems / inner);
    return b;
}

size_t FusedElemwise::buffer_bytes(const dnn::TensorLayout& out) {
    dnn::TensorShape shape = out;
    if (shape.ndim == 0) {
        shape.ndim = 1;
        shape[0] = 1;
    }
    // A block of either cut: rows of an axis, or a run of the flat output (exec_flat_f32).
    Blocking b = blocking_of(shape);
    size_t block = b.rows * b.inner;
    size_t flat = std::min(kBlockElems, shape.total_nr_elems());
    return align_up(out.dtype.size(std::max(block, flat)));
}

size_t FusedElemwise::workspace_in_bytes(CompNode cn, std::span<const dnn::TensorLayout> inputs,
                                         std::span<const dnn::TensorLayout> outputs) const {
    const dnn::TensorLayout& out = outputs[0];
    dnn::TensorShape shape = out;
    if (shape.ndim == 0) {
        shape.ndim = 1;
        shape[0] = 1;
    }
    Blocking b = blocking_of(shape);
    dnn::TensorShape block;
    block.ndim = shape.ndim - b.axis;
    block[0] = b.rows;
    for (size_t d = 1; d < block.ndim; ++d)
        block[d] = shape[b.axis + d];
    dnn::TensorLayout bl(block, out.dtype);
    // Each step on a whole block, its inputs as exec views them: a broadcast operand keeps its
    // zero strides, and a kernel may need workspace for it that a dense one would not (the x86
    // Elemwise copies an operand without a unit-stride run into dst's layout first).
    std::vector<dnn::TensorLayout> values;
    for (const dnn::TensorLayout& in : inputs) {
        dnn::TensorLayout l = in;
        if (l.ndim == 0) {
            l.ndim = 1;
            l[0] = 1;
            l.stride[0] = 0;
        }
        l = l.broadcast(shape);
        dnn::TensorLayout v = bl;
        for (size_t d = 0; d < block.ndim; ++d)
            v.stride[d] = l.stride[b.axis + d];
        values.push_back(v);
    }
    size_t step_ws = 0;
    for (size_t k = 0; k < m_steps.size(); ++k) {
        std::vector<dnn::TensorLayout> operands;
        for (uint32_t o : m_steps[k].operands)
            operands.push_back(o < values.size() ? values[o] : bl);
        step_ws = std::max(step_ws, m_ops[k]->workspace_in_bytes(cn, operands, {&bl, 1}));
    }
    return m_num_buffers * buffer_bytes(out) + step_ws;
}

void FusedElemwise::exec(CompNode cn, std::span<const dnn::TensorND> inputs,
                         std::span<const dnn::TensorND> outputs, dnn::Workspace workspace) const {
    const dnn::TensorND& out = outputs[0];
    dnn::TensorShape shape = out.layout;
    if (shape.ndim == 0) {  // a scalar: one element, as shape {1}
        shape.ndim = 1;
        shape[0] = 1;
    }
    if (shape.total_nr_elems() == 0)
        return;
    const dnn::DType dtype = out.layout.dtype;
    // The loops read and write the memory from the host: CPU comp nodes only.
    if (m_all_simple && dtype == dnn::dtype::Float32 &&
        cn.device_type() == CompNode::DeviceType::CPU && exec_flat_f32(inputs, outputs, workspace))
        return;
    const size_t esize = dtype.size();
    Blocking b = blocking_of(shape);
    const size_t nd = shape.ndim, bnd = nd - b.axis;

    // Each input as the output's shape (stride 0 where it broadcasts), the output's strides.
    std::vector<dnn::TensorLayout> in_l;
    for (const dnn::TensorND& in : inputs) {
        dnn::TensorLayout l = in.layout;
        if (l.ndim == 0) {
            l.ndim = 1;
            l[0] = 1;
            l.stride[0] = 0;
        }
        in_l.push_back(l.broadcast(shape));
    }
    dnn::TensorLayout out_l(shape, dtype);

    dnn::TensorShape full_block;
    full_block.ndim = bnd;
    full_block[0] = b.rows;
    for (size_t d = 1; d < bnd; ++d)
        full_block[d] = shape[b.axis + d];
    const size_t buffer_bytes = FusedElemwise::buffer_bytes(out.layout);
    dnn::Workspace step_ws{workspace.ptr + m_num_buffers * buffer_bytes,
                           workspace.size - m_num_buffers * buffer_bytes};

    // The views of one block: inputs, then each step's result.
    std::vector<dnn::TensorND> values(m_num_inputs + m_steps.size());
    std::vector<dnn::TensorND> operands;
    std::vector<size_t> idx(nd, 0);  // the block's first index
    for (;;) {
        size_t rows = std::min(b.rows, shape[b.axis] - idx[b.axis]);
        dnn::TensorShape block = full_block;
        block[0] = rows;
        auto view = [&](const dnn::TensorLayout& full, std::byte* base) {
            dnn::TensorLayout l;
            static_cast<dnn::TensorShape&>(l) = block;
            l.dtype = dtype;
            ptrdiff_t offset = 0;
            for (size_t d = 0; d <= b.axis; ++d)
                offset += static_cast<ptrdiff_t>(idx[d]) * full.stride[d];
            for (size_t d = 0; d < bnd; ++d)
                l.stride[d] = full.stride[b.axis + d];
            return dnn::TensorND(base + offset * static_cast<ptrdiff_t>(esize), l);
        };
        for (size_t i = 0; i < m_num_inputs; ++i)
            values[i] = view(in_l[i], static_cast<std::byte*>(inputs[i].raw_ptr()));
        dnn::TensorLayout tmp(block, dtype);
        for (size_t k = 0; k < m_steps.size(); ++k) {
            operands.clear();
            for (uint32_t o : m_steps[k].operands)
                operands.push_back(values[o]);
            dnn::TensorND& result = values[m_num_inputs + k];
            // Every output has the first's shape and is contiguous (the executable's own).
            result = m_output_of[k] != kNoOutput
                             ? view(out_l,
                                    static_cast<std::byte*>(outputs[m_output_of[k]].raw_ptr()))
                             : dnn::TensorND(workspace.ptr + m_buffer_of[k] * buffer_bytes, tmp);
            m_ops[k]->exec(cn, operands, {&result, 1}, step_ws);
        }
        // The next block: along the block axis, then the outer axes as an odometer.
        idx[b.axis] += rows;
        size_t d = b.axis;
        while (idx[d] >= shape[d]) {
            if (d == 0)
                return;
            idx[d] = 0;
            ++idx[--d];
        }
    }
}

}  // namespace neomeg::graph

namespace neomeg::graph {

bool FusedElemwise::exec_flat_f32(std::span<const dnn::TensorND> inputs,
                                  std::span<const dnn::TensorND> outputs,
                                  dnn::Workspace workspace) const {
    const dnn::TensorND& out = outputs[0];
    const size_t n = out.layout.total_nr_elems();
    for (const dnn::TensorND& in : inputs) {
        size_t k = in.layout.total_nr_elems();
        // A full input read as one run must be dense (an executable may hand it a strided view).
        if (in.layout.dtype != dnn::dtype::Float32 || (k != 1 && k != n) ||
            (k == n && n != 1 && !in.layout.is_contiguous()))
            return false;
    }
    // The output's row-major order is every full input's: one run of n elements, in blocks.
    const size_t buffer_floats = buffer_bytes(out.layout) / sizeof(float);
    auto* buffers = reinterpret_cast<float*>(workspace.ptr);
    std::vector<Run> values(m_num_inputs + m_steps.size());
    Run operands[4];
    for (size_t b = 0; b < n; b += kBlockElems) {
        const size_t len = std::min(kBlockElems, n - b);
        for (size_t i = 0; i < m_num_inputs; ++i) {
            const auto* p = static_cast<const float*>(inputs[i].raw_ptr());
            bool scalar = inputs[i].layout.total_nr_elems() == 1 && n != 1;
            values[i] = {scalar ? p : p + b, scalar};
        }
        for (size_t k = 0; k < m_steps.size(); ++k) {
            const Step& s = m_steps[k];
            for (size_t j = 0; j < s.operands.size(); ++j)
                operands[j] = values[s.operands[j]];
            float* d = m_output_of[k] != kNoOutput
                               ? static_cast<float*>(outputs[m_output_of[k]].raw_ptr()) + b
                               : buffers + m_buffer_of[k] * buffer_floats;
            run_f32(s.mode, operands, d, len);
            values[m_num_inputs + k] = {d, false};
        }
    }
    return true;
}

}  // namespace neomeg::graph
