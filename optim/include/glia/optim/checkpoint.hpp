// Checkpoints: one HDF5 file holding a model's architecture (JSON), its parameters and
// state, the optimizer state and the loop's position and history, so that a run can be
// rebuilt, inspected (e.g. with h5py; the layout is in the README) and resumed exactly.
//   glia::save_checkpoint("m.h5", model, loop_state);  // a temporary file, then a rename
//   glia::Checkpoint c = glia::load_checkpoint("m.h5");
//   glia::LoopState s = loop.resume(train_batches, {.epochs = 5}, c.loop);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "glia/optim/loop.hpp"

namespace glia {

// The layout version written to the file's `format_version` attribute; files of a newer
// version are refused.
inline constexpr std::int64_t kCheckpointFormatVersion = 1;

struct Checkpoint {
  std::string path;
  std::int64_t format_version = kCheckpointFormatVersion;
  // model_to_json of the saved model; empty when the model had no JSON description (a
  // custom layer), with the reason in architecture_note.
  std::string architecture;
  std::string architecture_note;
  // Where the run stands, ready for Loop::resume: train holds the parameters, model state,
  // optimizer state, step, lr_scale and seed; epoch counts the completed epochs and
  // iteration the batches done in the next one, whose aggregates so far are in metrics;
  // history, epoch_seconds, total_iterations and samples as the run had them.
  LoopState loop;
  std::string saved_at;                       // the loop event it was saved at, or "manual"
  std::map<std::string, std::string> config;  // the metadata given to save_checkpoint

  // The model rebuilt from the architecture (model_from_json); glia::Error without one.
  Model model() const;
};

// Writes a checkpoint of `state` (a loop state, e.g. inside a handler) to `path`. The file
// is written to a temporary file in the same folder, flushed to disk and renamed over
// `path`, so a crash never leaves `path` half written. Layer, parameter and metric names
// become HDF5 names and must not contain '/'.
void save_checkpoint(const std::string& path, const Model& model, const LoopState& state,
                     const std::map<std::string, std::string>& config = {});
void save_checkpoint(const std::string& path, const Model& model, const TrainState& state,
                     const std::map<std::string, std::string>& config = {});

// Reads a checkpoint, checking its format, version and every object it needs. A missing,
// truncated or corrupt file is a glia::Error naming the file and what was wrong.
Checkpoint load_checkpoint(const std::string& path);

// Checks the checkpoint's parameters and model state against the model: the same layers
// and names, shapes and dtypes. glia::Error names the first mismatch.
void check_checkpoint(const Checkpoint& checkpoint, const Model& model);

// Weights alone: a model's parameters and state in an HDF5 file with a checkpoint's
// /params and /state layout (and its /architecture where the model has one), written
// atomically like a checkpoint.
//   glia::save_weights("w.h5", model, state);
//   glia::ModelState w = glia::load_weights("w.h5", model);  // or from a checkpoint
void save_weights(const std::string& path, const Model& model, const ModelState& state);
// Reads the weights from a weights file or a checkpoint and checks them against `model`
// (the same layers, names, shapes and dtypes): glia::Error names the file and the first
// mismatch, or what is wrong with a missing or corrupt file.
ModelState load_weights(const std::string& path, const Model& model);

// The numbered files Loop::checkpoint writes for `path` with keep_last ("m.h5" gives
// m-00000120.h5, the number being the training step), oldest first.
std::vector<std::string> checkpoint_files(const std::string& path);

}  // namespace glia
