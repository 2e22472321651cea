// The contract every kernel-library operator follows. The concrete operator classes
// (ConvolutionForward, Elemwise, ...) are generated from dnn/ops/defs/<group>.py into
// <neomeg/dnn/operators/<group>.h> (all of them: <neomeg/dnn/operators.h>); their layout rules
// live in dnn/src/common/<op>.cpp and their kernels in dnn/src/<backend>/.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/op_type.h"
#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn {

class Handle;
class OperatorBase;

// Told of every run of the operators it is attached to, after the kernel returned: the x86 handle
// reports the kernel each op ran (NEOMEG_DEBUG=1) and warns of float32 ops left on naive kernels.
class ExecObserver {
public:
    virtual ~ExecObserver() = default;
    virtual void ran(const OperatorBase& op, std::span<const TensorND> inputs,
                     std::span<const TensorND> outputs) = 0;
};

class OperatorBase {
public:
    OperatorBase(Handle* handle, OpType type) : m_handle(handle), m_type(type) {}
    virtual ~OperatorBase() = default;
    OperatorBase(const OperatorBase&) = delete;
    OperatorBase& operator=(const OperatorBase&) = delete;

    Handle* handle() const { return m_handle; }
    OpType type() const { return m_type; }
    const char* name() const { return op_type_name(m_type); }
    // "Name(field=value, ...)", for error messages.
    virtual std::string param_str() const = 0;

    // Number of inputs/outputs; ops with a variable count report what their inputs/params imply
    // (-1 from num_inputs means any count).
    virtual int num_inputs() const = 0;
    virtual size_t num_outputs() const = 0;

    // Computes output layouts from input layouts and params. Generator ops (Fill, Eye, RNG, ...)
    // have no input that fixes the output shape: their callers set outputs[i]'s shape, and
    // deduce_layout checks it and fills in dtype and strides.
    // Throws ShapeError/DTypeError/ParamError naming the op, the layouts and the params.
    virtual void deduce_layout(std::span<const TensorLayout> inputs,
                               std::span<TensorLayout> outputs) = 0;

    // Checks that exec may run on these layouts with this much workspace: outputs must equal what
    // deduce_layout gives (strides may differ where the kernel accepts strided output).
    virtual void check_exec(std::span<const TensorLayout> inputs,
                            std::span<const TensorLayout> outputs, size_t workspace_in_bytes);

    // Workspace handed to exec is at least 16-byte aligned (the eager runtime gives 64).
    virtual size_t get_workspace_in_bytes(std::span<const TensorLayout> /*inputs*/,
                                          std::span<const TensorLayout> /*outputs*/) {
        return 0;
    }

    // Runs the kernel after check_exec on the tensors' layouts; bad layouts throw, never crash.
    void exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
              Workspace workspace = {});
    // Runs the kernel without checking, for callers that already ran deduce_layout/check_exec
    // on these layouts (the eager runtime's cached path).
    void exec_unchecked(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                        Workspace workspace = {}) {
        try {
            do_exec(inputs, outputs, workspace);
        } catch (const UnsupportedDTypeError& e) {
            throw DTypeError(errmsg(e.what()));
        }
        if (m_observer) [[unlikely]]
            m_observer->ran(*this, inputs, outputs);
    }

    // The handle that creates an operator may attach an observer (it outlives the operator).
    void set_exec_observer(ExecObserver* observer) { m_observer = observer; }

protected:
    // The kernel; each backend's implementation class overrides it.
    virtual void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                         Workspace workspace) = 0;

    // The message prefix "<op>(<params>): " followed by the parts; see NM_REQUIRE.
    template <class... Args>
    std::string errmsg(Args&&... parts) const {
        return str_cat(param_str(), ": ", std::forward<Args>(parts)...);
    }
    void check_num_inputs(std::span<const TensorLayout> inputs) const;
    // Joins layouts as "{2,3} float32, {3} float32".
    static std::string layouts_str(std::span<const TensorLayout> layouts);

private:
    Handle* m_handle;
    OpType m_type;
    ExecObserver* m_observer = nullptr;
};

}  // namespace neomeg::dnn

// Checks in an operator's member functions (layout rules above all): throws
// Err("<op>(<params>): parts...") unless cond holds. Macros, so that the message parts (layout
// strings and the like) are built only on failure: layout rules run on every eager call.
//   NM_REQUIRE(ShapeError, a.ndim == 4, "src ", a.to_string(), " is not 4-D");
#define NM_REQUIRE(Err, cond, ...)                               \
    do {                                                         \
        if (!(cond))                                             \
            throw ::neomeg::dnn::Err(this->errmsg(__VA_ARGS__)); \
    } while (0)
// The same on behalf of `op` from outside its members (shared helpers of several ops).
#define NM_OP_REQUIRE(op, Err, cond, ...)                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            throw ::neomeg::dnn::Err(::neomeg::dnn::str_cat((op).param_str(), ": ", __VA_ARGS__)); \
    } while (0)
