// The oneDNN lowering: convolutions, max pooling and matmuls with their epilogues, each
// claimed where it maps exactly onto a primitive; the rest is left to later lowerings.
#include "backends/cpu/onednn_conv.hpp"
#include "backends/cpu/onednn_matmul.hpp"
#include "backends/cpu/onednn_pool.hpp"
#include "backends/cpu/program.hpp"

namespace glia::detail::cpu {

void lower_onednn(Lowering& lowering) {
  // In graph order: a kernel's epilogue and output transpose come after its node, and
  // the transposes it reads through before it, so no later kernel claims them first.
  for (std::int64_t i = 0; i < lowering.graph().size(); ++i) {
    auto id = static_cast<ValueId>(i);
    if (lowering.claimed(id)) continue;
    std::unique_ptr<Kernel> kernel;
    switch (lowering.node(id).op) {
      case Op::convolution:
        kernel = make_conv_kernel(lowering, id);
        break;
      case Op::window_max:
      case Op::select_and_scatter:
        kernel = make_pool_kernel(lowering, id);
        break;
      case Op::dot_general:
        kernel = make_matmul_kernel(lowering, id);
        break;
      default:
        break;
    }
    if (kernel) lowering.add(std::move(kernel));
  }
}

}  // namespace glia::detail::cpu
