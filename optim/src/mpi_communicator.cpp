// glia::mpi: the MPI communicator (MPI_Allreduce on host buffers) and the session that
// initialises MPI. Built with GLIA_HAVE_MPI where CMake finds MPI; without it the session
// explains how to get it.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>

#include "glia/optim/distributed.hpp"

#ifdef GLIA_HAVE_MPI
#include <mpi.h>
#endif

namespace glia::mpi {

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  return (*end == '\0' && x >= 0 && x < (1 << 30)) ? static_cast<int>(x) : fallback;
}

}  // namespace

// OpenMPI, MPICH/Intel MPI (PMI) and Slurm name the rank and size in the environment.
int launched_rank() {
  for (const char* n : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (int r = env_int(n, -1); r >= 0) return r;
  return 0;
}
int launched_size() {
  for (const char* n : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
    if (int s = env_int(n, -1); s >= 1) return s;
  return 1;
}

#ifdef GLIA_HAVE_MPI

namespace {

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

void mpi_check(int code, const char* call) {
  check(code == MPI_SUCCESS, "MPI: ", call, " failed: ", mpi_error(code));
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
    default:
      throw Error(cat("MPI all_reduce: sums f32, f64, i32 or i64, got ", dtype));
  }
}

bool finalized() {
  int done = 0;
  MPI_Finalized(&done);
  return done != 0;
}

// MPI's counts are ints: a larger buffer goes in chunks.
constexpr std::int64_t kChunk = std::int64_t{1} << 30;

class MpiCommunicator;

// MPI_Iallreduce's request; waited for when dropped, so no sum outlives its buffer.
class MpiRequest final : public CollectiveRequest {
 public:
  MpiRequest(std::shared_ptr<MpiCommunicator> comm, MPI_Request request)
      : comm_(std::move(comm)), request_(request) {}
  ~MpiRequest() override;
  void wait() override;
  bool test() override;

 private:
  std::shared_ptr<MpiCommunicator> comm_;
  MPI_Request request_;
};

class MpiCommunicator final : public Communicator,
                              public std::enable_shared_from_this<MpiCommunicator> {
 public:
  MpiCommunicator() {
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    // Errors come back as codes and become glia::Error instead of aborting silently.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm local;
    mpi_check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
              "MPI_Comm_split_type");
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
  }
  ~MpiCommunicator() override {
    if (!finalized()) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  void all_reduce_sum(void* data, std::int64_t count, DType dtype) override {
    MPI_Datatype type = mpi_type(dtype);
    std::lock_guard lock(mutex_);
    auto* bytes = static_cast<char*>(data);
    for (std::int64_t begin = 0; begin < count; begin += kChunk) {
      const std::int64_t n = std::min(kChunk, count - begin);
      mpi_check(MPI_Allreduce(MPI_IN_PLACE, bytes + begin * dtype_size(dtype), static_cast<int>(n),
                              type, MPI_SUM, comm_),
                "MPI_Allreduce");
    }
  }
  std::unique_ptr<CollectiveRequest> start_all_reduce_sum(void* data, std::int64_t count,
                                                          DType dtype) override {
    if (count > kChunk) return Communicator::start_all_reduce_sum(data, count, dtype);
    MPI_Datatype type = mpi_type(dtype);
    MPI_Request request = MPI_REQUEST_NULL;
    {
      std::lock_guard lock(mutex_);
      mpi_check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), type, MPI_SUM, comm_,
                               &request),
                "MPI_Iallreduce");
    }
    return std::make_unique<MpiRequest>(shared_from_this(), request);
  }
  void broadcast(void* data, std::int64_t bytes, int root) override {
    std::lock_guard lock(mutex_);
    auto* p = static_cast<char*>(data);
    for (std::int64_t begin = 0; begin < bytes; begin += kChunk)
      mpi_check(MPI_Bcast(p + begin, static_cast<int>(std::min(kChunk, bytes - begin)), MPI_BYTE,
                          root, comm_),
                "MPI_Bcast");
  }
  void barrier() override {
    std::lock_guard lock(mutex_);
    mpi_check(MPI_Barrier(comm_), "MPI_Barrier");
  }
  std::string name() const override { return "mpi"; }
  std::mutex& mutex() { return mutex_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::mutex mutex_;
};

MpiRequest::~MpiRequest() {
  if (request_ == MPI_REQUEST_NULL || finalized()) return;
  std::lock_guard lock(comm_->mutex());
  MPI_Wait(&request_, MPI_STATUS_IGNORE);
}

void MpiRequest::wait() {
  std::lock_guard lock(comm_->mutex());
  mpi_check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
}

bool MpiRequest::test() {
  std::lock_guard lock(comm_->mutex());
  int done = 0;
  mpi_check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
  return done != 0;
}

}  // namespace

bool available() { return true; }

Session::Session() {
  check(!finalized(), "mpi::Session: MPI was already finalised in this process; it cannot start ",
        "again (keep one Session for the whole program)");
  int started = 0;
  MPI_Initialized(&started);
  if (!started) {
    int provided = 0;
    mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
              "MPI_Init_thread");
    initialised_here_ = true;
    check(provided >= MPI_THREAD_SERIALIZED, "mpi::Session: this MPI gives thread level ", provided,
          " but glia needs MPI_THREAD_SERIALIZED (", MPI_THREAD_SERIALIZED, ")");
  }
  world_ = std::make_shared<MpiCommunicator>();
}

Session::~Session() {
  world_.reset();
  if (initialised_here_ && !finalized()) MPI_Finalize();
}

void abort(int code) {
  int started = 0;
  MPI_Initialized(&started);
  std::cout.flush();
  std::cerr.flush();
  if (started && !finalized()) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

#else  // no MPI in this build

bool available() { return false; }

Session::Session() {
  throw Error(
      "glia was built without MPI, so it cannot train across processes: install Debian's "
      "libopenmpi-dev and openmpi-bin and rebuild (./apps/setup.sh installs them)");
}

Session::~Session() = default;

void abort(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::exit(code);
}

#endif

}  // namespace glia::mpi
