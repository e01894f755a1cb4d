#include "glia/core/op.hpp"

#include <ostream>

#include "rules.hpp"

namespace glia {

namespace {

detail::OpTable make_table() {
  detail::OpTable table{{
#define GLIA_OP_ROW(e, name, arity, attr, cls) \
  OpInfo{Op::e, name, arity, AttrKind::attr, OpClass::cls, nullptr, nullptr},
      GLIA_OPS(GLIA_OP_ROW)
#undef GLIA_OP_ROW
  }};
  detail::add_leaf_rules(table);
  detail::add_elementwise_rules(table);
  detail::add_layout_rules(table);
  detail::add_indexing_rules(table);
  detail::add_reduction_rules(table);
  detail::add_contraction_rules(table);
  detail::add_window_rules(table);
  detail::add_random_rules(table);
  detail::add_control_rules(table);
  detail::add_collective_rules(table);
  return table;
}

const detail::OpTable& table() {
  static const detail::OpTable t = make_table();
  return t;
}

}  // namespace

const OpInfo& op_info(Op op) {
  auto i = static_cast<std::size_t>(op);
  check(i < table().size(), "op_info: invalid op ", i);
  return table()[i];
}

Op op_from_name(std::string_view name) {
  for (const OpInfo& row : table())
    if (row.name == name) return row.op;
  throw Error(cat("unknown op '", name, "'"));
}

std::ostream& operator<<(std::ostream& out, Op op) { return out << op_name(op); }

}  // namespace glia
