//! The whole analysis of PyTorch's corpus, in process: parse + analyze, and parse + analyze +
//! JSON. Reads `../shared/pytorch` (or `$AUTOGRAD_PYTORCH_DIR`); without it, says so and
//! measures nothing. See `docs/analysis-benchmark.md` for figures and how to reproduce them.
//!
//! ```text
//! cargo bench -p autograd-codegen --bench analyze
//! ```

use autograd_codegen::analysis::{AnalysisOptions, json};
use autograd_codegen::api::{Sources, analyze_sources};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn corpus() -> Option<Sources> {
    let dir = autograd_codegen::api::pytorch_data_dir("analyze benchmark")?;
    Some(Sources::pytorch(&dir).expect("corpus readable"))
}

fn bench(c: &mut Criterion) {
    let Some(src) = corpus() else {
        return;
    };
    let options = AnalysisOptions::torchgen();
    let mut group = c.benchmark_group("pytorch");
    group.sample_size(30);
    group.bench_function("parse+analyze", |b| {
        b.iter(|| {
            let a = analyze_sources(black_box(&src), &options).expect("corpus analyzes");
            black_box(a.results.len())
        })
    });
    let source = serde_json::json!({"generator": "bench"});
    group.bench_function("parse+analyze+json", |b| {
        let mut buf = Vec::with_capacity(4 << 20);
        b.iter(|| {
            let a = analyze_sources(black_box(&src), &options).expect("corpus analyzes");
            buf.clear();
            json::write_json(&mut buf, &a, &source).expect("write to Vec");
            black_box(buf.len())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
