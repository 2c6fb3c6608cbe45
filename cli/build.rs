//! With the `mlx` feature on Linux, puts the folder of `libmlx.so` in the rpath of `stencil`
//! (and of this crate's tests), so the binary runs without `LD_LIBRARY_PATH`.
//!
//! The folder is metadata of mlx-sys's build script, which `cargo xtask mlx-setup` overrides
//! in `.cargo/mlx.toml`. Cargo passes a `links` crate's metadata only to the build scripts of
//! the crates that depend on it directly, so this crate names mlx-sys as an optional
//! dependency of the feature, as runtime-mlx does, and reads `DEP_MLX_LIBDIR`. Without the
//! feature, and on macOS (where MLX is linked statically), there is nothing to do.

fn main() {
    println!("cargo::rerun-if-env-changed=DEP_MLX_LIBDIR");
    if let Some(dir) = std::env::var_os("DEP_MLX_LIBDIR") {
        let dir = dir.to_string_lossy();
        println!("cargo::rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
