// glia datasets: file readers (IDX, NPY) and batching.
#pragma once

#include "glia/datasets/dataset.hpp"
#include "glia/datasets/idx.hpp"
#include "glia/datasets/npy.hpp"
