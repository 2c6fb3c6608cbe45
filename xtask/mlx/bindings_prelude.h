/* Half types for generating mlx-c's Rust bindings on targets other than aarch64.
 *
 * mlx-c's half.h defines `float16_t` and `bfloat16_t` (and declares the functions that use
 * them) only on aarch64. `cargo xtask mlx-setup` includes this header before mlx-c's headers
 * so the bindings declare those functions everywhere, with the types mlx-rs expects: `__fp16`
 * (a storage-only type clang accepts on every target) becomes bindgen's `__BindgenFloat16`,
 * and `bfloat16_t` a 16-bit integer. half_shim.cpp implements the functions. */
#if !defined(__aarch64__)
#ifndef MLX_HALF_H
#define MLX_HALF_H
#define HAS_FLOAT16
#define HAS_BFLOAT16
typedef __fp16 float16_t;
typedef unsigned short bfloat16_t;
#endif
#endif
