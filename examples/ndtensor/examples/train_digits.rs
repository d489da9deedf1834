//! Train a small CNN (two 3x3 convolutions with batch norm, ReLU and 2x2 max pooling, then a
//! linear layer; cross entropy) on scikit-learn's 8x8 handwritten digits (UCI's optdigits
//! test set, 1,797 images, shipped in `examples/digits/data/`) with ndtensor's generated
//! autograd layer, in f32: a fixed seeded split (1,438 training / 359 test images),
//! mini-batches of 64, Adam, batch norm's running statistics for evaluation.
//!
//! Run: `cargo run --release -p ndtensor --example train_digits [-- --epochs N --out DIR]`
//!
//! Prints a progress bar, the time of each epoch and the accuracies; writes
//! `loss_curve.png` (training loss in blue, test loss in red, per epoch) and
//! `misclassified.png` (the test images it gets wrong) into `DIR`, by default the
//! `digits` folder beside the example's binary in the target directory. `--bench N` times
//! N training steps instead (`benches/digits/run.sh`).

mod digits;
#[path = "digits/png_out.rs"]
mod png_out;

use autograd::types::Generator;
use digits::{Digits, Net, evaluate, train_epoch};
use indicatif::{ProgressBar, ProgressStyle};
use ndtensor::nn::Adam;
use ndtensor::{NdTensor, manual_seed};
use std::path::PathBuf;
use std::time::Instant;

type E = f32;

/// The command line: `--epochs N` (default 15), `--out DIR`, and `--bench N` (time N
/// training steps instead, see `digits::bench_steps`).
struct Options {
    epochs: usize,
    out: PathBuf,
    bench: Option<usize>,
}

fn options() -> Result<Options, Box<dyn std::error::Error>> {
    let mut o = Options {
        epochs: 15,
        out: std::env::current_exe()?
            .parent()
            .ok_or("the example's binary has no folder")?
            .join("digits"),
        bench: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--epochs" => o.epochs = args.next().ok_or("--epochs N")?.parse()?,
            "--out" => o.out = PathBuf::from(args.next().ok_or("--out DIR")?),
            "--bench" => o.bench = Some(args.next().ok_or("--bench N")?.parse()?),
            other => {
                return Err(
                    format!("unknown argument {other} (--epochs N, --out DIR, --bench N)").into(),
                );
            }
        }
    }
    Ok(o)
}

// The whole program in order (data, model, epochs, report), as a reader follows it.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let opts = options()?;
    let start = Instant::now();
    let data: Digits<NdTensor<E>> = digits::load();
    if let Some(n) = opts.bench {
        manual_seed(7);
        let model = Net::new(&Generator::new(1));
        let mut opt = Adam::new(model.parameters(), 0.01);
        let (median, min, max) = digits::bench_steps(&model, &mut opt, &data, n)?;
        println!("ndtensor step_us median {median:.1} min {min:.1} max {max:.1}");
        return Ok(());
    }
    let (n_train, n_test) = (data.n_train(), data.test_labels.len());
    println!(
        "digits (scikit-learn's 8x8, UCI optdigits): {} images, 10 classes; {n_train} train / {n_test} test (seed {})",
        n_train + n_test,
        digits::SPLIT_SEED
    );
    println!(
        "model: {}, f32, Adam(lr=0.01), batch {}",
        Net::<NdTensor<E>>::describe(),
        digits::BATCH
    );
    manual_seed(7);
    let model = Net::new(&Generator::new(1));
    let mut opt = Adam::new(model.parameters(), 0.01);
    let g = Generator::new(3);
    let mut order: Vec<usize> = (0..n_train).collect();
    let steps = n_train.div_ceil(digits::BATCH) as u64;
    let pb = ProgressBar::new(steps * opts.epochs as u64);
    pb.set_style(
        ProgressStyle::with_template("[{bar:30}] {pos}/{len} steps {msg}")?.progress_chars("=> "),
    );
    let (mut train_hist, mut test_hist) = (Vec::new(), Vec::new());
    for epoch in 1..=opts.epochs {
        let t0 = Instant::now();
        let train_loss = train_epoch(&model, &mut opt, &data, &mut order, &g, || pb.inc(1))?;
        let took = t0.elapsed();
        let (test_loss, test_acc, _) = evaluate(&model, &data.x_test, &data.y_test)?;
        train_hist.push(train_loss);
        test_hist.push(test_loss);
        let line = format!(
            "epoch {epoch:>3}: train loss {train_loss:.4}, test loss {test_loss:.4}, test acc {:.1}%, {:.0?}/epoch",
            100.0 * test_acc,
            took
        );
        pb.set_message(format!("test acc {:.1}%", 100.0 * test_acc));
        // Without a terminal the bar is hidden, and so are its `println`s.
        if pb.is_hidden() {
            println!("{line}");
        } else {
            pb.println(line);
        }
    }
    pb.finish_and_clear();
    report(&model, &data, (&train_hist, &test_hist), &opts.out)?;
    println!("took {:.2?}", start.elapsed());
    Ok(())
}

/// The final accuracies, and the pictures: the loss curves and the misclassified test
/// images (the first 16) in `out`.
fn report(
    model: &Net<NdTensor<E>>,
    data: &Digits<NdTensor<E>>,
    (train_hist, test_hist): (&[f64], &[f64]),
    out: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let n_test = data.test_labels.len();

    let (_, train_acc, _) = evaluate(model, &data.x_train, &data.y_train)?;
    let (test_loss, test_acc, pred) = evaluate(model, &data.x_test, &data.y_test)?;
    let wrong: Vec<usize> = (0..n_test)
        .filter(|i| pred[*i] != data.test_labels[*i])
        .collect();
    println!(
        "final: train accuracy {:.1}%, test accuracy {:.1}% ({}/{n_test}), test loss {test_loss:.4}",
        100.0 * train_acc,
        100.0 * test_acc,
        n_test - wrong.len()
    );
    std::fs::create_dir_all(out)?;
    let curve = out.join("loss_curve.png");
    png_out::loss_curve(&curve, train_hist, test_hist)?;
    let shown: Vec<usize> = wrong.iter().copied().take(16).collect();
    let images: Vec<[u8; 64]> = shown.iter().map(|i| data.test_pixels[*i]).collect();
    let mistakes = out.join("misclassified.png");
    png_out::mistakes(&mistakes, &images)?;
    let labels: Vec<String> = shown
        .iter()
        .map(|i| format!("{} as {}", data.test_labels[*i], pred[*i]))
        .collect();
    println!("loss curve: {}", curve.display());
    println!(
        "misclassified ({} shown, true as predicted, row by row: {}): {}",
        shown.len(),
        labels.join(", "),
        mistakes.display()
    );
    Ok(())
}
