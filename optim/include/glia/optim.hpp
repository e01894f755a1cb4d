// glia optim: gradient transformations and optimizers, schedules, losses, metrics, the
// training step and the training loop.
#pragma once

#include "glia/optim/checkpoint.hpp"
#include "glia/optim/distributed.hpp"
#include "glia/optim/loop.hpp"
#include "glia/optim/losses.hpp"
#include "glia/optim/metrics.hpp"
#include "glia/optim/optimizers.hpp"
#include "glia/optim/plot.hpp"
#include "glia/optim/schedules.hpp"
#include "glia/optim/step.hpp"
#include "glia/optim/transform.hpp"
#include "glia/optim/transforms.hpp"
