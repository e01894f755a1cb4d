#include "glia/core/expr.hpp"
