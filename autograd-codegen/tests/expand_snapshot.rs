//! The expanded code for a small YAML, as a snapshot (`UPDATE_EXPECT=1 cargo test` refreshes
//! it). `tests/toy/tests/snapshot_compiles.rs` compiles the same file.

use autograd_codegen::emit::{Config, generate_pretty};

#[test]
fn expansion_of_small_yaml_matches_snapshot() {
    let mut config = Config::new("tests/fixtures/small.yaml");
    config.base_dir = env!("CARGO_MANIFEST_DIR").into();
    config.track_files = false;
    let code = generate_pretty(&config).unwrap_or_else(|e| panic!("{e}"));
    expect_test::expect_file!["snapshots/small.rs"].assert_eq(&code);
}
