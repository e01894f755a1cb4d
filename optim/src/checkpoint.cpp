// Checkpoint files: the layout (documented in the README's "Checkpoint files" section),
// the atomic save (temporary file, fsync, rename, fsync of the folder) and the checked
// load. Each tensor is one dataset; scalars of the loop and the step are attributes.
#include "glia/optim/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>

#include "glia/layers/serialize.hpp"
#include "hdf5_file.hpp"
#include "loop_impl.hpp"

namespace glia {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "glia checkpoint";
constexpr const char* kWeightsFormat = "glia weights";

void check_name(const std::string& name, const char* what) {
  check(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos,
        "save_checkpoint: the ", what, " name '", name,
        "' cannot be stored (an HDF5 name must be non-empty, not '.' or '..', without '/')");
}

void write_params(h5::File& f, const std::string& group, const ParamMap& m, const char* what) {
  f.write_group(group);
  for (const auto& [layer, entries] : m) {
    check_name(layer, "layer");
    for (const auto& [name, t] : entries) {
      check_name(name, what);
      f.write_tensor(group + "/" + layer + "/" + name, t);
    }
  }
}

void write_loop(h5::File& f, const LoopState& s) {
  f.write_group("/loop");
  f.write_attr("/loop", "epoch", s.epoch);
  f.write_attr("/loop", "iteration", s.iteration);
  f.write_attr("/loop", "total_iterations", s.total_iterations);
  f.write_attr("/loop", "samples", s.samples);
  f.write_attr("/loop", "epochs", s.epochs);
  f.write_attr("/loop", "world_size", s.world_size);
  // One f64 array per metric over the epochs; NaN where an epoch lacks the metric.
  f.write_group("/loop/history");
  std::set<std::string> names;
  for (const auto& epoch : s.history)
    for (const auto& [name, v] : epoch) names.insert(name);
  for (const std::string& name : names) {
    check_name(name, "metric");
    std::vector<double> values;
    for (const auto& epoch : s.history) {
      auto it = epoch.find(name);
      values.push_back(it == epoch.end() ? std::numeric_limits<double>::quiet_NaN() : it->second);
    }
    f.write_tensor("/loop/history/" + name,
                   Tensor::from(values, Shape{static_cast<std::int64_t>(values.size())}));
  }
  f.write_group("/loop/metrics");
  for (const auto& [name, v] : s.metrics) {
    check_name(name, "metric");
    f.write_tensor("/loop/metrics/" + name, Tensor::scalar(v, DType::f64));
  }
  f.write_tensor(
      "/loop/epoch_seconds",
      Tensor::from(s.epoch_seconds, Shape{static_cast<std::int64_t>(s.epoch_seconds.size())}));
}

void write_file(h5::File& f, const Model& model, const LoopState& s, const std::string& saved_at,
                const std::map<std::string, std::string>& config) {
  f.write_attr("/", "format", std::string(kFormat));
  f.write_attr("/", "format_version", kCheckpointFormatVersion);
  f.write_attr("/", "saved_at", saved_at);
  // A model with a custom layer has no JSON description; its checkpoint still resumes
  // with the code that made the model.
  try {
    f.write_string("/architecture", model_to_json(model));
  } catch (const Error& e) {
    f.write_attr("/", "architecture_note", std::string(e.what()));
  }
  f.write_group("/config");
  for (const auto& [key, value] : config) f.write_attr("/config", key, value);
  write_params(f, "/params", s.train.model.params, "parameter");
  write_params(f, "/state", s.train.model.state, "model state");
  f.write_group("/optimizer");
  for (const auto& [key, t] : s.train.optimizer) {
    // "0/mu/dense_0/kernel" becomes nested groups, so each part must be a valid name.
    for (std::size_t from = 0, slash = 0; slash != std::string::npos; from = slash + 1) {
      slash = key.find('/', from);
      check_name(key.substr(from, slash == std::string::npos ? slash : slash - from),
                 "optimizer entry part");
    }
    f.write_tensor("/optimizer/" + key, t);
  }
  f.write_group("/train");
  f.write_attr("/train", "step", s.train.step);
  f.write_attr("/train", "lr_scale", s.train.lr_scale);
  f.write_attr("/train", "seed", static_cast<std::uint64_t>(s.train.seed));
  f.write_tensor("/train/rng_key", random::key(s.train.seed));
  write_loop(f, s);
}

// Flushes a file or folder to disk, so the rename below publishes complete data.
void sync_path(const std::string& path, bool folder) {
  int fd = ::open(path.c_str(), folder ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  check(fd >= 0, path, ": cannot open it to flush it to disk");
  int r = ::fsync(fd);
  ::close(fd);
  check(r == 0 || folder, path, ": cannot flush it to disk");
}

std::string temp_path(const fs::path& target) {
  static std::atomic<std::uint64_t> counter{0};
  fs::path name = "." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                  std::to_string(counter++);
  return (target.parent_path() / name).string();
}

ParamMap read_params(const h5::File& f, const std::string& group) {
  ParamMap out;
  for (const std::string& rel : f.datasets_under(group)) {
    std::size_t slash = rel.find('/');
    if (slash == std::string::npos || rel.find('/', slash + 1) != std::string::npos)
      f.fail(cat(group, "/", rel, " is not a <layer>/<name> dataset"));
    out[rel.substr(0, slash)][rel.substr(slash + 1)] = f.read_tensor(group + "/" + rel);
  }
  return out;
}

std::int64_t read_count(const h5::File& f, const std::string& name) {
  std::int64_t v = f.read_i64("/loop", name);
  if (v < 0) f.fail(cat("/loop attribute '", name, "' is negative (", v, ")"));
  return v;
}

void read_loop(const h5::File& f, LoopState& s) {
  s.epoch = read_count(f, "epoch");
  s.iteration = read_count(f, "iteration");
  s.total_iterations = read_count(f, "total_iterations");
  s.samples = read_count(f, "samples");
  s.epochs = read_count(f, "epochs");
  // Files from before data parallelism were written by one process.
  s.world_size = f.has_attr("/loop", "world_size") ? read_count(f, "world_size") : 1;
  if (s.world_size < 1) f.fail(cat("/loop attribute 'world_size' is ", s.world_size));
  s.history.assign(static_cast<std::size_t>(s.epoch), {});
  for (const std::string& name : f.datasets_under("/loop/history")) {
    Tensor t = f.read_tensor("/loop/history/" + name);
    if (t.dtype() != DType::f64 || t.rank() != 1 || t.numel() != s.epoch)
      f.fail(cat("/loop/history/", name, " is ", t.type().to_string(), ", expected f64[", s.epoch,
                 "] (one value per completed epoch)"));
    std::vector<double> v = t.to_vector<double>();
    for (std::size_t e = 0; e < v.size(); ++e)
      if (!std::isnan(v[e])) s.history[e][name] = v[e];
  }
  for (const std::string& name : f.datasets_under("/loop/metrics")) {
    Tensor t = f.read_tensor("/loop/metrics/" + name);
    if (t.dtype() != DType::f64 || t.rank() != 0)
      f.fail(cat("/loop/metrics/", name, " is ", t.type().to_string(), ", expected f64[]"));
    s.metrics[name] = t.item<double>();
  }
  Tensor seconds = f.read_tensor("/loop/epoch_seconds");
  if (seconds.dtype() != DType::f64 || seconds.rank() != 1)
    f.fail(cat("/loop/epoch_seconds is ", seconds.type().to_string(), ", expected f64[epochs]"));
  s.epoch_seconds = seconds.to_vector<double>();
}

}  // namespace

Model Checkpoint::model() const {
  check(!architecture.empty(), path, ": the checkpoint holds no architecture (",
        architecture_note.empty() ? "none was saved" : architecture_note, ")");
  try {
    return model_from_json(architecture);
  } catch (const Error& e) {
    throw Error(cat(path, ": its architecture does not describe a model: ", e.what()));
  }
}

namespace {

// Writes a file through `write` into a temporary file beside `path`, flushed to disk and
// renamed over `path`, so a crash never leaves `path` half written.
void write_atomically(const std::string& path, const std::function<void(h5::File&)>& write) {
  fs::path target(path);
  std::error_code ec;
  check(!fs::is_directory(target, ec), path, ": is a folder, not a checkpoint file");
  fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  check(fs::is_directory(folder, ec), path, ": the folder ", folder.string(), " does not exist");
  std::string temp = temp_path(target);
  try {
    {
      auto guard = h5::lock();
      h5::File f = h5::File::create(temp);
      write(f);
      f.close();
    }
    sync_path(temp, false);
    fs::rename(temp, target);  // atomic on POSIX: readers see the old file or the new one
    sync_path(folder.string(), true);
  } catch (const fs::filesystem_error& e) {
    fs::remove(temp, ec);
    throw Error(cat(path, ": cannot replace the file: ", e.code().message()));
  } catch (...) {
    fs::remove(temp, ec);
    throw;
  }
}

void save(const std::string& path, const Model& model, const LoopState& state,
          const std::string& saved_at, const std::map<std::string, std::string>& config) {
  check(!path.empty(), "save_checkpoint: the path is empty");
  check(model.defined(), "save_checkpoint: the model is undefined");
  LoopState s = resume_position(state);
  write_atomically(path, [&](h5::File& f) { write_file(f, model, s, saved_at, config); });
}

}  // namespace

void save_weights(const std::string& path, const Model& model, const ModelState& state) {
  check(!path.empty(), "save_weights: the path is empty");
  check(model.defined(), "save_weights: the model is undefined");
  check_model_entries(model, state, "save_weights");
  write_atomically(path, [&](h5::File& f) {
    f.write_attr("/", "format", std::string(kWeightsFormat));
    f.write_attr("/", "format_version", kCheckpointFormatVersion);
    try {
      f.write_string("/architecture", model_to_json(model));
    } catch (const Error& e) {
      f.write_attr("/", "architecture_note", std::string(e.what()));
    }
    write_params(f, "/params", state.params, "parameter");
    write_params(f, "/state", state.state, "model state");
  });
}

ModelState load_weights(const std::string& path, const Model& model) {
  check(model.defined(), "load_weights: the model is undefined");
  ModelState w;
  {
    auto guard = h5::lock();
    h5::File f = h5::File::open(path);
    const std::string format =
        f.has_attr("/", "format") ? f.read_attr_string("/", "format") : std::string();
    if (format != kWeightsFormat && format != kFormat)
      f.fail(
          "neither glia weights nor a glia checkpoint (its root's format attribute is not "
          "'glia weights' or 'glia checkpoint')");
    const std::int64_t version = f.read_i64("/", "format_version");
    if (version < 1 || version > kCheckpointFormatVersion)
      f.fail(cat("format version ", version, " is not one this glia reads (1 to ",
                 kCheckpointFormatVersion, ")"));
    w.params = read_params(f, "/params");
    w.state = read_params(f, "/state");
  }
  check_model_entries(model, w, path);
  return w;
}

void save_checkpoint(const std::string& path, const Model& model, const LoopState& state,
                     const std::map<std::string, std::string>& config) {
  save(path, model, state, event_name(state.event), config);
}

void save_checkpoint(const std::string& path, const Model& model, const TrainState& state,
                     const std::map<std::string, std::string>& config) {
  LoopState s;
  s.train = state;
  save(path, model, s, "manual", config);
}

Checkpoint load_checkpoint(const std::string& path) {
  auto guard = h5::lock();
  h5::File f = h5::File::open(path);
  Checkpoint c;
  c.path = path;
  if (!f.has_attr("/", "format") || f.read_attr_string("/", "format") != kFormat)
    f.fail("not a glia checkpoint (its root has no format attribute 'glia checkpoint')");
  c.format_version = f.read_i64("/", "format_version");
  if (c.format_version < 1 || c.format_version > kCheckpointFormatVersion)
    f.fail(cat("checkpoint format version ", c.format_version, " is not one this glia reads (1 to ",
               kCheckpointFormatVersion, ")"));
  c.saved_at = f.read_attr_string("/", "saved_at");
  if (f.exists("/architecture"))
    c.architecture = f.read_string("/architecture");
  else if (f.has_attr("/", "architecture_note"))
    c.architecture_note = f.read_attr_string("/", "architecture_note");
  for (const std::string& key : f.attr_names("/config"))
    c.config[key] = f.read_attr_string("/config", key);
  TrainState& t = c.loop.train;
  t.model.params = read_params(f, "/params");
  t.model.state = read_params(f, "/state");
  for (const std::string& key : f.datasets_under("/optimizer"))
    t.optimizer[key] = f.read_tensor("/optimizer/" + key);
  t.step = f.read_i64("/train", "step");
  t.lr_scale = f.read_f64("/train", "lr_scale");
  t.seed = f.read_u64("/train", "seed");
  if (t.step < 0) f.fail(cat("/train attribute 'step' is negative (", t.step, ")"));
  if (!equal(f.read_tensor("/train/rng_key"), random::key(t.seed)))
    f.fail("/train/rng_key is not the key of the stored seed (the file is inconsistent)");
  read_loop(f, c.loop);
  return c;
}

void check_checkpoint(const Checkpoint& checkpoint, const Model& model) {
  check_model_entries(model, checkpoint.loop.train.model, "checkpoint " + checkpoint.path);
}

std::vector<std::string> checkpoint_files(const std::string& path) {
  fs::path target(path);
  fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string stem = target.stem().string(), ext = target.extension().string();
  std::vector<std::pair<std::uint64_t, std::string>> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() <= stem.size() + 1 + ext.size() || name.compare(0, stem.size(), stem) != 0 ||
        name[stem.size()] != '-' || name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
      continue;
    std::string digits = name.substr(stem.size() + 1, name.size() - stem.size() - 1 - ext.size());
    if (digits.empty() || digits.size() > 18 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    found.emplace_back(std::stoull(digits), (target.parent_path() / name).string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [n, p] : found) out.push_back(std::move(p));
  return out;
}

}  // namespace glia
