#include "cuda/cuda_test.h"

namespace neomeg::dnn::test {

std::vector<HostTensor> run_on_device(OperatorBase& op, const std::vector<HostTensor>& inputs,
                                      const std::vector<TensorLayout>& out_layouts) {
    std::vector<DeviceTensor> din, dout;
    std::vector<TensorND> in_nds, out_nds;
    std::vector<TensorLayout> in_layouts;
    for (auto& t : inputs) {
        din.push_back(DeviceTensor::from(t));
        in_layouts.push_back(t.layout());
    }
    for (auto& l : out_layouts)
        dout.emplace_back(l);
    for (auto& d : din)
        in_nds.push_back(d.nd());
    for (auto& d : dout)
        out_nds.push_back(d.nd());
    size_t ws = op.get_workspace_in_bytes(in_layouts, out_layouts);
    DeviceTensor workspace(TensorLayout({ws}, dtype::Uint8));
    op.exec(in_nds, out_nds, {static_cast<std::byte*>(workspace.nd().raw_ptr()), ws});
    std::vector<HostTensor> outs;
    for (auto& d : dout)
        outs.push_back(d.to_host());
    return outs;
}

}  // namespace neomeg::dnn::test
