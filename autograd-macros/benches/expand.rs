//! Macro expansion cost: `autograd_ops!` on a synthetic YAML of N entries (parse, torchgen's
//! analysis, emission, and the token round trip the macro does), for N = 75 .. 600, to show
//! the time and its growth with the entry count.
//!
//! `cargo bench -p autograd-macros --bench expand`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

/// N entries: binary ops with saved inputs and a saved property, unary ops saving their
/// output, two-output ops: the shapes a real derivatives.yaml has.
fn synthetic_yaml(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        match i % 3 {
            0 => s.push_str(&format!(
                "- name: binary{i}.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n  self: sum_to(&mul_tensor(&grad, &other), self.sizes())\n  other: mul_scalar(&mul_tensor(&grad, &self), alpha)\n"
            )),
            1 => s.push_str(&format!("- name: unary{i}(Tensor self) -> Tensor\n  self: mul_tensor(&grad, &result)\n")),
            _ => s.push_str(&format!(
                "- name: reduce{i}.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)\n  output_differentiability: [True, False]\n  self: scatter(&grad, dim, &indices, self.sizes(), keepdim)\n"
            )),
        }
    }
    s
}

fn expand(c: &mut Criterion) {
    let mut group = c.benchmark_group("autograd_ops! expansion");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    for n in [75usize, 150, 300, 600] {
        let yaml = synthetic_yaml(n);
        let input: proc_macro2::TokenStream = {
            let lit = proc_macro2::Literal::string(&yaml);
            quote::quote!(yaml = #lit)
        };
        // The expansion must succeed (an error would make the benchmark meaningless).
        // Files go where the macro itself writes them: its OUT_DIR (benches get it too).
        let dir = std::path::Path::new(env!("OUT_DIR"));
        let out = autograd_codegen::emit::expand_macro(input.clone(), Some(dir), None).to_string();
        assert!(
            !out.contains("compile_error"),
            "{}",
            &out[..out.len().min(500)]
        );
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &input, |b, input| {
            b.iter(|| {
                black_box(autograd_codegen::emit::expand_macro(
                    black_box(input.clone()),
                    Some(dir),
                    None,
                ))
            })
        });
    }
    group.finish();
}

/// The analysis alone (YAML, schemas, torchgen's analysis), to split the cost.
fn analysis_only(c: &mut Criterion) {
    let mut group = c.benchmark_group("analysis only");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    for n in [75usize, 300, 600] {
        let mut config = autograd_codegen::emit::Config::new("<inline>");
        config.derivatives_text = Some(synthetic_yaml(n));
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &config, |b, config| {
            b.iter(|| {
                black_box(autograd_codegen::emit::analyze_config(config).map(|a| a.results.len()))
            })
        });
    }
    group.finish();
}

/// Emission as tokens, without the generated file (what the macro did before it wrote one).
fn tokens_only(c: &mut Criterion) {
    let mut group = c.benchmark_group("tokens only");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    let n = 300usize;
    {
        let mut config = autograd_codegen::emit::Config::new("<inline>");
        config.derivatives_text = Some(synthetic_yaml(n));
        config.track_files = false;
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &config, |b, config| {
            b.iter(|| {
                proc_macro2::fallback::force();
                let r = autograd_codegen::emit::generate(config).map(|t| t.into_iter().count());
                proc_macro2::fallback::unforce();
                black_box(r)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, expand, analysis_only, tokens_only);
criterion_main!(benches);
