//! With the `mlx` feature on Linux, puts the folder of `libmlx.so` in the rpath of the bench
//! binaries, so `cargo xtask bench generate` runs MLX without `LD_LIBRARY_PATH`. The folder is
//! mlx-sys's `links` metadata, passed only to direct dependents, hence the optional mlx-sys
//! dependency of the feature. Without the feature, and on macOS, there is nothing to do.

fn main() {
    println!("cargo::rerun-if-env-changed=DEP_MLX_LIBDIR");
    if let Some(dir) = std::env::var_os("DEP_MLX_LIBDIR") {
        let dir = dir.to_string_lossy();
        println!("cargo::rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
