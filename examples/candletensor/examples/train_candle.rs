//! The Iris MLP of ndtensor's training example, on candle-core tensors: the same data split,
//! model (`Linear(4, 16) -> ReLU -> Dropout(0.1) -> Linear(16, 3)`), Adam and epochs, with
//! the op set's `nn` and generated autograd over `CandleTensor` (f64).
//!
//! `cargo run --release -p candletensor --example train_candle`

#[path = "../../ndtensor/examples/iris/mod.rs"]
mod iris;

use autograd::types::Generator;
use autograd_opset::nn::Adam;
use candletensor::{CandleTensor, manual_seed};
use iris::{Iris, Mlp, evaluate, train_epoch};

const EPOCHS: usize = 150;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let g = Generator::new(42);
    let data: Iris<CandleTensor> = iris::load(&g);
    manual_seed(7);
    let model = Mlp::new(data.d, &Generator::new(1));
    let mut opt = Adam::new(model.parameters(), 0.01);
    let mut order: Vec<usize> = (0..data.x_train.shape()[0]).collect();
    for epoch in 1..=EPOCHS {
        train_epoch(&model, &mut opt, &data, &mut order, &g)?;
        if epoch % 50 == 0 || epoch == 1 {
            let (loss, acc) = evaluate(&model, &data.x_train, &data.y_train)?;
            println!(
                "epoch {epoch:>3}: train loss {loss:.4}, train acc {:.1}%",
                100.0 * acc
            );
        }
    }
    let (test_loss, test_acc) = evaluate(&model, &data.x_test, &data.y_test)?;
    let n_test = data.x_test.shape()[0];
    println!(
        "candle backend: test accuracy {:.1}% ({}/{n_test}), test loss {test_loss:.4}",
        100.0 * test_acc,
        (test_acc * n_test as f64).round()
    );
    Ok(())
}
