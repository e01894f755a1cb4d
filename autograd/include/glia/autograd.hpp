// glia autograd: reverse-mode differentiation as a transform on the traced graph.
#pragma once

#include "glia/autograd/grad.hpp"
#include "glia/autograd/vjp.hpp"
