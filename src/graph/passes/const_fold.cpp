#include "neomeg/graph/passes.h"

namespace neomeg::graph {

size_t fold_constants(ComputingGraph& graph, std::vector<VarNode*>& outputs) {
    size_t folded = 0;
    // In topological order, a node whose inputs were folded just before is folded too.
    for (OperatorNode* node : graph.topo_order(outputs)) {
        bool all_const = true;
        for (const VarNode* in : node->inputs())
            all_const &= in->kind() == VarNode::Kind::Const;
        // A dynamic shape is known only when the executable runs the node (value_infer.h). A
        // custom op (megengine.distributed's collectives) runs on every execution: what it does
        // matters beyond its outputs (its peers wait for it), even on constant inputs. A random
        // op (a generator has no inputs at all) draws anew on every execution.
        if (!all_const || (!node->outputs().empty() && node->outputs()[0]->shape_dynamic()) ||
            node->op().kind() == OpKind::Custom || node->op().seed())
            continue;
        // A training step's embedding gradient starts from a broadcast zero, which folded into a
        // 30 MiB constant of zeros (BERT-mini's 30522 x 256 table) held between steps.
        size_t in_bytes = 0, out_bytes = 0;
        for (const VarNode* in : node->inputs())
            in_bytes += in->layout().access_bytes();
        for (const VarNode* out : node->outputs())
            out_bytes += out->layout().access_bytes();
        if (out_bytes > in_bytes + kFoldGrowthLimit)
            continue;
        CompNode cn = node->comp_node();
        std::vector<dnn::TensorND> in_nd, out_nd;
        std::vector<dnn::TensorLayout> in_layouts, out_layouts;
        for (const VarNode* in : node->inputs()) {
            in_nd.push_back(in->value().as_nd());
            in_layouts.push_back(in->layout());
        }
        std::vector<DeviceTensor> values;
        for (const VarNode* out : node->outputs()) {
            values.push_back(DeviceTensor::empty(out->shape(), out->dtype(), cn));
            out_nd.push_back(values.back().as_nd());
            out_layouts.push_back(out->layout());
        }
        size_t ws_size = node->op().workspace_in_bytes(cn, in_layouts, out_layouts);
        Blob ws(cn, ws_size);
        node->op().exec(cn, in_nd, out_nd, {ws.ptr(), ws_size});
        cn.sync();
        for (size_t i = 0; i < values.size(); ++i) {
            VarNode* out = node->outputs()[i];
            VarNode* c = graph.constant(std::move(values[i]), out->name());
            graph.replace_var(out, c);
            for (VarNode*& o : outputs)
                if (o == out)
                    o = c;
        }
        graph.erase(node);
        ++folded;
    }
    return folded;
}

}  // namespace neomeg::graph
