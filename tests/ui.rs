//! trybuild UI tests: one `.rs`/`.stderr` pair per mistake a user can make in a
//! derivatives.yaml or the macro call (`TRYBUILD=overwrite cargo test --test ui` refreshes).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
