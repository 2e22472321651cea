#include "src/x86/lowp_plan.h"

#include <string>
#include <utility>
#include <vector>

#include "neomeg/dnn/channels_last.h"
#include "src/x86/parallel.h"
#include "src/x86/type_cvt_hwy.h"

namespace neomeg::dnn::x86 {
namespace {

bool is_lowp(DType dt) {
    return dt == dtype::Float16 || dt == dtype::BFloat16;
}

// Where one tensor of the call lives for the float32 plan.
struct Slot {
    bool convert = false;  // absent tensors pass through
    TensorLayout f32;      // dense float32, the float32 plan's layout
    size_t f32_off = 0;
    bool staged = false;  // a strided 16-bit tensor goes through a dense 16-bit copy
    size_t stage_off = 0;
};

// dst[i] = src[i] converted, split across threads when large.
void convert(DType from, DType to, const std::byte* src, std::byte* dst, size_t n) {
    parallel_ranges(n, n, kParallelGrain, [&](size_t b, size_t e) {
        type_cvt_run(from, to, src + b * from.size(), dst + b * to.size(), e - b);
    });
}

// The inner plan's name with "f32:" after its family: onednn:f32:brg:avx512_core.
std::string name_of(std::string inner) {
    size_t colon = inner.find(':');
    return colon == std::string::npos ? "f32:" + inner : inner.insert(colon + 1, "f32:");
}

class InFloat32Plan final : public Plan {
public:
    InFloat32Plan(std::unique_ptr<Plan> inner, std::vector<Slot> slots, size_t n_inputs,
                  size_t inner_off, size_t total)
        : m_inner(std::move(inner)),
          m_slots(std::move(slots)),
          m_inputs(n_inputs),
          m_inner_off(inner_off),
          m_total(total),
          m_name(name_of(m_inner->name())),
          m_tensors(m_slots.size()) {}

    size_t workspace_in_bytes() const override { return m_total; }
    const char* name() const override { return m_name.c_str(); }

    void run(std::span<const TensorND> tensors, Workspace ws, dnnl::stream& stream) override {
        for (size_t i = 0; i < m_slots.size(); ++i) {
            const Slot& s = m_slots[i];
            if (!s.convert) {
                m_tensors[i] = tensors[i];
                continue;
            }
            m_tensors[i] = TensorND(ws.ptr + s.f32_off, s.f32);
            if (i >= m_inputs)
                continue;
            const TensorND& t = tensors[i];
            const std::byte* src = static_cast<const std::byte*>(t.raw_ptr());
            if (s.staged) {
                copy_to_dense(t, ws.ptr + s.stage_off);
                src = ws.ptr + s.stage_off;
            }
            convert(t.layout.dtype, dtype::Float32, src, ws.ptr + s.f32_off,
                    t.layout.total_nr_elems());
        }
        m_inner->run(m_tensors, {ws.ptr + m_inner_off, ws.size - m_inner_off}, stream);
        stream.wait();
        for (size_t i = m_inputs; i < m_slots.size(); ++i) {
            const Slot& s = m_slots[i];
            if (!s.convert)
                continue;
            const TensorND& t = tensors[i];
            std::byte* dst = s.staged ? ws.ptr + s.stage_off : static_cast<std::byte*>(t.raw_ptr());
            convert(dtype::Float32, t.layout.dtype, ws.ptr + s.f32_off, dst,
                    t.layout.total_nr_elems());
            if (s.staged)
                copy_from_dense(ws.ptr + s.stage_off, t);
        }
    }

private:
    std::unique_ptr<Plan> m_inner;
    std::vector<Slot> m_slots;
    size_t m_inputs, m_inner_off, m_total;
    std::string m_name;
    std::vector<TensorND> m_tensors;  // the float32 plan's tensors, rebuilt per call
};

}  // namespace

bool is_lowp_call(std::span<const TensorLayout> inputs, std::span<const TensorLayout> outputs,
                  bool float32_operands) {
    DType first;
    bool any = false, f32 = false;
    for (auto group : {inputs, outputs})
        for (const TensorLayout& l : group) {
            if (l.ndim == 0)
                continue;
            if (float32_operands && l.dtype == dtype::Float32) {
                f32 = true;
                continue;
            }
            if (!is_lowp(l.dtype) || (any && l.dtype != first))
                return false;
            first = l.dtype;
            any = true;
        }
    return any && (f32 || !float32_operands);
}

std::unique_ptr<Plan> plan_in_float32(std::span<const TensorLayout> inputs,
                                      std::span<const TensorLayout> outputs, const MakePlan& make) {
    std::vector<TensorLayout> f32;
    std::vector<Slot> slots;
    WorkspacePlan ws;
    for (auto group : {inputs, outputs})
        for (const TensorLayout& l : group) {
            Slot s;
            if (l.ndim == 0 || l.dtype == dtype::Float32) {
                s.f32 = l;
                s.f32.dtype = dtype::Float32;
            } else {
                s.convert = true;
                bool keep = is_channels_last(l);
                s.f32 = keep ? channels_last_layout(l, dtype::Float32)
                             : TensorLayout(l, dtype::Float32);
                s.f32_off = ws.add(l.total_nr_elems() * sizeof(float));
                s.staged = !keep && !l.is_contiguous();
                if (s.staged)
                    s.stage_off = ws.add(l.total_nr_elems() * l.dtype.size());
            }
            f32.push_back(s.f32);
            slots.push_back(std::move(s));
        }
    std::span<const TensorLayout> all(f32);
    std::unique_ptr<Plan> inner = make(all.first(inputs.size()), all.subspan(inputs.size()));
    if (!inner)
        return nullptr;
    size_t inner_off = ws.add(0);
    size_t total = inner_off + inner->workspace_in_bytes();
    return std::make_unique<InFloat32Plan>(std::move(inner), std::move(slots), inputs.size(),
                                           inner_off, total);
}

}  // namespace neomeg::dnn::x86
