//! [`record`] and its forms: an op's node put into the graph, its outputs wrapped as
//! variables.

use super::*;

/// Whether an op on `inputs` must be recorded: grad mode is on and at least one
/// input requires grad. The generated wrappers skip building a node otherwise.
#[inline]
pub fn should_record<T: Tensor>(inputs: &[&Variable<T>]) -> bool {
    crate::mode::is_grad_enabled() && inputs.iter().any(|v| v.requires_grad())
}

/// A node's graph metadata: its edges to `inputs`, the outputs' `meta`, its place in
/// the order of the thread's nodes (counted as live from here); and whether the graph
/// below it is ordered by sequence number ([`NodeRef::ordered`]).
///
/// Always inlined into its two callers: called, it cost a prologue and a copy of the
/// cell from its frame to the caller's (about 30 instructions an op on the chain bench).
#[inline(always)]
fn build_cell<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    meta: NodeMeta,
) -> (NewCell<Graph<T>, N>, bool) {
    let seq = if N::takes_last_sequence_nr() {
        u64::MAX
    } else {
        SEQUENCE_NR.with(|s| {
            let n = s.get();
            s.set(n + 1);
            n
        })
    };
    let mut edges = EdgeList::<T>::with_len(inputs.len());
    let mut ordered = true;
    for (slot, v) in edges.iter_mut().zip(inputs) {
        *slot = v.and_then(Variable::gradient_edge);
        if let Some(Edge::Node { node, .. }) = slot {
            ordered &= node.ordered() && node.cell().seq < seq;
        }
    }
    LIVE_NODES.with(|c| c.set(c.get() + 1));
    let info = CellInfo {
        edges,
        meta,
        seq,
        task_slot: AtomicU64::new(0),
    };
    (NewCell::new(info, node), ordered)
}

/// Puts a node in the arena: a handle, and `refs` references for the outputs.
fn new_cell<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    meta: NodeMeta,
    refs: usize,
) -> (NodeHandle<T, N>, OutputRefs<Graph<T>, N>) {
    let (cell, ordered) = build_cell(node, inputs, meta);
    let (handle, refs) = rec::TypedRc::new(cell, ordered, refs);
    let handle = NodeHandle(handle);
    if is_anomaly_enabled() {
        handle.node_ref().note_anomaly();
    }
    (handle, refs)
}

/// The outputs of an op being recorded by [`record_saving`], for the node to
/// save: [`save`](Self::save) is what `SavedVariable::new(&output, true)`
/// gives once the output exists.
pub struct NewOutputs<'a, T: Tensor, N: Node<T>, const K: usize> {
    raw: &'a [T; K],
    node: &'a Pending<Graph<T>, N>,
    /// Whether [`save`](Self::save) was called (the node's `own_outputs`).
    saved: Cell<bool>,
}

impl<T: Tensor, N: Node<T>, const K: usize> NewOutputs<'_, T, N, K> {
    /// Output `k` (`k < K`), saved by its own node.
    pub fn save(&self, k: usize) -> SavedVariable<T> {
        self.saved.set(true);
        SavedVariable::fresh_output(self.raw[k].clone(), OwnNode(self.node.own()), k as u32)
    }
}

/// [`record_generated`] for an op whose node saves outputs, without locking
/// the node to store them: when neither saved-tensor hooks nor forward-mode
/// AD are active on this thread (and the op has at most two outputs), `save`
/// fills the node's saved outputs before the node is in the graph (the raw
/// data is cloned once, before it becomes a variable) and the handle is
/// `None`. Otherwise `save` is not called and the handle is returned: the
/// caller sets the outputs' tangents and saves them through it, as after
/// [`record_generated`]. Measured on the runtime's chain bench: locking the
/// node and the handle's reference count were 3 of a step's 32 atomic
/// read-modify-writes in the forward pass, saving an output 5 more.
pub fn record_saving<T: Tensor, N: Node<T>, const K: usize>(
    mut node: N,
    inputs: &[Option<&Variable<T>>],
    outputs: [T; K],
    save: impl FnOnce(&mut N, &NewOutputs<'_, T, N, K>),
) -> ([Variable<T>; K], Option<NodeHandle<T, N>>) {
    let fast = K > 0
        && K <= NODE_COUNTERS
        && super::default_hooks::<T>().is_none()
        && !crate::levels::is_forward_ad_enabled();
    if !fast {
        let (outs, handle) = record_generated(node, inputs, outputs);
        return (outs, Some(handle));
    }
    let pending = Pending::<Graph<T>, N>::new();
    let new = NewOutputs {
        raw: &outputs,
        node: &pending,
        saved: Cell::new(false),
    };
    save(&mut node, &new);
    if new.saved.get() {
        pending.set_own_outputs();
    }
    let meta = NodeMeta::of(&outputs);
    let (cell, ordered) = build_cell(node, inputs, meta);
    let refs = pending.publish(cell, ordered, K);
    let outs = wrap_outputs(outputs, refs);
    if is_anomaly_enabled()
        && let Some(node) = outs[0].grad_fn()
    {
        node.note_anomaly();
    }
    (outs, None)
}

/// The output variables of a new node: output `k` gets `grad_fn` = the node (one of the
/// counts `refs` hands out) and `output_nr` = `k`.
fn wrap_outputs<T: Tensor, N: Node<T>, const K: usize>(
    outputs: [T; K],
    mut refs: OutputRefs<Graph<T>, N>,
) -> [Variable<T>; K] {
    let mut nr = 0u32;
    outputs.map(|data| {
        let grad_fn = NodeRef(refs.next().expect("one reference per output"));
        let v = Variable::with_grad_fn(data, grad_fn, nr);
        nr += 1;
        v
    })
}

/// Records an op: puts `node` in the graph with one edge per entry of
/// `inputs` (`None` for non-differentiable inputs; inputs that do not require
/// grad get no edge either) and wraps the raw `outputs` into variables whose
/// `grad_fn` is the node, with `output_nr` 0, 1, ….
///
/// Returns the output variables and a typed [`NodeHandle`] for saving
/// outputs into the node afterwards. Outputs that are not differentiable
/// (e.g. integer indices) should not be passed here: wrap them with
/// [`Variable::from_data`]. Call it only when [`should_record`] is true.
///
/// Allocations: the node goes into the thread's arena chunk (edges and output
/// metadata inline for up to two inputs and one output); one `Arc` per output
/// variable.
///
/// Under forward-mode AD, a node recorded here has no forward rule: when an input has a
/// tangent, the outputs' tangent is PyTorch's error for a custom `Function` without `jvp`
/// (never a silent zero). Give a custom op a rule with
/// [`forward::propagate`](crate::tangents::propagate) after recording.
pub fn record<T: Tensor, N: Node<T>, const K: usize>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    outputs: [T; K],
) -> ([Variable<T>; K], NodeHandle<T, N>) {
    let (outs, handle) = record_generated(node, inputs, outputs);
    no_forward_rule(inputs, &outs);
    (outs, handle)
}

/// [`record`] for generated code and the runtime's own ops, which set tangents themselves.
pub fn record_generated<T: Tensor, N: Node<T>, const K: usize>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    outputs: [T; K],
) -> ([Variable<T>; K], NodeHandle<T, N>) {
    let meta = NodeMeta::of(&outputs);
    let (handle, refs) = new_cell(node, inputs, meta, K);
    (wrap_outputs(outputs, refs), handle)
}

/// [`record`] for a number of outputs known only at run time.
pub fn record_vec<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    outputs: Vec<T>,
) -> (Vec<Variable<T>>, NodeHandle<T, N>) {
    let (outs, handle) = record_vec_generated(node, inputs, outputs);
    no_forward_rule(inputs, &outs);
    (outs, handle)
}

/// [`record_vec`] for generated code, which sets tangents itself.
pub fn record_vec_generated<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    outputs: Vec<T>,
) -> (Vec<Variable<T>>, NodeHandle<T, N>) {
    let meta = NodeMeta::of(&outputs);
    let (handle, refs) = new_cell(node, inputs, meta, outputs.len());
    let outs = outputs
        .into_iter()
        .zip(refs)
        .enumerate()
        .map(|(nr, (data, grad_fn))| Variable::with_grad_fn(data, NodeRef(grad_fn), nr as u32))
        .collect();
    (outs, handle)
}

/// Records an in-place op on `self_`: checks that `self_` is not a leaf
/// requiring grad, computes the edges from `inputs` (which normally include
/// `self_`, whose *old* history becomes an edge), replaces `self_`'s data with
/// `new_data` if given (pass `None` when the raw op already mutated shared
/// storage), bumps its version counter and rebases its history onto the new
/// node (`grad_fn` = node, `output_nr` = 0).
///
/// When nothing needs recording ([`should_record`] false), the wrapper should
/// still call [`Variable::check_inplace`], replace the data and
/// [`bump_version`](Variable::bump_version).
pub fn record_inplace<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    self_: &Variable<T>,
    new_data: Option<T>,
) -> Result<NodeHandle<T, N>, AutogradError> {
    let handle = record_inplace_generated(node, inputs, self_, new_data)?;
    no_forward_rule(inputs, std::slice::from_ref(self_));
    Ok(handle)
}

/// PyTorch's error for a custom `Function` without `jvp`, raised when it is used under
/// forward-mode AD.
pub const ERR_NO_JVP: &str = "You must implement the jvp function for custom autograd.Function to use it with forward mode AD.";

/// Outputs of a node without a forward rule get [`ERR_NO_JVP`] as their tangent at every
/// visible level where an input has one.
fn no_forward_rule<T: Tensor>(inputs: &[Option<&Variable<T>>], outputs: &[Variable<T>]) {
    if !crate::levels::is_forward_ad_enabled() {
        return;
    }
    for level in crate::levels::visible_levels() {
        let tangent = inputs
            .iter()
            .flatten()
            .any(|i| !matches!(i.fw_grad_at(level), Ok(None)));
        if tangent {
            for o in outputs {
                o.set_own_tangent(
                    level,
                    crate::variable::Tangent::Error(AutogradError::msg(ERR_NO_JVP)),
                );
            }
        }
    }
}

/// [`record_inplace`] for generated code, which sets tangents itself.
pub fn record_inplace_generated<T: Tensor, N: Node<T>>(
    node: N,
    inputs: &[Option<&Variable<T>>],
    self_: &Variable<T>,
    new_data: Option<T>,
) -> Result<NodeHandle<T, N>, AutogradError> {
    self_.check_inplace()?;
    let meta = match &new_data {
        Some(d) => NodeMeta::one(d),
        None => self_.with_data(NodeMeta::one),
    };
    let (handle, _) = new_cell(node, inputs, meta, 0);
    if let Some(d) = new_data {
        self_.set_data(d);
    }
    self_.bump_version();
    self_.rebase_history(handle.node_ref());
    Ok(handle)
}

/// Refuses arguments that require grad for an `out=` variant of `op`
/// (when grad mode is on), with PyTorch's message.
pub fn check_out<T: Tensor>(op: &str, args: &[&Variable<T>]) -> Result<(), AutogradError> {
    if should_record(args) {
        return Err(AutogradError::OutRequiresGrad { op: op.to_string() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mode::no_grad;
    use crate::saved_hooks::saved_tensors_hooks;
    use crate::tensor::testing::{Val, val};

    struct Two;
    impl Node<Val> for Two {
        fn name(&self) -> &str {
            "TwoBackward0"
        }
        fn apply(&mut self, g: VariableList<Val>) -> Result<VariableList<Val>, AutogradError> {
            Ok(g)
        }
    }

    struct Keeps {
        out: SavedVariable<Val>,
    }
    impl Node<Val> for Keeps {
        fn name(&self) -> &str {
            "KeepsBackward0"
        }
        fn apply(&mut self, g: VariableList<Val>) -> Result<VariableList<Val>, AutogradError> {
            Ok(g)
        }
        fn visit_saved(&self, f: &mut dyn FnMut(&str, &SavedVariable<Val>)) {
            f("out", &self.out);
        }
    }

    fn keeps() -> Keeps {
        Keeps {
            out: SavedVariable::default(),
        }
    }

    #[test]
    fn should_record_needs_grad_mode_and_an_input_that_requires_grad() {
        let (x, c) = (Variable::new(val(1.0), true), Variable::from_data(val(2.0)));
        assert!(should_record(&[&c, &x]) && !should_record(&[&c]));
        let _g = no_grad();
        assert!(!should_record(&[&x]));
    }

    #[test]
    fn outputs_take_the_node_and_their_index_and_the_node_its_inputs_edges() {
        let (x, c) = (Variable::new(val(1.0), true), Variable::from_data(val(2.0)));
        let ([a, b], _) = record(Two, &[Some(&x), Some(&c)], [val(3.0), val(4.0)]);
        let n = a.grad_fn().unwrap();
        assert!(b.grad_fn().unwrap().ptr_eq(&n));
        assert_eq!((a.output_nr(), b.output_nr()), (0, 1));
        assert_eq!((a.data(), b.data()), (val(3.0), val(4.0)));
        assert!(a.requires_grad() && !a.is_leaf());
        let edges = n.next_edges();
        assert!(edges[0].as_ref().unwrap().leaf().unwrap().ptr_eq(&x));
        assert!(edges[1].is_none(), "a constant input has no edge");
    }

    #[test]
    fn record_saving_saves_outputs_in_the_node_unless_saved_tensor_hooks_are_in_scope() {
        let x = Variable::new(val(1.0), true);
        let ([y], h) = record_saving(keeps(), &[Some(&x)], [val(2.0)], |n, o| n.out = o.save(0));
        assert!(h.is_none(), "saved in place: no handle");
        let saved = || y.grad_fn().unwrap().saved_tensors();
        assert_eq!(saved(), vec![("out".to_string(), Some(vec![]))]);

        let _hooks = saved_tensors_hooks(
            |v: &Variable<Val>| Ok(v.data()),
            |p: &Val| Ok(Variable::from_data(p.clone())),
        );
        let ([y], h) = record_saving(keeps(), &[Some(&x)], [val(2.0)], |_, _| {
            panic!("with hooks in scope the caller saves through the handle")
        });
        let saved = || y.grad_fn().unwrap().saved_tensors();
        assert!(saved().is_empty());
        h.unwrap().with(|n| n.out = SavedVariable::new(&y, true));
        assert_eq!(saved(), vec![("out".to_string(), Some(vec![]))]);
    }
}
