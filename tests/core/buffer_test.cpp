// Device-aware storage: Device, the allocator registry, Buffer, and tensors on a fake device
// whose allocator keeps its bytes scrambled in host memory, so any path that reads or
// copies device memory without going through the allocator gives wrong values.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

#include "core/test_util.hpp"
#include "glia/core/buffer.hpp"

namespace glia {
namespace {

constexpr unsigned char kScramble = 0xA5;

// Host memory underneath; every byte stored XOR kScramble.
class FakeDeviceAllocator : public Allocator {
 public:
  std::string name() const override { return "fake"; }
  void* allocate(std::size_t bytes) override {
    ++allocations;
    live_bytes += static_cast<std::int64_t>(bytes);
    return std::aligned_alloc(64, bytes);
  }
  void deallocate(void* data, std::size_t bytes) noexcept override {
    ++deallocations;
    live_bytes -= static_cast<std::int64_t>(bytes);
    std::free(data);
  }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    ++copies_in;
    auto* d = static_cast<unsigned char*>(dst);
    auto* s = static_cast<const unsigned char*>(src);
    for (std::size_t i = 0; i < bytes; ++i) d[i] = s[i] ^ kScramble;
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    ++copies_out;
    auto* d = static_cast<unsigned char*>(dst);
    auto* s = static_cast<const unsigned char*>(src);
    for (std::size_t i = 0; i < bytes; ++i) d[i] = s[i] ^ kScramble;
  }
  void copy_within(void* dst, const void* src, std::size_t bytes) override {
    ++copies_within;
    std::memcpy(dst, src, bytes);
  }

  int allocations = 0, deallocations = 0, copies_in = 0, copies_out = 0, copies_within = 0;
  std::int64_t live_bytes = 0;
};

// A cuda index nobody has registered an allocator for, so a real backend is left alone.
Device free_cuda_device(int after = -1) {
  for (int i = after + 1;; ++i)
    if (!has_allocator(Device::cuda(i))) return Device::cuda(i);
}

class FakeDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = free_cuda_device();
    allocator_ = std::make_shared<FakeDeviceAllocator>();
    EXPECT_EQ(register_allocator(device_, allocator_), nullptr);
  }
  void TearDown() override { register_allocator(device_, nullptr); }

  // Where the fake device keeps t's bytes, unscrambled: what the device holds.
  static std::vector<unsigned char> device_bytes(const Tensor& t) {
    auto* p = static_cast<const unsigned char*>(t.data_ptr());
    std::vector<unsigned char> out(p, p + t.nbytes());
    for (auto& b : out) b ^= kScramble;
    return out;
  }
  static std::vector<unsigned char> host_bytes(const Tensor& t) {
    auto* p = static_cast<const unsigned char*>(t.raw_data());
    return {p, p + t.nbytes()};
  }

  Device device_;
  std::shared_ptr<FakeDeviceAllocator> allocator_;
};

// Distinct, deterministic bytes for every element, with NaN, -0 and inf among the floats.
Tensor sample(DType dtype, Shape shape) {
  Tensor t = Tensor::uninitialized(dtype, std::move(shape));
  auto* p = static_cast<unsigned char*>(t.raw_data());
  for (std::size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<unsigned char>(i * 37 + 11);
  if (dtype == boolean)
    for (std::size_t i = 0; i < t.nbytes(); ++i) p[i] = i % 3 == 0;
  if (dtype == f32 && t.numel() >= 3) {
    float* f = t.data<float>();
    f[0] = std::numeric_limits<float>::quiet_NaN();
    f[1] = -0.0f;
    f[2] = -std::numeric_limits<float>::infinity();
  }
  return t;
}

TEST(Device, PrintsKindAndIndex) {
  EXPECT_EQ(Device::host().to_string(), "host");
  EXPECT_EQ(Device::cuda().to_string(), "cuda:0");
  EXPECT_EQ(Device::cuda(3).to_string(), "cuda:3");
  std::ostringstream out;
  out << Device::cuda(1) << " " << Device{};
  EXPECT_EQ(out.str(), "cuda:1 host");
  EXPECT_TRUE(Device{}.is_host());
  EXPECT_FALSE(Device::cuda(0) == Device::cuda(1));
}

TEST(Device, UnregisteredDeviceIsAClearError) {
  Device d = free_cuda_device();
  std::string expected = "no allocator for " + d.to_string();
  EXPECT_FALSE(has_allocator(d));
  EXPECT_GLIA_ERROR(allocator_for(d), expected);
  EXPECT_GLIA_ERROR(allocator_for(d), "is the cuda backend built and a device present?");
  EXPECT_GLIA_ERROR(Buffer::allocate(d, 16), expected);
  EXPECT_GLIA_ERROR(Tensor::uninitialized(f32, {2}, d), expected);
  EXPECT_GLIA_ERROR(Tensor::zeros({2}).to(d), expected);
  EXPECT_GLIA_ERROR(Tensor::zeros({2}).to(Device{DeviceKind::host, 2}), "invalid device host:2");
  EXPECT_GLIA_ERROR(register_allocator(Device::host(), nullptr), "host allocator is built in");
}

TEST(Device, HostBuffersRoundUpAndCount) {
  AllocationStats before = allocation_stats();
  auto b = Buffer::allocate(Device::host(), 100);
  EXPECT_EQ(b->device(), Device::host());
  EXPECT_EQ(b->size(), 128u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->data()) % 64, 0u);
  EXPECT_EQ(b->allocator(), &host_allocator());
  EXPECT_TRUE(b->sole_holder());
  AllocationStats after = allocation_stats();
  EXPECT_EQ(after.count - before.count, 1);
  EXPECT_EQ(after.bytes - before.bytes, 128);
}

// The VmFlags of the mapping holding `p` in /proc/self/smaps; empty where there is none.
std::string mapping_flags(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(' ') != std::string::npos)
      inside = lo <= at && at < hi;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return {};
}

TEST(Device, LargeHostBuffersAskForHugePages) {
  const std::size_t bytes = (std::size_t(9) << 20) + 100;  // over 8 MiB, not whole pages
  auto b = Buffer::allocate(Device::host(), bytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->data()) % (std::size_t(2) << 20), 0u);
  std::memset(b->data(), 0x5A, bytes);  // every byte is ours to write
  EXPECT_EQ(static_cast<unsigned char*>(b->data())[bytes - 1], 0x5A);
  const std::string flags = mapping_flags(b->data());
  if (flags.empty()) GTEST_SKIP() << "no /proc/self/smaps here to read the mapping's flags from";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;  // MADV_HUGEPAGE
}

TEST_F(FakeDevice, RoundTripsBitExactly) {
  for (DType dtype : {f32, f64, f16, bf16, i32, i64, u8, u32, boolean})
    for (Shape shape : {Shape{}, Shape{0}, Shape{3, 0, 2}, Shape{5}, Shape{3, 7}, Shape{2, 3, 4}}) {
      SCOPED_TRACE((TensorType{dtype, shape}.to_string()));
      Tensor host = sample(dtype, shape);
      Tensor dev = host.to(device_);
      EXPECT_EQ(dev.device(), device_);
      EXPECT_EQ(dev.type(), host.type());
      EXPECT_FALSE(dev.shares_storage_with(host));
      EXPECT_EQ(device_bytes(dev), host_bytes(host));  // the copy went through the allocator
      Tensor back = dev.to_host();
      EXPECT_EQ(back.device(), Device::host());
      EXPECT_TRUE(equal(back, host));
      EXPECT_EQ(host_bytes(back), host_bytes(host));
    }
  EXPECT_EQ(allocator_->live_bytes, 0);
  EXPECT_EQ(allocator_->allocations, allocator_->deallocations);
}

TEST_F(FakeDevice, SameDeviceIsTheSameTensor) {
  Tensor dev = sample(i32, {4}).to(device_);
  int allocations = allocator_->allocations;
  Tensor again = dev.to(device_);
  EXPECT_TRUE(again.shares_storage_with(dev));
  EXPECT_EQ(again.data_ptr(), dev.data_ptr());
  EXPECT_EQ(allocator_->allocations, allocations);
  Tensor host = Tensor::ones({3});
  EXPECT_EQ(host.to_host().raw_data(), host.raw_data());
}

TEST_F(FakeDevice, HostAccessIsAnErrorNamingTheDevice) {
  Tensor dev = Tensor::from<float>({1, 2, 3}).to(device_);
  std::string on = "is on " + device_.to_string();
  EXPECT_GLIA_ERROR(dev.raw_data(), on);
  EXPECT_GLIA_ERROR(dev.raw_data(), "to_host()");
  EXPECT_GLIA_ERROR(std::as_const(dev).raw_data(), on);
  EXPECT_GLIA_ERROR(dev.data<float>(), on);
  EXPECT_GLIA_ERROR(dev.to_vector<float>(), on);
  EXPECT_GLIA_ERROR(dev.reshape({3, 1}).to_vector<float>(), "Tensor::to_vector");
  EXPECT_GLIA_ERROR(dev.reshape({1, 3}).element(0), on);
  EXPECT_GLIA_ERROR(Tensor::scalar(2).to(device_).item<float>(), on);
  EXPECT_GLIA_ERROR(dev.to_string(), on);
  EXPECT_GLIA_ERROR(std::ostringstream() << dev, on);
  EXPECT_GLIA_ERROR(dev.cast(f64), "Tensor::cast");
  EXPECT_GLIA_ERROR(equal(dev, dev), device_.to_string());
  EXPECT_GLIA_ERROR(allclose(dev, Tensor::from<float>({1, 2, 3})), "to_host()");
  // Executors take the device address without a check.
  EXPECT_NE(dev.data_ptr(), nullptr);
  EXPECT_EQ(dev.data_ptr(), dev.buffer()->data());
  EXPECT_EQ(dev.to_host().to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST_F(FakeDevice, CloneCopiesWithinTheDevice) {
  Tensor dev = sample(f64, {3, 2}).to(device_);
  Tensor copy = dev.clone();
  EXPECT_EQ(allocator_->copies_within, 1);
  EXPECT_EQ(copy.device(), device_);
  EXPECT_FALSE(copy.shares_storage_with(dev));
  EXPECT_TRUE(equal(copy.to_host(), dev.to_host()));
}

TEST_F(FakeDevice, CopiesBetweenDevicesGoThroughTheHost) {
  Device other = free_cuda_device(device_.index);
  auto other_allocator = std::make_shared<FakeDeviceAllocator>();
  register_allocator(other, other_allocator);
  Tensor host = sample(i64, {2, 5});
  Tensor there = host.to(device_).to(other);
  EXPECT_EQ(there.device(), other);
  EXPECT_EQ(allocator_->copies_out, 1);
  EXPECT_EQ(other_allocator->copies_in, 1);
  EXPECT_TRUE(equal(there.to_host(), host));
  register_allocator(other, nullptr);
}

TEST_F(FakeDevice, AllocationsBalanceWhenTensorsGoAway) {
  Tensor host = Tensor::iota({10}, 0, f32);
  AllocationStats before = allocation_stats();
  {
    Tensor a = host.to(device_);
    Tensor b = a;                  // shares: no allocation
    Tensor c = a.reshape({2, 5});  // shares
    Tensor d = a.clone();
    Tensor e = Tensor::uninitialized(u8, {0}, device_);
    EXPECT_EQ(allocator_->allocations, 3);
    EXPECT_EQ(allocator_->deallocations, 0);
    EXPECT_EQ(allocator_->live_bytes, 64 * 3);
  }
  EXPECT_EQ(allocator_->deallocations, 3);
  EXPECT_EQ(allocator_->live_bytes, 0);
  // Device buffers count like host ones: one each.
  EXPECT_EQ(allocation_stats().count - before.count, 3);
}

TEST_F(FakeDevice, UniqueStorageMeansNobodyElseHoldsIt) {
  Tensor a = Tensor::from<float>({1, 2}).to(device_);
  EXPECT_TRUE(a.unique_storage());
  {
    Tensor b = a;
    EXPECT_FALSE(a.unique_storage());
    EXPECT_FALSE(b.unique_storage());
  }
  EXPECT_TRUE(a.unique_storage());

  auto buffer = Buffer::allocate(device_, 256);
  Tensor v0 = Tensor::wrap(f32, {8}, buffer, 0);
  Tensor v1 = Tensor::wrap(f32, {8}, buffer, 128);
  EXPECT_FALSE(v0.unique_storage());  // the buffer and the other view hold it too
  buffer.reset();
  EXPECT_FALSE(v0.unique_storage());
  EXPECT_FALSE(v1.unique_storage());
  EXPECT_TRUE(v0.shares_storage_with(v1));
  v1 = Tensor();
  EXPECT_TRUE(v0.unique_storage());
  EXPECT_FALSE(Tensor().unique_storage());
}

TEST_F(FakeDevice, ViewsKeepTheirBufferAlive) {
  auto buffer = Buffer::allocate(device_, 200);
  EXPECT_EQ(buffer->size(), 256u);
  EXPECT_EQ(buffer->device(), device_);
  std::vector<std::int32_t> values{7, -8, 9};
  allocator_->copy_from_host(static_cast<std::byte*>(buffer->data()) + 64, values.data(), 12);
  Tensor view = Tensor::wrap(i32, {3}, buffer, 64);
  EXPECT_EQ(view.device(), device_);
  EXPECT_EQ(view.byte_offset(), 64u);
  EXPECT_EQ(view.buffer(), buffer);
  EXPECT_EQ(view.data_ptr(), static_cast<std::byte*>(buffer->data()) + 64);
  buffer.reset();
  EXPECT_EQ(allocator_->deallocations, 0);
  EXPECT_EQ(view.to_host().to_vector<int>(), (std::vector<int>{7, -8, 9}));
  view = Tensor();
  EXPECT_EQ(allocator_->deallocations, 1);
  EXPECT_EQ(allocator_->live_bytes, 0);
}

TEST_F(FakeDevice, WrapChecksTheView) {
  auto buffer = Buffer::allocate(device_, 64);
  EXPECT_GLIA_ERROR(Tensor::wrap(f32, {17}, buffer), "does not fit in a buffer of 64 bytes");
  EXPECT_GLIA_ERROR(Tensor::wrap(f32, {2}, buffer, 60), "at offset 60 does not fit");
  EXPECT_GLIA_ERROR(Tensor::wrap(f32, {1}, buffer, 2), "offset 2 misaligns f32");
  EXPECT_GLIA_ERROR(Tensor::wrap(f32, {1}, std::shared_ptr<Buffer>()), "null buffer");
  EXPECT_EQ(Tensor::wrap(f32, {16}, buffer).nbytes(), 64u);
  EXPECT_EQ(Tensor::wrap(u8, {0}, buffer, 64).numel(), 0);
}

TEST_F(FakeDevice, AdoptedDeviceMemoryCopiesThroughTheDevice) {
  auto owner = Buffer::allocate(device_, 64);
  std::vector<double> values{1.5, -2.25};
  allocator_->copy_from_host(owner->data(), values.data(), 16);
  auto adopted = Buffer::adopt(device_, owner->data(), 16, owner);
  EXPECT_EQ(adopted->allocator(), nullptr);
  EXPECT_FALSE(adopted->sole_holder());  // `owner` is still held here
  Tensor t = Tensor::wrap(f64, {2}, adopted);
  EXPECT_EQ(t.to_host().to_vector<double>(), values);
  owner.reset();
  adopted.reset();
  EXPECT_TRUE(t.unique_storage());
  t = Tensor();
  EXPECT_EQ(allocator_->live_bytes, 0);
}

TEST_F(FakeDevice, ReplacedAllocatorLivesWhileItsBuffersDo) {
  Tensor t = Tensor::ones({4}).to(device_);
  auto replacement = std::make_shared<FakeDeviceAllocator>();
  EXPECT_EQ(register_allocator(device_, replacement), allocator_);
  Tensor u = Tensor::ones({4}).to(device_);
  EXPECT_EQ(replacement->allocations, 1);
  EXPECT_EQ(allocator_->allocations, 1);
  t = Tensor();
  EXPECT_EQ(allocator_->deallocations, 1);  // the allocator that made it gives it back
  EXPECT_EQ(u.to_host().to_vector<float>(), (std::vector<float>(4, 1.0f)));
}

// An allocator that breaks the 64-byte promise.
class MisalignedAllocator : public FakeDeviceAllocator {
 public:
  void* allocate(std::size_t bytes) override {
    return static_cast<char*>(FakeDeviceAllocator::allocate(bytes + 64)) + 8;
  }
  void deallocate(void* data, std::size_t bytes) noexcept override {
    FakeDeviceAllocator::deallocate(static_cast<char*>(data) - 8, bytes + 64);
  }
};

TEST(Device, MisalignedAllocatorIsCaught) {
  Device d = free_cuda_device();
  auto allocator = std::make_shared<MisalignedAllocator>();
  register_allocator(d, allocator);
  EXPECT_GLIA_ERROR(Buffer::allocate(d, 8), "not 64-byte aligned");
  EXPECT_EQ(allocator->deallocations, 1);
  register_allocator(d, nullptr);
}

}  // namespace
}  // namespace glia
