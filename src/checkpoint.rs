//! Activation checkpointing: PyTorch's non-reentrant `torch.utils.checkpoint.checkpoint`.
//!
//! [`checkpoint`] runs a function so that the tensors its ops save for backward are not
//! kept: a saved-tensor pack hook keeps only a placeholder (and the tensor's shape and
//! dtype). When backward first unpacks one of them, the function runs again on its inputs
//! (saved, with their version counters), with grad mode on and, if asked, the random state
//! it had in forward; the tensors that this recomputation saves, in the same order, are
//! what backward gets, each given its original's place in the graph (so `create_graph`
//! works through them). Memory then holds a segment's inputs instead of its activations.
//!
//! As in PyTorch:
//! * each backward pass ([`current_graph_task_id`]) recomputes once, on its first unpack; a
//!   second pass over the same graph (`retain_graph`) recomputes again;
//! * the recomputation must save as many tensors as the forward, of the same shapes and
//!   dtypes (the "default" determinism check), else backward fails with PyTorch's
//!   `torch.utils.checkpoint: ...` messages;
//! * with grad mode off, the function just runs.
//!
//! Where PyTorch stops the recomputation once it has saved as many tensors as the forward
//! (`early_stop=True`), the recomputation here runs to the end of the function and the
//! tensors it saves after those are ignored: the same values, more work. PyTorch's messages
//! end with a "Tip:" about its `debug=True` mode and `torch.compile`, which have no
//! counterpart here and are left out.
//!
//! ```
//! use autograd::checkpoint::checkpoint;
//! use autograd::runtime::Variable;
//! use autograd_toy::{Toy, ops::*};
//!
//! let x = Variable::new(Toy::vec(vec![0.5, 1.0]), true);
//! let y = checkpoint(|xs| Ok(vec![exp(&exp(&xs[0]))]), &[x.clone()])?;
//! sum(&y[0]).backward()?;
//! // d/dx exp(exp(x)) = exp(exp(x)) exp(x)
//! let g = x.grad().unwrap().data().data.to_vec();
//! assert!((g[0] - 0.5f64.exp().exp() * 0.5f64.exp()).abs() < 1e-12);
//! # Ok::<(), autograd::runtime::AutogradError>(())
//! ```

use autograd_runtime::{
    AutogradError, SavedVariable, Tensor, Variable, current_graph_task_id, enable_grad,
    is_grad_enabled, saved_tensors_hooks,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// A checkpointed function: inputs to outputs.
pub type SegmentFn<T> =
    dyn Fn(&[Variable<T>]) -> Result<Vec<Variable<T>>, AutogradError> + Send + Sync;

/// How to read and restore the random state the function draws from (PyTorch's
/// `preserve_rng_state`): the op set gives its generator's
/// (`autograd_opset::random::{get_rng_state, set_rng_state}`).
#[derive(Clone, Copy, Debug)]
pub struct RngState {
    /// The state now.
    pub get: fn() -> u64,
    /// Sets the state.
    pub set: fn(u64),
}

/// [`checkpoint_with`]'s options.
#[derive(Clone, Copy, Debug)]
pub struct CheckpointOptions {
    /// Replay the forward's random state in the recomputation, and restore the state
    /// around it (`preserve_rng_state=True`); `None`: the recomputation draws anew.
    pub rng: Option<RngState>,
    /// Compare the shapes and dtypes of the recomputed tensors with the saved ones
    /// (`determinism_check="default"`); `false`: `"none"`.
    pub determinism_check: bool,
    /// Use the first tensors the recomputation saves, as many as the forward saved, and
    /// ignore any after them (PyTorch's `early_stop=True`, which stops the recomputation
    /// there; here it runs to the end); `false`: more is an error.
    pub early_stop: bool,
}

impl Default for CheckpointOptions {
    fn default() -> Self {
        CheckpointOptions {
            rng: None,
            determinism_check: true,
            early_stop: true,
        }
    }
}

/// `f(inputs)`, with its saved tensors recomputed in backward instead of kept (see the
/// module docs). The random state is not replayed: use [`checkpoint_with`] and
/// [`CheckpointOptions::rng`] for functions that draw random numbers (dropout).
pub fn checkpoint<T, F>(f: F, inputs: &[Variable<T>]) -> Result<Vec<Variable<T>>, AutogradError>
where
    T: Tensor,
    F: Fn(&[Variable<T>]) -> Result<Vec<Variable<T>>, AutogradError> + Send + Sync + 'static,
{
    checkpoint_with(f, inputs, CheckpointOptions::default())
}

/// [`checkpoint`] with options.
pub fn checkpoint_with<T, F>(
    f: F,
    inputs: &[Variable<T>],
    options: CheckpointOptions,
) -> Result<Vec<Variable<T>>, AutogradError>
where
    T: Tensor,
    F: Fn(&[Variable<T>]) -> Result<Vec<Variable<T>>, AutogradError> + Send + Sync + 'static,
{
    if !is_grad_enabled() {
        return f(inputs);
    }
    let frame = Arc::new(Frame {
        f: Arc::new(f),
        inputs: inputs
            .iter()
            .map(|x| SavedVariable::new(x, false))
            .collect(),
        rng: options.rng.map(|r| (r, (r.get)())),
        options,
        state: Mutex::new(State::default()),
    });
    let (pack, unpack) = (Arc::clone(&frame), Arc::clone(&frame));
    let _hooks = saved_tensors_hooks::<T, _, _, _>(
        move |x| Ok(pack.pack(x)),
        move |h: &Arc<Holder>| unpack.unpack(h),
    );
    let out = (frame.f)(inputs)?;
    frame.state().forward_completed = true;
    Ok(out)
}

/// A saved tensor's placeholder: its position among the segment's saved tensors.
#[derive(Debug)]
pub struct Holder {
    index: usize,
}

/// What the determinism check compares: shape and dtype.
type Meta = (Vec<usize>, &'static str);

/// One checkpointed call: its function, inputs and random state, and what each backward
/// pass recomputed.
struct Frame<T: Tensor> {
    f: Arc<SegmentFn<T>>,
    inputs: Vec<SavedVariable<T>>,
    rng: Option<(RngState, u64)>,
    options: CheckpointOptions,
    state: Mutex<State<T>>,
}

struct State<T: Tensor> {
    /// The placeholders handed out in forward, in order (weak: a freed one needs no value).
    holders: Vec<Weak<Holder>>,
    metas: Vec<Meta>,
    /// Per backward pass: the recomputed values by position (taken when unpacked).
    passes: HashMap<u64, Vec<Option<Variable<T>>>>,
    forward_completed: bool,
}

impl<T: Tensor> Default for State<T> {
    fn default() -> Self {
        State {
            holders: Vec::new(),
            metas: Vec::new(),
            passes: HashMap::new(),
            forward_completed: false,
        }
    }
}

/// Ids for unpacks outside a backward pass (each its own recomputation, as PyTorch's
/// random ids).
static OUTSIDE_PASS: AtomicU64 = AtomicU64::new(1 << 63);

impl<T: Tensor> Frame<T> {
    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The forward's pack hook: a placeholder, and the tensor's metadata.
    fn pack(&self, x: &Variable<T>) -> Arc<Holder> {
        let mut st = self.state();
        let holder = Arc::new(Holder {
            index: st.holders.len(),
        });
        st.holders.push(Arc::downgrade(&holder));
        st.metas.push(meta(x));
        holder
    }

    /// The forward's unpack hook: the recomputed tensor at the holder's position.
    fn unpack(&self, holder: &Holder) -> Result<Variable<T>, AutogradError> {
        let gid =
            current_graph_task_id().unwrap_or_else(|| OUTSIDE_PASS.fetch_add(1, Ordering::Relaxed));
        if !self.state().passes.contains_key(&gid) {
            let values = self.recompute()?;
            self.state().passes.insert(gid, values);
        }
        let mut st = self.state();
        let values = st.passes.get_mut(&gid).expect("recomputed above");
        let v = values.get_mut(holder.index).and_then(Option::take);
        if values.iter().all(Option::is_none) {
            st.passes.remove(&gid);
        }
        v.ok_or_else(|| {
            AutogradError::msg(
                "torch.utils.checkpoint: Unpack is being triggered for a tensor that was \
                 already unpacked once. If you are calling ctx.saved_tensors in backward, make \
                 sure to do so only once. Otherwise please open an issue with details on your \
                 use case.",
            )
        })
    }

    /// Runs the function again, with grad mode on and the forward's random state, and
    /// returns what it saved, by position (checked against the forward's).
    fn recompute(&self) -> Result<Vec<Option<Variable<T>>>, AutogradError> {
        let inputs = self
            .inputs
            .iter()
            .map(SavedVariable::unpack)
            .collect::<Result<Vec<_>, _>>()?;
        let saved: Arc<Mutex<Vec<Variable<T>>>> = Arc::default();
        let sink = Arc::clone(&saved);
        let outer = self.rng.map(|(r, s)| {
            let now = (r.get)();
            (r.set)(s);
            (r, now)
        });
        let run = {
            let _hooks = saved_tensors_hooks::<T, _, _, _>(
                move |x| {
                    let x = if x.requires_grad() {
                        x.detach()
                    } else {
                        x.clone()
                    };
                    lock(&sink).push(x.clone());
                    Ok(x)
                },
                |x: &Variable<T>| Ok(x.clone()),
            );
            let _grad = enable_grad();
            (self.f)(&inputs)
        };
        if let Some((r, now)) = outer {
            (r.set)(now);
        }
        run?;
        let saved = std::mem::take(&mut *lock(&saved));
        self.matched(saved)
    }

    /// The recomputed tensors, if they match the forward's in number and metadata.
    fn matched(
        &self,
        mut saved: Vec<Variable<T>>,
    ) -> Result<Vec<Option<Variable<T>>>, AutogradError> {
        let st = self.state();
        let n = st.holders.len();
        // A backward inside the forward (saved tensors still to come) checks nothing.
        let check = st.forward_completed;
        if saved.len() > n && check && !self.options.early_stop {
            return Err(AutogradError::msg(
                "torch.utils.checkpoint: trying to save more tensors during recomputation \
                 than during the original forward pass.",
            ));
        }
        saved.truncate(n);
        if saved.len() != n && check {
            return Err(AutogradError::msg(format!(
                "torch.utils.checkpoint: A different number of tensors was saved during the \
                 original forward and recomputation.\nNumber of tensors saved during forward: \
                 {n}\nNumber of tensors saved during recomputation: {}.",
                saved.len()
            )));
        }
        if check && self.options.determinism_check {
            metadata_match(&saved, &st)?;
        }
        let mut out: Vec<Option<Variable<T>>> = saved
            .into_iter()
            .zip(&st.holders)
            .map(|(x, h)| (h.strong_count() > 0).then_some(x))
            .collect();
        out.resize(n, None);
        Ok(out)
    }
}

/// The determinism check: each recomputed tensor whose holder lives has the saved one's
/// shape and dtype.
fn metadata_match<T: Tensor>(saved: &[Variable<T>], st: &State<T>) -> Result<(), AutogradError> {
    let mut different = String::new();
    for (i, x) in saved.iter().enumerate() {
        let m = meta(x);
        if st.holders[i].strong_count() > 0 && m != st.metas[i] {
            different.push_str(&format!(
                "tensor at position {i}:\nsaved metadata: {}\nrecomputed metadata: {}\n",
                torch_meta(&st.metas[i]),
                torch_meta(&m)
            ));
        }
    }
    match different.is_empty() {
        true => Ok(()),
        false => Err(AutogradError::msg(format!(
            "torch.utils.checkpoint: Recomputed values for the following tensors have \
             different metadata than during the forward pass.\n{different}."
        ))),
    }
}

fn lock<V>(m: &Mutex<V>) -> MutexGuard<'_, V> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn meta<T: Tensor>(x: &Variable<T>) -> Meta {
    x.with_data(|d| (d.shape().to_vec(), d.dtype()))
}

/// PyTorch's print of `_default_meta_extractor`'s dict.
fn torch_meta((shape, dtype): &Meta) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let dtype = match *dtype {
        "f64" => "torch.float64",
        "f32" => "torch.float32",
        "i64" => "torch.int64",
        "bool" => "torch.bool",
        other => other,
    };
    format!(
        "{{'shape': torch.Size([{}]), 'dtype': {dtype}, 'device': device(type='cpu')}}",
        dims.join(", ")
    )
}
