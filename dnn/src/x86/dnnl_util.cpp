#include "src/x86/dnnl_util.h"

#include <omp.h>

#include <algorithm>
#include <array>

#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {

memory::dims dims_of(const TensorLayout& l) {
    memory::dims d(l.ndim);
    for (size_t i = 0; i < l.ndim; ++i)
        d[i] = static_cast<memory::dim>(l[i]);
    return d;
}

memory::dims strides_of(const TensorLayout& l) {
    memory::dims s(l.ndim);
    for (size_t i = 0; i < l.ndim; ++i)
        s[i] = static_cast<memory::dim>(l.stride[i]);
    return s;
}

std::optional<memory::data_type> dnnl_type_of(DType dt) {
    switch (dt.enumv()) {
        case DTypeEnum::Float32:
            return memory::data_type::f32;
        case DTypeEnum::BFloat16:
            return memory::data_type::bf16;
        case DTypeEnum::Float16:
            return memory::data_type::f16;
        default:
            return std::nullopt;
    }
}

std::optional<memory::desc> plain_desc(const memory::dims& dims, memory::dims strides,
                                       memory::data_type type) {
    for (size_t i = 0; i < dims.size(); ++i)
        if (dims[i] > 1 && strides[i] <= 0)
            return std::nullopt;
    memory::dim dense = 1;
    for (size_t i = dims.size(); i-- > 0;) {
        if (dims[i] == 1)
            strides[i] = dense;
        dense = std::max(dense, strides[i] * dims[i]);
    }
    return memory::desc(dims, type, strides);
}

namespace {

// Calls f(offset of the row's first element, row index) for every innermost row of `l`.
template <class F>
void for_each_row(const TensorLayout& l, F&& f) {
    if (l.total_nr_elems() == 0)
        return;
    if (l.ndim <= 1) {
        f(ptrdiff_t{0}, size_t{0});
        return;
    }
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    size_t rows = l.total_nr_elems() / l[l.ndim - 1];
    ptrdiff_t off = 0;
    for (size_t r = 0; r < rows; ++r) {
        f(off, r);
        for (size_t d = l.ndim - 1; d-- > 0;) {
            off += l.stride[d];
            if (++idx[d] < l[d])
                break;
            off -= l.stride[d] * static_cast<ptrdiff_t>(l[d]);
            idx[d] = 0;
        }
    }
}

// Copies n elements of `size` bytes `step` elements apart; a switch on the size so that the
// common sizes copy whole elements rather than bytes.
template <bool kToDense>
void copy_row(std::byte* strided, ptrdiff_t step, std::byte* dense, size_t n, size_t size) {
    auto run = [&](auto tag) {
        using T = decltype(tag);
        auto* s = reinterpret_cast<T*>(strided);
        auto* d = reinterpret_cast<T*>(dense);
        for (size_t j = 0; j < n; ++j) {
            T& e = s[static_cast<ptrdiff_t>(j) * step];
            if constexpr (kToDense)
                d[j] = e;
            else
                e = d[j];
        }
    };
    switch (size) {
        case 4:
            return run(uint32_t{});
        case 2:
            return run(uint16_t{});
        case 8:
            return run(uint64_t{});
        default:
            return run(uint8_t{});
    }
}

template <bool kToDense>
void copy_dense(const TensorND& t, std::byte* dense) {
    const TensorLayout& l = t.layout;
    auto* base = static_cast<std::byte*>(t.raw_ptr());
    size_t size = l.dtype.size();
    size_t n = l.ndim ? l[l.ndim - 1] : 1;
    ptrdiff_t step = l.ndim ? l.stride[l.ndim - 1] : 1;
    for_each_row(l, [&](ptrdiff_t off, size_t r) {
        copy_row<kToDense>(base + off * static_cast<ptrdiff_t>(size), step, dense + r * n * size, n,
                           size);
    });
}

// The dense row-major tensor of t's shape and dtype at p.
TensorND dense_like(const TensorND& t, void* p) {
    return TensorND(p, TensorLayout(t.layout, t.layout.dtype));
}

// Whether t writes some element twice (a stride of 0 on an axis longer than 1): relayout_copy
// takes no such destination, the element loop keeps the last value as naive's does.
bool writes_twice(const TensorLayout& l) {
    for (size_t i = 0; i < l.ndim; ++i)
        if (l[i] > 1 && l.stride[i] == 0)
            return true;
    return false;
}

}  // namespace

// Through relayout_copy (rows, register-turned transposes, threaded when large): a strided view
// staged for a loop or a primitive, such as softmax's input x[:, :1000], took a single-threaded
// element loop 0.4 ms of a 0.7-ms log-softmax at 4 MiB.
void copy_to_dense(const TensorND& src, void* dense) {
    if (!relayout_copy(src, dense_like(src, dense)))
        copy_dense<true>(src, static_cast<std::byte*>(dense));
}

void copy_from_dense(const void* dense, const TensorND& dst) {
    if (writes_twice(dst.layout) || !relayout_copy(dense_like(dst, const_cast<void*>(dense)), dst))
        copy_dense<false>(dst, static_cast<std::byte*>(const_cast<void*>(dense)));
}

TensorND reversed_from(const TensorND& t, size_t first) {
    TensorLayout l = t.layout;
    ptrdiff_t last = 0;
    for (size_t d = first; d < l.ndim; ++d) {
        if (l[d] == 0)
            return t;
        last += static_cast<ptrdiff_t>(l[d] - 1) * l.stride[d];
        l.stride[d] = -l.stride[d];
    }
    auto* p = static_cast<std::byte*>(t.raw_ptr()) + last * static_cast<ptrdiff_t>(l.dtype.size());
    return TensorND(p, l);
}

size_t WorkspacePlan::add(size_t bytes) {
    size_t off = m_total;
    m_total += (bytes + kAlign - 1) / kAlign * kAlign;
    return off;
}

void Operand::bind(const memory::desc& prim, bool is_output, const dnnl::engine& engine,
                   WorkspacePlan& plan) {
    m_output = is_output;
    if (m_staged)
        m_stage_off = plan.add(m_layout.total_nr_elems() * m_layout.dtype.size());
    m_user_mem = memory(m_user_md, engine, DNNL_MEMORY_NONE);
    if (prim != m_user_md) {
        m_reorder_off = plan.add(prim.get_size());
        m_prim_mem = memory(prim, engine, DNNL_MEMORY_NONE);
        m_reorder = is_output ? dnnl::reorder(m_prim_mem, m_user_mem)
                              : dnnl::reorder(m_user_mem, m_prim_mem);
        m_copy = is_output ? ElementCopy::plan(prim, m_user_md, kSmallReorderBytes)
                           : ElementCopy::plan(m_user_md, prim, kSmallReorderBytes);
        if (is_output && !m_copy)
            m_transpose = BlockTranspose::plan(prim, m_user_md);
    }
}

void Operand::prepare(const TensorND& t, std::byte* ws, dnnl::stream& stream) {
    if (m_cached && m_reorder && !m_output && t.storage) {
        auto found =
                WeightCache::instance().lookup(t, m_reverse_from, m_user_md, m_prim_mem.get_desc());
        if (found.hit) {
            point(m_prim_mem, m_prim_at, found.hit->data);
            m_held = std::move(found.hit);
            return;
        }
        if (found.fill) {
            stage_and_reorder(t, ws, found.fill->data, stream);
            stream.wait();  // filled before another call may read it
            WeightCache::instance().commit(found.fill);
            m_held = std::move(found.fill);
            return;
        }
    }
    stage_and_reorder(t, ws, ws + m_reorder_off, stream);
}

void run_reorder(dnnl::reorder& r, dnnl::stream& stream, dnnl::memory& from, dnnl::memory& to) {
    if (to.get_desc().get_size() > kSmallReorderBytes) {
        r.execute(stream, from, to);
        return;
    }
    // oneDNN sizes its parallel regions by omp_get_max_threads(), the calling thread's own
    // setting: one thread for this call, then the setting restored.
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    r.execute(stream, from, to);
    omp_set_num_threads(threads);
}

void Operand::stage_and_reorder(const TensorND& t, std::byte* ws, void* prim,
                                dnnl::stream& stream) {
    void* user = t.raw_ptr();
    if (m_staged) {
        user = ws + m_stage_off;
        if (!m_output)
            copy_to_dense(view(t), user);
    }
    point(m_user_mem, m_user_at, user);
    if (m_reorder) {
        point(m_prim_mem, m_prim_at, prim);
        if (m_output)
            return;
        if (m_copy)
            m_copy->run(user, prim);
        else
            run_reorder(*m_reorder, stream, m_user_mem, m_prim_mem);
    }
}

void Operand::finish_output(const TensorND& t, std::byte* ws, dnnl::stream& stream) {
    if (m_copy)
        m_copy->run(m_prim_at, m_user_at);
    else if (m_transpose)
        m_transpose->run(m_prim_at, m_user_at);
    else if (m_reorder)
        run_reorder(*m_reorder, stream, m_prim_mem, m_user_mem);
    if (m_staged)
        copy_from_dense(ws + m_stage_off, view(t));
}

PrimitivePlan::PrimitivePlan(const dnnl::engine& engine, std::string_view impl)
    : m_engine(engine), m_name(str_cat("onednn:", impl)) {}

PrimitivePlan::PrimitivePlan(dnnl::primitive prim, const dnnl::primitive_desc& pd,
                             const dnnl::engine& engine, std::string_view impl)
    : PrimitivePlan(engine, impl) {
    add_step(std::move(prim), pd);
}

void PrimitivePlan::add_step(dnnl::primitive prim, const dnnl::primitive_desc_base& pd) {
    m_steps.push_back({std::move(prim), pd.scratchpad_desc(), {}});
}

void PrimitivePlan::add(int arg, Operand op, const memory::desc& prim, bool is_output) {
    add_at(m_next_tensor++, arg, std::move(op), prim, is_output);
}

void PrimitivePlan::add_at(size_t tensor, int arg, Operand op, const memory::desc& prim,
                           bool is_output) {
    op.bind(prim, is_output, m_engine, m_ws);
    m_steps.back().args[arg] = op.prim_memory();
    m_operands.push_back(std::move(op));
    m_tensor_of.push_back(tensor);
}

void PrimitivePlan::use_operand(size_t step, int arg, size_t operand) {
    m_steps[step].args[arg] = m_operands[operand].prim_memory();
}

size_t PrimitivePlan::add_buffer(int arg, const memory::desc& md) {
    size_t off = m_ws.add(md.get_size());
    m_buffers.push_back({off, memory(md, m_engine, DNNL_MEMORY_NONE)});
    m_steps.back().args[arg] = m_buffers.back().mem;
    return off;
}

void PrimitivePlan::use(int arg, size_t buffer_offset) {
    for (const Buffer& b : m_buffers)
        if (b.offset == buffer_offset)
            m_steps.back().args[arg] = b.mem;
}

void PrimitivePlan::finalize() {
    // The steps run one after another, so one buffer, as large as the largest need, serves all.
    size_t bytes = 0;
    for (const Step& s : m_steps)
        bytes = std::max(bytes, s.scratch_md.get_size());
    if (bytes == 0)
        return;
    m_scratch_bytes = bytes;
    m_scratch_off = m_ws.add(bytes);
    for (Step& s : m_steps)
        if (s.scratch_md.get_size() > 0)
            s.args[DNNL_ARG_SCRATCHPAD] = memory(s.scratch_md, m_engine, DNNL_MEMORY_NONE);
}

void PrimitivePlan::run(std::span<const TensorND> tensors, Workspace ws, dnnl::stream& stream) {
    for (size_t i = 0; i < m_operands.size(); ++i)
        m_operands[i].prepare(tensors[m_tensor_of[i]], ws.ptr, stream);
    // Data pointers set only where they changed (the same workspace call after call, mostly).
    for (Buffer& b : m_buffers)
        if (b.at != ws.ptr + b.offset) {
            b.at = ws.ptr + b.offset;
            b.mem.set_data_handle(b.at);
        }
    for (Step& s : m_steps) {
        if (auto it = s.args.find(DNNL_ARG_SCRATCHPAD);
            it != s.args.end() && s.scratch_at != ws.ptr + m_scratch_off) {
            s.scratch_at = ws.ptr + m_scratch_off;
            it->second.set_data_handle(s.scratch_at);
        }
        s.prim.execute(stream, s.args);
    }
    for (size_t i = 0; i < m_operands.size(); ++i)
        if (m_operands[i].is_output())
            m_operands[i].finish_output(tensors[m_tensor_of[i]], ws.ptr, stream);
    stream.wait();
    for (Operand& op : m_operands)
        op.release();
}

}  // namespace neomeg::dnn::x86
