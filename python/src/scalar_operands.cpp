#include "scalar_operands.h"

#include <array>
#include <cstring>

#include "neomeg/imperative/dtr.h"
#include "neomeg/imperative/trace.h"

namespace neomeg::python::fast {
namespace {

// Direct-mapped by the value's bits: a program's scalars are few (0, 1, eps, a learning rate),
// and a collision only makes the tensor again.
struct Kept {
    imperative::Tensor tensor;
    uint32_t bits = 0;
};
constexpr size_t kSlots = 32;

imperative::Tensor make(uint32_t bits, dnn::DType dt, CompNode cn) {
    return imperative::Tensor::from_host(&bits, dnn::TensorShape{}, dt, cn);
}

}  // namespace

imperative::Tensor scalar_operand(uint32_t bits, dnn::DType dt, CompNode cn) {
    // A trace records its own constants and DTR its own values; device memory is left out, as
    // a thread's kept tensors are freed at its exit, which may follow the device runtime's.
    if (imperative::TraceRecorder::any_active() || imperative::dtr::active() ||
        cn.device_type() != CompNode::DeviceType::CPU)
        return make(bits, dt, cn);
    thread_local std::array<Kept, kSlots> kept;
    Kept& slot = kept[(bits ^ (bits >> 16) ^ (bits >> 24)) % kSlots];
    const imperative::Tensor& t = slot.tensor;
    if (!t.valid() || slot.bits != bits || t.dtype() != dt || t.comp_node() != cn) {
        slot.tensor = make(bits, dt, cn);
        slot.bits = bits;
    }
    return slot.tensor;
}

}  // namespace neomeg::python::fast
