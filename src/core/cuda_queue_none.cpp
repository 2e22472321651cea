// A build without CUDA has no devices, so no GPU node ever asks for a queue.
#include <stdexcept>

#include "device_queue.h"

namespace neomeg {

std::unique_ptr<DeviceQueue> make_cuda_queue(int device, int) {
    throw std::runtime_error("gpu" + std::to_string(device) + ": NeoMeg was built without CUDA");
}

}  // namespace neomeg
