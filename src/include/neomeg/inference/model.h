// NeoMeg's C++ inference API: load a model file written by serialization::dump (or Python's
// megengine.jit.trace.dump), feed its inputs, run it, read its outputs. This header needs only
// the standard library; link NeoMeg::inference (find_package(NeoMeg)). docs/cpp-inference.md
// walks through an example.
//
//   auto model = neomeg::inference::Model::load("lenet.nmeg");
//   model.set_input("data", pixels.data(), {1, 1, 28, 28});   // float pixels[784]
//   model.run();
//   auto prob = model.output("prob");                          // HostTensor
//   const float* p = prob.data<float>();
//
// Errors are exceptions:
//   neomeg::serialization::ModelError      the file is not a valid model (ModelVersionError: a
//                                          format version this build does not read), or its
//                                          graph refuses a new input shape (naming the node)
//   std::system_error                      the file cannot be read
//   std::out_of_range                      no input or output of that name
//   std::invalid_argument                  input data of another dtype, a shape that does not fit
//                                          the model's declared shape, a wrong element type,
//                                          run() before every input is set, an unknown device
//   std::logic_error                       output() before run()
//   neomeg::dnn::Error (a runtime_error)   an op fails while running
//
// Threads: a Model runs on one thread at a time. For several threads, give each its own
// Model::clone(): clones share the model's file bytes and its weights (read once, never written);
// each has its own graph, compiled executable, memory arena and inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "neomeg/serialization/errors.h"

namespace neomeg::inference {

using serialization::ModelError;
using serialization::ModelVersionError;

// A tensor's description. dtype names: "float32", "float16", "bfloat16", "int8", "uint8",
// "int16", "int32", "bool", and the quantized ones with their parameters: "QuantizedS8(0.1)",
// "Quantized8Asymm(0.1, 128)", "QuantizedS32(0.01)" (data<T>() of these is their storage type).
struct TensorInfo {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;  // inputs' declared shapes: -1 for a dimension set at run time
};

// A dense tensor in host memory.
class HostTensor {
public:
    HostTensor() = default;
    HostTensor(std::string dtype, std::vector<int64_t> shape, std::vector<std::byte> bytes);

    const std::string& dtype() const { return m_dtype; }
    const std::vector<int64_t>& shape() const { return m_shape; }
    size_t num_elements() const;
    size_t element_size() const;
    std::span<const std::byte> bytes() const { return m_bytes; }

    // The elements as T; std::invalid_argument when T is not the dtype's element type (float
    // for float32, int32_t for int32, uint8_t for uint8, bool for bool, ...; uint16_t for the
    // 16-bit floats).
    template <class T>
    const T* data() const {
        check_element_type(element_type_of<T>());
        return reinterpret_cast<const T*>(m_bytes.data());
    }
    // Every element converted to double (any real dtype; complex64 throws).
    std::vector<double> to_doubles() const;

private:
    // 0 float, 1 int8, 2 uint8, 3 int16, 4 int32, 5 bool, 6 uint16 (float16/bfloat16 bits), 7
    // anything else.
    template <class T>
    static constexpr int element_type_of() {
        if constexpr (std::is_same_v<T, float>)
            return 0;
        else if constexpr (std::is_same_v<T, int8_t>)
            return 1;
        else if constexpr (std::is_same_v<T, uint8_t>)
            return 2;
        else if constexpr (std::is_same_v<T, int16_t>)
            return 3;
        else if constexpr (std::is_same_v<T, int32_t>)
            return 4;
        else if constexpr (std::is_same_v<T, bool>)
            return 5;
        else if constexpr (std::is_same_v<T, uint16_t>)
            return 6;
        else
            return 7;
    }
    void check_element_type(int type) const;

    std::string m_dtype = "float32";
    std::vector<int64_t> m_shape;
    std::vector<std::byte> m_bytes;
};

struct Options {
    // Where the model runs ("cpu0", "cpux", ...); the CPU by default.
    std::string device = "cpu0";
};

class Model {
public:
    // std::system_error when the file cannot be read; ModelError when it is not a valid model.
    static Model load(const std::string& path, const Options& options = {});
    static Model load(std::span<const uint8_t> bytes, const Options& options = {});

    Model(Model&&) noexcept;
    Model& operator=(Model&&) noexcept;
    ~Model();

    // A model of its own on the same file bytes and weights (see Threads above); inputs set on
    // this one are not carried over.
    Model clone() const;

    // Inputs with their declared shapes (-1: dynamic), and outputs with their shapes for the
    // input shapes of the last set_input (or the model's sample shapes). An output whose shape
    // depends on the data (after a cond_take) gets it only when run: output() has the real one.
    const std::vector<TensorInfo>& inputs() const;
    const std::vector<TensorInfo>& outputs() const;
    std::vector<std::string> input_names() const;
    std::vector<std::string> output_names() const;
    // One input's info with its current (concrete) shape.
    TensorInfo input(std::string_view name) const;

    // Copies `data` (dense elements of the input's dtype) as input `name` of this shape. A shape
    // other than the current one must fit the declared shape (only -1 dimensions may change)
    // and rebuilds the graph for it, once: shapes computed from the inputs' shapes (a flatten's
    // batch) follow, and memory is planned again. The executables of the last few shapes are
    // kept, so alternating batch sizes cost nothing extra after their first run.
    void set_input(std::string_view name, const void* data, std::span<const int64_t> shape);
    void set_input(std::string_view name, const void* data, std::initializer_list<int64_t> shape) {
        set_input(name, data, std::span<const int64_t>(shape.begin(), shape.size()));
    }
    void set_input(std::string_view name, const HostTensor& value);

    // Runs the model on the inputs last set.
    void run();
    // Output `name` of the last run, copied to the host; std::logic_error before the first run.
    HostTensor output(std::string_view name) const;

    // The model file's metadata.
    const std::string& user_info() const;
    const std::string& producer() const;  // "NeoMeg 0.1.0"
    uint32_t format_version() const;

private:
    struct Impl;
    explicit Model(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

}  // namespace neomeg::inference
