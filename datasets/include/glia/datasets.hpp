// glia datasets: file readers (IDX, NPY, NPZ, CSV) and batching.
#pragma once

#include "glia/datasets/csv.hpp"
#include "glia/datasets/dataset.hpp"
#include "glia/datasets/idx.hpp"
#include "glia/datasets/npy.hpp"
