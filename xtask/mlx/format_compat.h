// `std::format` for C++ standard libraries that lack <format> (GCC 12, Debian 12).
//
// mlx-c formats a few error messages with `std::format`. Where the standard library does not
// provide it, the {fmt} library (Debian: libfmt-dev), used header-only, supplies the same
// function under that name. `cargo xtask mlx-setup` force-includes this header into every mlx-c
// translation unit; with a standard library that has <format> it does nothing.
#pragma once

#if defined(__cplusplus)
#if __has_include(<format>)
#include <format>
#endif
#if !defined(__cpp_lib_format)
#define FMT_HEADER_ONLY 1
#include <fmt/format.h>
namespace std {
using ::fmt::format;
}  // namespace std
#endif
#endif
