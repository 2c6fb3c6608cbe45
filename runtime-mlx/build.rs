//! Puts the folder of `libmlx.so` in the rpath of this crate's tests and examples, so they run
//! without `LD_LIBRARY_PATH`. The folder comes from the Cargo configuration that
//! `cargo xtask mlx-setup` writes on Linux (as `DEP_MLX_LIBDIR`, metadata of mlx-sys's build
//! script override); on macOS mlx-sys links MLX statically and there is nothing to do.

fn main() {
    println!("cargo::rerun-if-env-changed=DEP_MLX_LIBDIR");
    if let Some(dir) = std::env::var_os("DEP_MLX_LIBDIR") {
        let dir = dir.to_string_lossy();
        println!("cargo::rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
