#include "lowering/instr_text.hpp"

#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"

namespace glia::lowering {

std::string computed_value(const FusedSpec::Instr& in, const std::string& a, const std::string& b,
                           const std::string& c, const std::string& cast_type, const char* who) {
  using Code = FusedSpec::Code;
  switch (in.code) {
    case Code::unary:
    case Code::binary:
    case Code::compare: {
      const EwRow* row = ew_row(in.op);
      check(row != nullptr, who, ": no C function for ", op_name(in.op));
      const DType operands = in.code == Code::compare ? in.src_dtype : in.dtype;
      return cat("glia_", row->c_stem, "_", ew_c_type(operands), "(", a,
                 in.code == Code::unary ? "" : ", " + b, ")");
    }
    case Code::select:
      return cat(a, " ? ", b, " : ", c);
    case Code::cast:
      return cat("(", cast_type, ")", a);
    default:
      throw Error(cat(who, ": instruction ", int(in.code), " computes no value of its own"));
  }
}

}  // namespace glia::lowering
