//! The memory figure of `examples/saved_hooks_memory.rs`, as a test: packing the saved
//! activations to f32 halves what the graph holds after forward, and the gradient moves only
//! by the f32 rounding. In a binary of its own: it counts the bytes the process allocates.

#[path = "../examples/saved_hooks_memory.rs"]
mod example;

#[test]
fn packing_saved_activations_to_f32_halves_the_graphs_memory() {
    let (plain, g0) = example::run(false);
    let (packed, g1) = example::run(true);
    let activations = (example::LAYERS * example::N * 8) as isize;
    // Without hooks: every tanh output (8 bytes per value) plus small node records.
    assert!(plain >= activations, "{plain} < {activations}");
    assert!(plain < activations + activations / 20, "{plain}");
    // With hooks: 4 bytes per value.
    assert!(packed >= activations / 2, "{packed}");
    assert!(packed < activations / 2 + activations / 20, "{packed}");
    let max_diff = g0
        .iter()
        .zip(&g1)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(max_diff > 0.0 && max_diff < 1e-6, "{max_diff}");
}
