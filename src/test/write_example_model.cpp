// Writes the model that the installed-example test (install_example_test.cmake) runs: a linear
// classifier of 4 features into 3 classes, softmax(relu(data @ W + b)), with a dynamic batch.
// With W picking feature j for class j, row (1, 2, 3, 4) is class 2.
//   write_example_model PATH
#include <cstdio>

#include "neomeg/dnn/params/elemwise.h"
#include "neomeg/op/op_defs.h"
#include "neomeg/serialization/model_file.h"

using namespace neomeg;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: write_example_model PATH\n");
        return 2;
    }
    auto cn = CompNode::load("cpu0");
    graph::ComputingGraph g;
    auto* data = g.input("data", {1, 4}, dnn::dtype::Float32, cn);
    float w[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0.1f, 0.1f, 0.1f};
    float b[3] = {0.f, 0.f, 0.5f};
    auto* wv = g.constant(DeviceTensor::from_host(w, {4, 3}, dnn::dtype::Float32, cn), "fc.weight");
    auto* bv = g.constant(DeviceTensor::from_host(b, {1, 3}, dnn::dtype::Float32, cn), "fc.bias");
    auto* y = g.insert1(*make_op_def("MatrixMul"), {data, wv});
    auto add = make_op_def("Elemwise");  // mode ADD by default
    y = g.insert1(*add, {y, bv});
    auto relu = make_op_def("Elemwise");
    relu->set_param_field("mode",
                          EnumValue{static_cast<uint32_t>(dnn::param::Elemwise::Mode::RELU), {}});
    y = g.insert1(*relu, {y});
    auto softmax = make_op_def("SoftmaxForward");
    softmax->set_param_field("axis", int32_t(1));
    y = g.insert1(*softmax, {y});
    serialization::DumpOptions opt;
    opt.user_info = "example classifier";
    opt.input_shapes["data"] = {-1, 4};
    serialization::dump_file(g, std::vector<serialization::NamedVar>{{"prob", y}}, argv[1], opt);
    return 0;
}
