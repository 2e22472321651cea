// Layout rule of NMSKeep: boxes (B, N, 4) float32 give indices (B, max_output) and count (B,),
// both int32. The capacity is the param, not the data, so the shapes are static; count says how
// many entries of each row are valid.
#include <limits>

#include "neomeg/dnn/operators/vision.h"

namespace neomeg::dnn {

void NMSKeep::deduce_layout(std::span<const TensorLayout> inputs, std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    const TensorLayout& boxes = inputs[0];
    NM_REQUIRE(DTypeError, boxes.dtype == dtype::Float32, "boxes must be float32, got ",
               boxes.to_string());
    NM_REQUIRE(ShapeError, boxes.ndim == 3 && boxes.shape[2] == 4,
               "boxes must have shape (batch, N, 4), got ", boxes.TensorShape::to_string());
    NM_REQUIRE(ShapeError,
               boxes.shape[1] <= static_cast<size_t>(std::numeric_limits<int32_t>::max()), "boxes ",
               boxes.to_string(), " has more boxes than int32 indices can address");
    size_t batch = boxes.shape[0];
    outputs[0] = TensorLayout({batch, static_cast<size_t>(m_param.max_output)}, dtype::Int32);
    outputs[1] = TensorLayout({batch}, dtype::Int32);
}

}  // namespace neomeg::dnn
