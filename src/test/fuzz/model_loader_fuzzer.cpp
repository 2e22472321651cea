// libFuzzer target for the model loader (NEOMEG_FUZZ=ON with clang; scripts/fuzz.sh builds it and
// runs it for a bounded time from seed models). Every input must load to a ModelError, or to a
// graph that compiles and runs (or whose op refuses at run time with a dnn::Error); anything else
// (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "neomeg/serialization/model_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace neomeg;
    try {
        auto loaded = serialization::load({data, size});
        // Large tensors are valid but slow to run: a loaded graph runs only when it is small.
        for (graph::VarNode* v : loaded.graph->vars())
            if (v->dtype().size(v->shape().total_nr_elems()) > (1 << 16))
                return 0;
        auto exe = loaded.graph->compile(loaded.output_vars());
        for (const auto& slot : exe->inputs()) {
            std::vector<uint8_t> zeros(slot.layout.dtype.size(slot.layout.total_nr_elems()));
            exe->set_input(slot.name, DeviceTensor::from_host(zeros.data(), slot.layout,
                                                              slot.layout.dtype, slot.comp_node));
        }
        exe->execute();
    } catch (const serialization::ModelError&) {
    } catch (const dnn::Error&) {
    }
    return 0;
}
