#include "rules.hpp"
namespace glia::detail {
void add_layout_rules(OpTable&) {}
}  // namespace glia::detail
