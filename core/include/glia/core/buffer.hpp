// Buffer: bytes of storage on one device, obtained from that device's Allocator; a Tensor is
// a view of one (or of a part of one). The host allocator is built in; a backend registers
// one for each device it drives, and its executors take raw device pointers from buffers.
//   auto arena = glia::Buffer::allocate(glia::Device::cuda(0), bytes);  // cuda backend loaded
//   glia::Tensor x = glia::Tensor::wrap(glia::f32, {64, 128}, arena, offset);
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "glia/core/device.hpp"

namespace glia {

// How one device's memory is obtained, given back and copied. Implementations must be
// thread-safe. Copies are complete when they return: callers read the result right away.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string name() const = 0;  // for messages: "host", "cudaMalloc"
  // `bytes` is a positive multiple of 64; returns 64-byte-aligned memory or throws glia::Error.
  virtual void* allocate(std::size_t bytes) = 0;
  // Gives back what allocate returned, with the size it was given.
  virtual void deallocate(void* data, std::size_t bytes) noexcept = 0;
  virtual void copy_from_host(void* device_dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) = 0;
  virtual void copy_within(void* device_dst, const void* device_src, std::size_t bytes) = 0;
};

// The built-in host allocator: aligned_alloc (buffers of 8 MiB and more on 2 MiB
// boundaries, asked for transparent huge pages) and memcpy.
Allocator& host_allocator();

// Makes `allocator` the one for `device` (null removes it) and returns the one it replaces,
// so that a test can put it back. Buffers keep their allocator alive, so replacing one is
// safe while its buffers live. The host's is built in and cannot be replaced.
std::shared_ptr<Allocator> register_allocator(Device device, std::shared_ptr<Allocator> allocator);
bool has_allocator(Device device);
// The allocator for `device`; a glia::Error naming the device when none is registered.
std::shared_ptr<Allocator> allocator_for(Device device);

class Buffer {
  struct Key {
    explicit Key() = default;
  };

 public:
  // Uninitialised storage on `device` for `bytes`, rounded up to a multiple of 64 and at least
  // 64, so that every buffer (an empty one too) has an address of its own. Every one is
  // counted by allocation_stats().
  static std::shared_ptr<Buffer> allocate(Device device, std::size_t bytes);
  // `bytes` at `data` on `device` that someone else owns. The buffer holds `owner` while it
  // lives; with a null owner the caller keeps the memory alive. Not counted.
  static std::shared_ptr<Buffer> adopt(Device device, void* data, std::size_t bytes,
                                       std::shared_ptr<const void> owner);

  Device device() const { return device_; }
  // An address on device(): only host code for a host buffer may dereference it.
  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  // The allocator that owns the memory; null for adopted memory.
  Allocator* allocator() const { return allocator_.get(); }
  // True when this buffer is the only holder of its memory: it allocated it, or adopted it
  // from an owner that nobody else holds. Adopted memory without an owner never is.
  bool sole_holder() const;

  // For make_shared only (one allocation for the buffer and its control block).
  Buffer(Key, Device device, std::shared_ptr<Allocator> allocator, std::size_t bytes);
  Buffer(Key, Device device, void* data, std::size_t bytes, std::shared_ptr<const void> owner);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

 private:
  Device device_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  std::shared_ptr<Allocator> allocator_;
  std::shared_ptr<const void> owner_;
};

}  // namespace glia
