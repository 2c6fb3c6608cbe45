// Half-precision entry points of mlx-c for targets other than aarch64.
//
// mlx-c declares `mlx_array_item_float16`, `mlx_array_item_bfloat16`, `mlx_array_data_float16`
// and `mlx_array_data_bfloat16` only where the C compiler has native half types (aarch64), but
// mlx-rs calls them on every target. Here `float16_t` and `bfloat16_t` are 16-bit storage types
// (`uint16_t` in the ABI), matching the bindings that `cargo xtask mlx-setup` generates.
//
// On aarch64 mlx-c has these functions itself and only the clock below is compiled.
//
// mlx-rs also seeds its default random state with `mach_approximate_time`, a macOS call; a
// monotonic clock in nanoseconds stands in for it.
//
// Built by `cargo xtask mlx-setup` (see CMakeLists.txt); never part of a macOS build.

#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>

#include "mlx/c/array.h"
#include "mlx/c/error.h"
#include "mlx/c/private/array.h"
#include "mlx/mlx.h"

#if !defined(__aarch64__)

namespace {

template <typename Half>
int item_bits(uint16_t* res, const mlx_array arr) {
  static_assert(sizeof(Half) == sizeof(uint16_t));
  try {
    Half value = mlx_array_get_(arr).item<Half>();
    std::memcpy(res, &value, sizeof(value));
  } catch (std::exception& e) {
    mlx_error("%s", e.what());
    return 1;
  }
  return 0;
}

template <typename Half>
const uint16_t* data_bits(const mlx_array arr) {
  static_assert(sizeof(Half) == sizeof(uint16_t));
  try {
    return reinterpret_cast<const uint16_t*>(mlx_array_get_(arr).data<Half>());
  } catch (std::exception& e) {
    mlx_error("%s", e.what());
    return nullptr;
  }
}

}  // namespace

extern "C" int mlx_array_item_float16(uint16_t* res, const mlx_array arr) {
  return item_bits<mlx::core::float16_t>(res, arr);
}

extern "C" int mlx_array_item_bfloat16(uint16_t* res, const mlx_array arr) {
  return item_bits<mlx::core::bfloat16_t>(res, arr);
}

extern "C" const uint16_t* mlx_array_data_float16(const mlx_array arr) {
  return data_bits<mlx::core::float16_t>(arr);
}

extern "C" const uint16_t* mlx_array_data_bfloat16(const mlx_array arr) {
  return data_bits<mlx::core::bfloat16_t>(arr);
}

#endif  // !defined(__aarch64__)

extern "C" uint64_t mach_approximate_time() {
  auto now = std::chrono::steady_clock::now().time_since_epoch();
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
}
