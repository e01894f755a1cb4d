#include "rules.hpp"
namespace glia::detail {
void add_indexing_rules(OpTable&) {}
}  // namespace glia::detail
