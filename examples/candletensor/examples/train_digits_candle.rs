//! The digits classifier of ndtensor's `train_digits` example, on candle-core tensors: the
//! same data, split, network, Adam and epochs, with the op set's `nn` and generated autograd
//! over `CandleTensor` (f64).
//!
//! `cargo run --release -p candletensor --example train_digits_candle [-- --epochs N | --bench N]`

#[path = "../../ndtensor/examples/digits/mod.rs"]
mod digits;

use autograd::types::Generator;
use autograd_opset::nn::Adam;
use candletensor::{CandleTensor, manual_seed};
use digits::{Digits, Net, evaluate, train_epoch};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut epochs, mut bench) = (15, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--epochs" => epochs = args.next().ok_or("--epochs N")?.parse()?,
            "--bench" => bench = Some(args.next().ok_or("--bench N")?.parse::<usize>()?),
            other => return Err(format!("unknown argument {other} (--epochs N, --bench N)").into()),
        }
    }
    let data: Digits<CandleTensor> = digits::load();
    if let Some(n) = bench {
        manual_seed(7);
        let model = Net::new(&Generator::new(1));
        let mut opt = Adam::new(model.parameters(), 0.01);
        let (median, min, max) = digits::bench_steps(&model, &mut opt, &data, n)?;
        println!("candletensor step_us median {median:.1} min {min:.1} max {max:.1}");
        return Ok(());
    }
    manual_seed(7);
    let model = Net::new(&Generator::new(1));
    let mut opt = Adam::new(model.parameters(), 0.01);
    let g = Generator::new(3);
    let mut order: Vec<usize> = (0..data.n_train()).collect();
    for epoch in 1..=epochs {
        let t0 = Instant::now();
        let loss = train_epoch(&model, &mut opt, &data, &mut order, &g, || {})?;
        if epoch % 5 == 0 || epoch == 1 {
            let (_, acc, _) = evaluate(&model, &data.x_test, &data.y_test)?;
            println!(
                "epoch {epoch:>3}: train loss {loss:.4}, test acc {:.1}%, {:.0?}/epoch",
                100.0 * acc,
                t0.elapsed()
            );
        }
    }
    let (test_loss, test_acc, _) = evaluate(&model, &data.x_test, &data.y_test)?;
    let n_test = data.test_labels.len();
    println!(
        "candle backend: test accuracy {:.1}% ({}/{n_test}), test loss {test_loss:.4}",
        100.0 * test_acc,
        (test_acc * n_test as f64).round()
    );
    Ok(())
}
