//! No build step: the build script gives the macro an `OUT_DIR` of its own, inside the
//! target directory, where it writes the code it generates (see `autograd_ops!`).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
