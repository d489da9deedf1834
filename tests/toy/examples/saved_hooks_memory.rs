//! Saved activations kept compressed with saved-tensor hooks, and what that saves.
//!
//! A chain of `LAYERS` layers `h = tanh(0.9 h)` on a vector of `N` f64 values: each `tanh`
//! saves its output for backward, so after the forward pass the graph holds `LAYERS`
//! activations. With `saved_tensors_hooks` packing each saved tensor to f32 (half the
//! bytes) and unpacking it to f64 at backward, the graph holds half as much; the gradient
//! differs only by the f32 rounding of the saved values.
//!
//! `cargo run -p autograd-toy --example saved_hooks_memory` prints the bytes held by the
//! graph after the forward pass (counted by a global allocator), with and without hooks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use autograd::runtime::{AutogradError, Variable, saved_tensors_hooks};
use autograd_toy::Toy;
use autograd_toy::ops::{mul_scalar, sum, tanh};

/// The system allocator, counting the bytes alive.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counter is a side
// effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract for `dealloc` is passed on.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Layers of the chain.
pub const LAYERS: usize = 20;
/// Elements per activation.
pub const N: usize = 100_000;

/// A saved tensor in single precision.
pub struct Packed {
    values: Vec<f32>,
    shape: Vec<usize>,
}

fn pack(v: &Variable<Toy>) -> Result<Packed, AutogradError> {
    let t = v.data();
    Ok(Packed {
        values: t.data.iter().map(|&x| x as f32).collect(),
        shape: t.shape.clone(),
    })
}

fn unpack(p: &Packed) -> Result<Variable<Toy>, AutogradError> {
    Ok(Variable::from_data(Toy {
        data: Arc::new(p.values.iter().map(|&x| x as f64).collect()),
        shape: p.shape.clone(),
    }))
}

/// Runs forward and backward of the chain; returns the bytes the graph holds after the
/// forward pass (the loss and its graph, minus what was alive before) and the gradient.
pub fn run(compress: bool) -> (isize, Vec<f64>) {
    let x = Variable::new(
        Toy::vec((0..N).map(|i| (i % 100) as f64 / 50.0).collect()),
        true,
    );
    let before = LIVE.load(Ordering::Relaxed);
    let loss = {
        let _hooks = compress.then(|| saved_tensors_hooks(pack, unpack));
        let mut h = x.clone();
        for _ in 0..LAYERS {
            h = tanh(&mul_scalar(&h, 0.9));
        }
        sum(&h)
    };
    let held = LIVE.load(Ordering::Relaxed) - before;
    loss.backward().expect("backward");
    let grad = x.grad().expect("grad").data().data.to_vec();
    (held, grad)
}

#[allow(dead_code)] // the test includes this file for `run`
fn main() {
    let (plain, g0) = run(false);
    let (packed, g1) = run(true);
    let max_diff = g0
        .iter()
        .zip(&g1)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    let mb = |b: isize| b as f64 / 1e6;
    println!("{LAYERS} layers of tanh on {N} f64 values, bytes the graph holds after forward:");
    println!("  no hooks:                     {:7.2} MB", mb(plain));
    println!("  saved_tensors_hooks (as f32): {:7.2} MB", mb(packed));
    println!("largest gradient difference: {max_diff:.2e}");
}
