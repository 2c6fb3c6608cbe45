//! An MLX model runtime (safetensors, Llama family and Gemma 3) behind generate's model trait.
#![warn(missing_docs)]
