// Device: where a tensor's bytes live, a kind plus an index ("host", "cuda:0"). Small and
// header-light because tensor.hpp, included everywhere, takes it by value.
//   glia::Device d = glia::Device::cuda(0);
//   d.to_string() == "cuda:0";  glia::Device::host().is_host()
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace glia {

enum class DeviceKind : std::uint8_t { host, cuda };

struct Device {
  DeviceKind kind = DeviceKind::host;
  int index = 0;  // 0 for the host (there is one)

  static constexpr Device host() { return {}; }
  static constexpr Device cuda(int index = 0) { return {DeviceKind::cuda, index}; }
  constexpr bool is_host() const { return kind == DeviceKind::host; }
  std::string to_string() const;  // "host", "cuda:0"
  friend constexpr bool operator==(Device, Device) = default;
};
std::ostream& operator<<(std::ostream& out, Device device);

}  // namespace glia
