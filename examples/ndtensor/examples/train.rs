//! Train a small MLP classifier (4 -> 16 -> 3, ReLU, dropout) on the Iris data set shipped by
//! `linfa-datasets`, with ndtensor's generated autograd layer, in f32.
//!
//! Run: `cargo run --release --example train`
//!
//! Writes `loss_curve.svg` beside the example's binary (`target/release/examples/`; the
//! README's `examples/ndtensor/loss_curve.svg` is a copy of one run's). Iris is an easy data set: logistic regression and
//! small MLPs reach about 95-100% test accuracy (the textbook figure, e.g. scikit-learn's and
//! most ML course examples: ~96-97%); this run reaches 96.7% (29 of its 30 held-out flowers).

mod iris;

use autograd::types::Generator;
use indicatif::{ProgressBar, ProgressStyle};
use iris::{BATCH, CLASSES, HIDDEN, Iris, Mlp, evaluate, train_epoch};
use ndtensor::nn::Adam;
use ndtensor::{NdTensor, manual_seed};
use plotters::prelude::*;
use std::time::Instant;

type E = f32;

const EPOCHS: usize = 150;

// The whole program in order (data, model, epochs, report), as a reader follows it: long on
// purpose.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    // Deterministic shuffle and an 80/20 split; `g` then draws the batches.
    let g = Generator::new(42);
    let data: Iris<NdTensor<E>> = iris::load(&g);
    let (n, d) = (data.n, data.d);
    let (x_train, y_train) = (data.x_train.clone(), data.y_train.clone());
    let (x_test, y_test) = (data.x_test.clone(), data.y_test.clone());
    println!(
        "Iris (linfa-datasets): {n} flowers, {d} features, {CLASSES} classes; {} train / {} test",
        x_train.shape()[0],
        x_test.shape()[0]
    );
    println!(
        "model: Linear({d}, {HIDDEN}) -> ReLU -> Dropout(0.1) -> Linear({HIDDEN}, {CLASSES}), f32, Adam(lr=0.01), batch {BATCH}"
    );

    manual_seed(7);
    let init = Generator::new(1);
    let model = Mlp::new(d, &init);
    let mut opt = Adam::new(model.parameters(), 0.01);

    let mut history: Vec<(f64, f64)> = Vec::with_capacity(EPOCHS);
    let pb = ProgressBar::new(EPOCHS as u64);
    pb.set_style(
        ProgressStyle::with_template("epoch {pos:>3}/{len} [{bar:30}] {msg}")?
            .progress_chars("=> "),
    );
    let mut batch_order: Vec<usize> = (0..x_train.shape()[0]).collect();
    for epoch in 1..=EPOCHS {
        train_epoch(&model, &mut opt, &data, &mut batch_order, &g)?;
        let (train_loss, train_acc) = evaluate(&model, &x_train, &y_train)?;
        let (test_loss, test_acc) = evaluate(&model, &x_test, &y_test)?;
        history.push((train_loss, test_loss));
        pb.set_message(format!(
            "loss {train_loss:.4}  train acc {:.1}%  test acc {:.1}%",
            100.0 * train_acc,
            100.0 * test_acc
        ));
        if epoch % 25 == 0 || epoch == 1 {
            let line = format!(
                "epoch {epoch:>3}: train loss {train_loss:.4}, test loss {test_loss:.4}, train acc {:.1}%, test acc {:.1}%",
                100.0 * train_acc,
                100.0 * test_acc
            );
            // Without a terminal the bar is hidden, and so are its `println`s.
            if pb.is_hidden() {
                println!("{line}");
            } else {
                pb.println(line);
            }
        }
        pb.inc(1);
    }
    pb.finish();

    let (_, train_acc) = evaluate(&model, &x_train, &y_train)?;
    let (test_loss, test_acc) = evaluate(&model, &x_test, &y_test)?;
    let curve = write_curve(&history)?;
    println!(
        "final: train accuracy {:.1}%, test accuracy {:.1}% ({}/{}), test loss {test_loss:.4}",
        100.0 * train_acc,
        100.0 * test_acc,
        (test_acc * y_test.shape()[0] as f64).round(),
        y_test.shape()[0]
    );
    println!(
        "textbook figure for Iris: ~95-100% test accuracy for logistic regression or a small MLP"
    );
    println!(
        "loss curve written to {curve}; took {:.2?}",
        start.elapsed()
    );
    Ok(())
}

/// Plots the loss curve beside the example's binary in the target directory (the build and
/// its runs write nothing into the source tree; the README's picture is a copy of one run's)
/// and returns where, relative to the current directory when inside it.
fn write_curve(history: &[(f64, f64)]) -> Result<String, Box<dyn std::error::Error>> {
    let path = std::env::current_exe()?.with_file_name("loss_curve.svg");
    let path = path
        .to_str()
        .ok_or("the target directory's path is not UTF-8")?;
    plot(history, path)?;
    let cwd = std::env::current_dir()?;
    let shown = std::path::Path::new(path)
        .strip_prefix(&cwd)
        .unwrap_or(path.as_ref());
    Ok(shown.display().to_string())
}

fn plot(history: &[(f64, f64)], path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let ymax = history.iter().map(|(a, b)| a.max(*b)).fold(0.0, f64::max) * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "ndtensor MLP on Iris: cross-entropy loss",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(1..history.len(), 0.0..ymax)?;
    chart
        .configure_mesh()
        .x_desc("epoch")
        .y_desc("loss")
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            history.iter().enumerate().map(|(i, h)| (i + 1, h.0)),
            &BLUE,
        ))?
        .label("train")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    chart
        .draw_series(LineSeries::new(
            history.iter().enumerate().map(|(i, h)| (i + 1, h.1)),
            &RED,
        ))?
        .label("test")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
