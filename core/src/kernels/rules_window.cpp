#include "rules.hpp"
namespace glia::detail {
void add_window_rules(OpTable&) {}
}  // namespace glia::detail
