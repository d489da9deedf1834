//! The real PyTorch corpus: the functions torchgen generates from `autogen:`, as torchgen lists
//! them (3110 functions, the last 520 generated).
//! Needs `../shared/pytorch` (or `$AUTOGRAD_PYTORCH_DIR`); says so in one line when absent.

use autograd_codegen::diagnostics::Ctxt;
use autograd_codegen::model::autogen::add_generated_native_functions;
use autograd_codegen::model::native::{
    NativeFunction, Variant, parse_native_functions, parse_tags,
};
use std::collections::BTreeSet;
use std::sync::Arc;

fn load(dir: &std::path::Path) -> Vec<NativeFunction> {
    let text = std::fs::read_to_string(dir.join("native_functions.yaml")).unwrap();
    let tags_text = std::fs::read_to_string(dir.join("tags.yaml")).unwrap();
    let mut cx = Ctxt::new();
    let tags = parse_tags(&Arc::from("tags.yaml"), &tags_text, &mut cx);
    let mut fns =
        parse_native_functions(&Arc::from("native_functions.yaml"), &text, &tags, &mut cx);
    add_generated_native_functions(&mut fns, &mut cx);
    cx.check(fns).unwrap_or_else(|e| panic!("{e}"))
}

/// `(index, line of the entry generated from, schema, tags)`, copied from torchgen's list.
const EXPECTED: &[(usize, usize, &str, &[&str])] = &[
    (
        2590,
        130,
        "_new_zeros_with_same_feature_meta.out(Tensor self, Tensor other, *, int self_num_batch_dims=0, Tensor(a!) out) -> Tensor(a!)",
        &["generated", "out", "pt2_compliant_tag"],
    ),
    (
        2591,
        215,
        "_cudnn_ctc_loss.out(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, int blank, bool deterministic, bool zero_infinity, *, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))",
        &["generated", "out", "pt2_compliant_tag"],
    ),
    (
        2611,
        1112,
        "bernoulli.Tensor(Tensor self, Tensor p, *, Generator? generator=None) -> Tensor",
        &["generated", "nondeterministic_seeded", "pt2_compliant_tag"],
    ),
    (
        2730,
        4390,
        "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)",
        &["generated", "pt2_compliant_tag"],
    ),
    (
        2882,
        7830,
        "_fused_moving_avg_obs_fq_helper.out(Tensor self, Tensor observer_on, Tensor fake_quant_on, Tensor(a!) running_min, Tensor(b!) running_max, Tensor(c!) scale, Tensor(d!) zero_point, float averaging_const, int quant_min, int quant_max, int ch_axis, bool per_row_fake_quant=False, bool symmetric_quant=False, *, Tensor(e!) out0, Tensor(f!) out1) -> (Tensor(e!), Tensor(f!))",
        &["generated", "out", "pt2_compliant_tag"],
    ),
    (
        2883,
        7830,
        "_fused_moving_avg_obs_fq_helper_functional(Tensor self, Tensor observer_on, Tensor fake_quant_on, Tensor running_min, Tensor running_max, Tensor scale, Tensor zero_point, float averaging_const, int quant_min, int quant_max, int ch_axis, bool per_row_fake_quant=False, bool symmetric_quant=False) -> (Tensor output, Tensor mask, Tensor running_min_out, Tensor running_max_out, Tensor scale_out, Tensor zero_point_out)",
        &["generated", "pt2_compliant_tag"],
    ),
    (
        2884,
        7854,
        "_to_copy.out(Tensor self, *, bool non_blocking=False, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)",
        &["generated", "out", "pt2_compliant_tag"],
    ),
    (
        2946,
        10425,
        "_amp_foreach_non_finite_check_and_unscale.out(Tensor[] self, Tensor(b!) found_inf, Tensor inv_scale, *, Tensor(a!)[] out) -> ()",
        &["generated", "out", "pt2_compliant_tag"],
    ),
    (
        2947,
        10425,
        "_amp_foreach_non_finite_check_and_unscale(Tensor[] self, Tensor found_inf, Tensor inv_scale) -> (Tensor[] self_out, Tensor found_inf_out)",
        &["generated", "pt2_compliant_tag"],
    ),
    (
        2990,
        11165,
        "_foreach_erf.out(Tensor[] self, *, Tensor(a!)[] out) -> ()",
        &["generated", "out", "pt2_compliant_tag"],
    ),
    (
        3109,
        16248,
        "_fused_adagrad.tensor_lr(Tensor[] self, Tensor[] grads, Tensor[] state_sums, Tensor[] state_steps, *, Tensor lr, float lr_decay, float weight_decay, float eps, bool maximize, Tensor? grad_scale=None, Tensor? found_inf=None) -> (Tensor[] self_out, Tensor[] grads_out, Tensor[] state_sums_out)",
        &["generated", "pt2_compliant_tag"],
    ),
];

#[test]
fn generated_functions_match_torchgen() {
    let Some(dir) = autograd_codegen::api::pytorch_data_dir("autogen corpus test") else {
        return;
    };
    let fns = load(&dir);
    assert_eq!(fns.len(), 3110);
    let (read, generated) = fns.split_at(2590);
    assert!(read.iter().all(|f| !f.has_tag("generated")));
    assert!(generated.iter().all(|f| f.has_tag("generated")));
    let count = |tag: &str| generated.iter().filter(|f| f.has_tag(tag)).count();
    assert_eq!(count("out"), 478);
    assert_eq!(count("nondeterministic_seeded"), 42);
    assert_eq!(count("view_copy"), 39);
    assert_eq!(count("pt2_compliant_tag"), 520);
    for f in generated {
        assert_eq!(
            f.variants,
            BTreeSet::from([Variant::Function]),
            "{}",
            f.func
        );
        assert!(!f.has_composite_implicit_autograd_kernel(), "{}", f.func);
        assert!(!f.is_view_op() && !f.manual_cpp_binding, "{}", f.func);
        assert!(f.autogen.is_empty(), "{}", f.func);
    }
    // is_abstract is the base entry's: only core composite operators give non-abstract ones.
    let concrete: Vec<String> = generated
        .iter()
        .filter(|f| !f.is_abstract)
        .map(|f| f.func.name.to_string())
        .collect();
    assert_eq!(
        concrete,
        [
            "avg_pool1d.out",
            "adaptive_avg_pool1d.out",
            "upsample_bilinear2d.vec_out",
            "upsample_nearest2d.vec_out",
        ]
    );
    for &(i, line, schema, tags) in EXPECTED {
        let f = &fns[i];
        assert_eq!(f.func.to_string(), schema, "function {i}");
        assert_eq!(f.loc.line, line, "{schema}");
        assert_eq!(
            f.tags.iter().map(String::as_str).collect::<Vec<_>>(),
            tags,
            "{schema}"
        );
    }
}
