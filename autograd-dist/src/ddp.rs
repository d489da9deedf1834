//! [`Ddp`]: PyTorch's `DistributedDataParallel` (`torch/nn/parallel/distributed.py` and its
//! reducer, `torch/csrc/distributed/c10d/reducer.cpp`) for the parameters of any backend.

use crate::DistError;
use crate::bucket::{self, BucketPlan, GradSpec};
use crate::comm::{Buf, Collective, Pending, ProcessGroup};
use autograd::gradcheck::ElementAccess;
use autograd::runtime::{AutogradError, Edge, NodeRef, Variable};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// `DistributedDataParallel`'s options, with PyTorch's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DdpOptions {
    /// `bucket_cap_mb` in bytes: 25 MiB.
    pub bucket_cap_bytes: usize,
    /// The first bucket's cap: 1 MiB (`dist._DEFAULT_FIRST_BUCKET_BYTES`).
    pub first_bucket_cap_bytes: usize,
    /// `find_unused_parameters`: before each synchronised backward pass, the graph is
    /// searched from the loss, and parameters it does not reach are marked ready at once
    /// (their bucket slot holds their current gradient, or zeros), so their bucket still
    /// completes; a parameter no rank used keeps its gradient as it was. Off, a parameter
    /// without a gradient is an error, as in PyTorch.
    pub find_unused_parameters: bool,
}

impl Default for DdpOptions {
    fn default() -> Self {
        DdpOptions {
            bucket_cap_bytes: bucket::DEFAULT_BUCKET_BYTES,
            first_bucket_cap_bytes: bucket::DEFAULT_FIRST_BUCKET_BYTES,
            find_unused_parameters: false,
        }
    }
}

/// When one bucket's all-reduce ran, in one synchronised step.
#[derive(Debug, Clone)]
pub struct BucketTiming {
    /// The parameters (indices in registration order) in the bucket.
    pub params: Vec<usize>,
    /// When the hook of its last gradient handed it to the communication thread.
    pub launched: Instant,
    /// When the communication thread saw the all-reduce complete.
    pub finished: Instant,
}

/// The timeline of the last synchronised [`Ddp::backward`].
#[derive(Debug, Clone)]
pub struct StepTimeline {
    /// When the backward pass started.
    pub backward_start: Instant,
    /// When it returned (every gradient computed and accumulated).
    pub backward_end: Instant,
    /// When the averaged gradients were all in place.
    pub synced: Instant,
    /// The buckets, in reduction order.
    pub buckets: Vec<BucketTiming>,
}

impl StepTimeline {
    /// Seconds of all-reduce (launch to completion, summed over buckets).
    pub fn all_reduce_secs(&self) -> f64 {
        self.buckets
            .iter()
            .map(|b| b.finished.duration_since(b.launched).as_secs_f64())
            .sum()
    }

    /// Seconds of all-reduce that ran while backward still ran (summed over buckets).
    pub fn hidden_secs(&self) -> f64 {
        self.buckets
            .iter()
            .map(|b| {
                let end = b.finished.min(self.backward_end);
                end.saturating_duration_since(b.launched).as_secs_f64()
            })
            .sum()
    }

    /// The fraction of all-reduce time hidden behind backward (0 when there was none).
    pub fn hidden_fraction(&self) -> f64 {
        let total = self.all_reduce_secs();
        if total > 0.0 {
            self.hidden_secs() / total
        } else {
            0.0
        }
    }
}

struct BucketState {
    plan: BucketPlan,
    /// Offset of each of `plan.indices` in the flat buffer.
    offsets: Vec<usize>,
    len: usize,
    pending: usize,
    buf: Option<Buf>,
    /// The last step's buffer, reused (a fresh one would cost page faults every step).
    spare: Option<Buf>,
    launched: Option<(Pending, Instant)>,
}

struct Shared<T: ElementAccess> {
    pg: ProcessGroup,
    params: Vec<Variable<T>>,
    /// Per parameter: its bucket and position in it.
    loc: Vec<(usize, usize)>,
    buckets: Vec<BucketState>,
    next_bucket: usize,
    ready: Vec<bool>,
    /// Per parameter: the graph's edges to it whose gradient has not arrived yet.
    remaining: Vec<usize>,
    /// Per parameter: the sum of the gradients that arrived.
    partial: Vec<Option<Vec<f64>>>,
    /// Used in a backward pass since the last synchronisation (no_sync passes included).
    used: Vec<bool>,
    unused: Vec<usize>,
    marked_unused: bool,
    in_backward: bool,
    sync: bool,
    opts: DdpOptions,
    last: Option<StepTimeline>,
    /// Reused for the write-back of each gradient.
    scratch: Vec<f64>,
}

/// Data-parallel training: PyTorch's `DistributedDataParallel` for the parameters of a
/// model on any backend of the op set.
///
/// [`Ddp::new`] broadcasts the parameters from rank 0 and groups their gradients into
/// buckets ([`crate::bucket`]: 1 MiB first, then 25 MiB, in reverse order of registration).
/// During [`Ddp::backward`], as soon as a parameter's gradient is complete its value for
/// `.grad` (`.grad` + the new gradient, divided by the world size) is copied into its
/// bucket, and the hook that completes a bucket hands it to the process group's
/// communication thread, which starts its all-reduce at once while backward goes on;
/// buckets start in order, the same on every rank. When backward has returned, the
/// averaged gradients are written into the parameters' `.grad` in place, ready for the
/// optimizer's step.
///
/// PyTorch's reducer hooks each parameter's `AccumulateGrad` node, which PyTorch's engine
/// runs as soon as its gradient is ready. The runtime's engine runs leaves after every
/// other node (its order is topological depth first, and leaves have depth 0), and it
/// has no post-accumulate-grad hook, so a hook on the leaf would fire only at the end of
/// backward. `Ddp` instead finds, before each synchronised backward pass, the graph's
/// edges into each parameter, and puts a post-hook (`NodeRef::register_hook`, removed
/// after the pass) on each node with such an edge: the parameter's gradient is complete
/// when every one of those nodes has run, which is when PyTorch's engine would run its
/// `AccumulateGrad`. A tensor hook a program registers on a parameter, which could change
/// the gradient before it is accumulated, is not seen by the bucket.
pub struct Ddp<T: ElementAccess> {
    shared: Arc<Mutex<Shared<T>>>,
    pg: ProcessGroup,
}

/// The guard of [`Ddp::no_sync`].
pub struct NoSync<'a, T: ElementAccess> {
    ddp: &'a Ddp<T>,
    previous: bool,
}

impl<T: ElementAccess> Drop for NoSync<'_, T> {
    fn drop(&mut self) {
        self.ddp.lock().sync = self.previous;
    }
}

fn lock<T: ElementAccess>(m: &Mutex<Shared<T>>) -> MutexGuard<'_, Shared<T>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// PyTorch's reducer's error for parameters that got no gradient.
fn unused_error(rank: usize, missing: &[usize]) -> DistError {
    let list: Vec<String> = missing.iter().map(ToString::to_string).collect();
    DistError::Protocol(format!(
        "Expected to have finished reduction in the prior iteration before starting a new one. \
         This error indicates that your module has parameters that were not used in producing \
         loss. You can enable unused parameter detection by setting \
         `DdpOptions::find_unused_parameters` (PyTorch's `find_unused_parameters=True`), and by \
         making sure all outputs of the model participate in calculating loss.\n\
         Parameter indices which did not receive grad for rank {rank}: {}",
        list.join(" ")
    ))
}

impl<T: ElementAccess> Ddp<T> {
    /// Wraps `params` (leaves that require grad, in registration order): checks that every
    /// rank has the same number and shapes of parameters, copies rank 0's values to every
    /// rank, and registers the gradient hooks.
    pub fn new(
        pg: &ProcessGroup,
        params: Vec<Variable<T>>,
        opts: DdpOptions,
    ) -> Result<Self, DistError> {
        let r = Self::build(pg, params, opts);
        if let Err(e) = &r {
            pg.report_failure(&e.to_string());
        }
        r
    }

    fn build(
        pg: &ProcessGroup,
        params: Vec<Variable<T>>,
        opts: DdpOptions,
    ) -> Result<Self, DistError> {
        if !params.iter().any(Variable::requires_grad) {
            return Err(DistError::Protocol(
                "DistributedDataParallel is not needed when a module doesn't have any \
                 parameter that requires a gradient."
                    .to_string(),
            ));
        }
        if let Some(i) = params
            .iter()
            .position(|p| !p.is_leaf() || !p.requires_grad())
        {
            return Err(DistError::Protocol(format!(
                "parameter {i} is not a leaf that requires grad"
            )));
        }
        sync_parameters(pg, &params)?;
        let specs: Vec<GradSpec> = params
            .iter()
            .map(|p| {
                p.with_data(|d| GradSpec {
                    numel: d.numel(),
                    dtype: d.dtype(),
                })
            })
            .collect();
        let plans =
            bucket::assign_reverse(&specs, opts.first_bucket_cap_bytes, opts.bucket_cap_bytes);
        let mut loc = vec![(0, 0); params.len()];
        let buckets: Vec<BucketState> = plans
            .into_iter()
            .enumerate()
            .map(|(b, plan)| {
                let mut offsets = Vec::with_capacity(plan.indices.len());
                let mut len = 0;
                for (k, &i) in plan.indices.iter().enumerate() {
                    loc[i] = (b, k);
                    offsets.push(len);
                    len += specs[i].numel;
                }
                let pending = plan.indices.len();
                BucketState {
                    plan,
                    offsets,
                    len,
                    pending,
                    buf: None,
                    spare: None,
                    launched: None,
                }
            })
            .collect();
        let n = params.len();
        let shared = Arc::new(Mutex::new(Shared {
            pg: pg.clone(),
            params: params.clone(),
            loc,
            buckets,
            next_bucket: 0,
            ready: vec![false; n],
            remaining: vec![0; n],
            partial: vec![None; n],
            used: vec![false; n],
            unused: Vec::new(),
            marked_unused: false,
            in_backward: false,
            sync: true,
            opts,
            last: None,
            scratch: Vec::new(),
        }));
        Ok(Ddp {
            shared,
            pg: pg.clone(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Shared<T>> {
        lock(&self.shared)
    }

    /// The process group.
    pub fn process_group(&self) -> &ProcessGroup {
        &self.pg
    }

    /// The buckets: parameter indices (registration order) in reduction order.
    pub fn bucket_indices(&self) -> Vec<Vec<usize>> {
        self.lock()
            .buckets
            .iter()
            .map(|b| b.plan.indices.clone())
            .collect()
    }

    /// The timeline of the last synchronised backward pass.
    pub fn last_step(&self) -> Option<StepTimeline> {
        self.lock().last.clone()
    }

    /// PyTorch's `no_sync()`: until the guard drops, [`Ddp::backward`] accumulates
    /// gradients locally without communication; the first synchronised backward after it
    /// reduces the accumulated gradients.
    pub fn no_sync(&self) -> NoSync<'_, T> {
        let mut s = self.lock();
        let previous = s.sync;
        s.sync = false;
        NoSync {
            ddp: self,
            previous,
        }
    }

    /// `loss.backward()`, then (outside [`Ddp::no_sync`]) the averaged gradients in the
    /// parameters' `.grad`. Every rank must call it once per step. An error here is
    /// reported to the other ranks, which then fail with [`DistError::PeerFailed`].
    pub fn backward(&self, loss: &Variable<T>) -> Result<(), DistError> {
        let r = self.backward_inner(loss);
        if let Err(e) = &r {
            self.lock().reset();
            if !matches!(
                e,
                DistError::PeerFailed { .. } | DistError::PeerLeft { .. } | DistError::Closed(_)
            ) {
                self.pg.report_failure(&e.to_string());
            }
        }
        r
    }

    /// Before a backward pass: the parameters' edges in the graph of `loss`, the used
    /// parameters, and (synchronised) a post-hook on each node with edges into parameters.
    fn prepare(&self, loss: &Variable<T>) -> Result<Hooked<T>, DistError> {
        let edges = {
            let s = self.lock();
            param_edges(loss, &s.params)
        };
        let mut s = self.lock();
        s.in_backward = true;
        let mut uses = vec![0; s.params.len()];
        for (_, slots) in &edges {
            slots.iter().for_each(|(_, i)| uses[*i] += 1);
        }
        for (i, u) in uses.iter().enumerate() {
            s.used[i] |= *u > 0;
        }
        if !s.sync {
            return Ok(Vec::new());
        }
        if s.opts.find_unused_parameters {
            s.unused = (0..uses.len()).filter(|i| uses[*i] == 0).collect();
        }
        s.remaining = uses;
        drop(s);
        let mut hooked = Vec::new();
        for (node, slots) in edges {
            match node {
                Some(node) => {
                    let shared = Arc::clone(&self.shared);
                    let id = node.register_hook(move |grads, _| {
                        lock(&shared)
                            .deliver(&slots, grads)
                            .map_err(AutogradError::hook)
                    });
                    hooked.push((node, id));
                }
                // The loss is a parameter: its gradient is ones, known now.
                None => {
                    let ones = Variable::from_data(loss.data().ones_like());
                    self.lock().deliver(&slots, &[Some(ones)])?;
                }
            }
        }
        Ok(hooked)
    }

    fn backward_inner(&self, loss: &Variable<T>) -> Result<(), DistError> {
        if let Some(e) = self.pg.error() {
            return Err(e);
        }
        let start = Instant::now();
        let hooked = self.prepare(loss)?;
        let res = loss.backward();
        for (node, id) in hooked {
            node.remove_hook(id);
        }
        let end = Instant::now();
        if let Err(e) = res {
            let inner = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<DistError>());
            return Err(inner.cloned().unwrap_or(DistError::Autograd(e)));
        }
        let mut s = self.lock();
        s.in_backward = false;
        if !s.sync {
            return Ok(());
        }
        s.finish(start, end)
    }
}

/// Checks that every rank has rank 0's parameter count and sizes, then copies rank 0's
/// values to every rank (in one broadcast).
fn sync_parameters<T: ElementAccess>(
    pg: &ProcessGroup,
    params: &[Variable<T>],
) -> Result<(), DistError> {
    let rank = pg.rank();
    let n = params.len();
    let theirs = pg.broadcast(&[n as f64], 0)?[0] as usize;
    if theirs != n {
        return Err(DistError::Protocol(format!(
            "DDP expects same model across all ranks, but Rank {rank} has {n} params, while \
             rank 0 has inconsistent {theirs} params."
        )));
    }
    let sizes: Vec<f64> = params
        .iter()
        .map(|p| p.with_data(|d| d.numel()) as f64)
        .collect();
    let zero = pg.broadcast(&sizes, 0)?;
    if let Some(i) = (0..n).find(|i| zero[*i] != sizes[*i]) {
        return Err(DistError::Protocol(format!(
            "DDP expects same model across all ranks, but Rank {rank}'s parameter {i} has {} \
             elements, while rank 0's has {}.",
            sizes[i], zero[i]
        )));
    }
    let flat: Vec<f64> = params.iter().flat_map(|p| p.data().to_f64_vec()).collect();
    let flat = pg.broadcast(&flat, 0)?;
    let mut at = 0;
    for p in params {
        let d = p.data();
        let k = d.numel();
        p.set_data(d.with_f64_vec(&flat[at..at + k]));
        at += k;
    }
    Ok(())
}

/// The post-hooks [`Ddp::backward`] put on nodes for one pass.
type Hooked<T> = Vec<(NodeRef<T>, autograd::runtime::HookId)>;

/// The nodes of the graph of `loss` with edges into parameters: each node with its
/// `(input_nr, parameter)` pairs. (A loss that is itself a parameter has no node: it
/// counts as a node-less edge, `None`.)
type ParamEdges<T> = Vec<(Option<NodeRef<T>>, Vec<(usize, usize)>)>;

fn param_edges<T: ElementAccess>(loss: &Variable<T>, params: &[Variable<T>]) -> ParamEdges<T> {
    let find = |v: &Variable<T>| params.iter().position(|p| p.ptr_eq(v));
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<NodeRef<T>> = Vec::new();
    match loss.gradient_edge() {
        Some(Edge::Node { node, .. }) => stack.push(node),
        Some(Edge::Leaf(v)) => out.extend(find(&v).map(|i| (None, vec![(0, i)]))),
        None => {}
    }
    while let Some(node) = stack.pop() {
        // The Debug form names the node's address: a key for "seen".
        if !seen.insert(format!("{node:?}")) {
            continue;
        }
        let mut slots = Vec::new();
        for (k, e) in node.next_edges().iter().enumerate() {
            match e {
                Some(Edge::Leaf(v)) => slots.extend(find(v).map(|i| (k, i))),
                Some(Edge::Node { node: next, .. }) => stack.push(next.clone()),
                None => {}
            }
        }
        if !slots.is_empty() {
            out.push((Some(node.clone()), slots));
        }
    }
    out
}

impl<T: ElementAccess> Shared<T> {
    /// A hooked node ran: `grads` are its gradients for its inputs, `slots` the
    /// `(input_nr, parameter)` pairs among them.
    fn deliver(
        &mut self,
        slots: &[(usize, usize)],
        grads: &[Option<Variable<T>>],
    ) -> Result<(), DistError> {
        if !self.in_backward || !self.sync {
            return Ok(());
        }
        if !self.marked_unused {
            self.mark_unused()?;
        }
        for &(k, i) in slots {
            if let Some(g) = grads.get(k).and_then(Option::as_ref) {
                let g = g.data().to_f64_vec();
                match &mut self.partial[i] {
                    Some(sum) => sum.iter_mut().zip(&g).for_each(|(s, x)| *s += x),
                    slot @ None => *slot = Some(g),
                }
            }
            if self.remaining[i] == 0 {
                return Err(DistError::Protocol(format!(
                    "Expected to mark a variable ready only once. Parameter {i} received \
                     more gradients than the graph has edges into it."
                )));
            }
            self.remaining[i] -= 1;
            if self.remaining[i] == 0 {
                let g = self.partial[i].take();
                self.mark_ready(i, g)?;
            }
        }
        Ok(())
    }

    fn mark_unused(&mut self) -> Result<(), DistError> {
        self.marked_unused = true;
        for i in std::mem::take(&mut self.unused) {
            self.mark_ready(i, None)?;
        }
        Ok(())
    }

    /// Copies `.grad + g` (divided by the world size) into parameter `i`'s bucket slot and
    /// launches the buckets that are complete, in order.
    fn mark_ready(&mut self, i: usize, g: Option<Vec<f64>>) -> Result<(), DistError> {
        if self.ready[i] {
            return Err(DistError::Protocol(format!(
                "Expected to mark a variable ready only once. Parameter {i} received a \
                 gradient twice in one backward pass."
            )));
        }
        self.ready[i] = true;
        let p = &self.params[i];
        let numel = p.with_data(|d| d.numel());
        // `.grad + g`, without a pass over zeros when either is missing.
        let vals = match (p.grad(), g) {
            (Some(old), Some(g)) => {
                let mut v = old.data().to_f64_vec();
                v.iter_mut().zip(g).for_each(|(v, x)| *v += x);
                v
            }
            (Some(old), None) => old.data().to_f64_vec(),
            (None, Some(g)) => g,
            (None, None) => vec![0.0; numel],
        };
        let scale = 1.0 / self.pg.size() as f64;
        let (b, k) = self.loc[i];
        let bucket = &mut self.buckets[b];
        let off = bucket.offsets[k];
        let len = bucket.len;
        // Every slot of the bucket is written before it is sent: a spare needs no zeroing.
        let spare = bucket.spare.take().filter(|b| b.len() == len);
        let buf = bucket.buf.get_or_insert_with(|| {
            spare.unwrap_or_else(|| match bucket.plan.dtype {
                "f32" | "float32" | "float" => Buf::F32(vec![0.0; len]),
                _ => Buf::F64(vec![0.0; len]),
            })
        });
        match buf {
            Buf::F32(v) => {
                for (d, x) in v[off..off + numel].iter_mut().zip(&vals) {
                    *d = (x * scale) as f32;
                }
            }
            Buf::F64(v) => {
                for (d, x) in v[off..off + numel].iter_mut().zip(&vals) {
                    *d = x * scale;
                }
            }
        }
        bucket.pending -= 1;
        self.launch_ready()
    }

    fn launch_ready(&mut self) -> Result<(), DistError> {
        while let Some(b) = self.buckets.get_mut(self.next_bucket) {
            if b.pending > 0 {
                break;
            }
            let buf = b.buf.take().unwrap_or(Buf::F64(Vec::new()));
            let what = format!("the all-reduce of gradient bucket {}", self.next_bucket);
            let p = self.pg.start(Collective::AllReduceSum, buf, &what)?;
            b.launched = Some((p, Instant::now()));
            self.next_bucket += 1;
        }
        Ok(())
    }

    /// After a synchronised backward: waits for the buckets and writes the averages into
    /// `.grad`.
    fn finish(&mut self, start: Instant, end: Instant) -> Result<(), DistError> {
        if self.opts.find_unused_parameters && !self.marked_unused {
            self.mark_unused()?;
        }
        let missing: Vec<usize> = (0..self.ready.len()).filter(|i| !self.ready[*i]).collect();
        if !missing.is_empty() {
            return Err(unused_error(self.pg.rank(), &missing));
        }
        let used_everywhere = if self.opts.find_unused_parameters {
            let local: Vec<f64> = self.used.iter().map(|u| f64::from(u8::from(*u))).collect();
            let global = self.pg.all_reduce_sum(&local)?;
            global.iter().map(|c| *c > 0.0).collect()
        } else {
            vec![true; self.params.len()]
        };
        let mut timings = Vec::with_capacity(self.buckets.len());
        let mut scratch = std::mem::take(&mut self.scratch);
        for b in 0..self.buckets.len() {
            let (pending, launched) = self.buckets[b].launched.take().ok_or_else(|| {
                DistError::Protocol(format!("gradient bucket {b} was never launched"))
            })?;
            let done = self.pg.wait(pending)?;
            let bucket = &self.buckets[b];
            for (k, &i) in bucket.plan.indices.iter().enumerate() {
                if used_everywhere[i] {
                    let p = &self.params[i];
                    let range = bucket.offsets[k]..bucket.offsets[k] + p.with_data(|d| d.numel());
                    scratch.clear();
                    match &done.buf {
                        Buf::F32(v) => scratch.extend(v[range].iter().map(|x| f64::from(*x))),
                        Buf::F64(v) => scratch.extend_from_slice(&v[range]),
                    }
                    write_grad(p, &scratch);
                }
            }
            timings.push(BucketTiming {
                params: bucket.plan.indices.clone(),
                launched,
                finished: done.finished,
            });
            self.buckets[b].spare = Some(done.buf);
        }
        self.scratch = scratch;
        self.last = Some(StepTimeline {
            backward_start: start,
            backward_end: end,
            synced: Instant::now(),
            buckets: timings,
        });
        self.reset();
        Ok(())
    }

    /// Ready for the next step.
    fn reset(&mut self) {
        self.in_backward = false;
        self.next_bucket = 0;
        self.marked_unused = false;
        self.unused.clear();
        self.ready.iter_mut().for_each(|r| *r = false);
        self.remaining.iter_mut().for_each(|r| *r = 0);
        self.partial.iter_mut().for_each(|p| *p = None);
        self.used.iter_mut().for_each(|u| *u = false);
        for b in &mut self.buckets {
            b.pending = b.plan.indices.len();
            if let Some(buf) = b.buf.take() {
                b.spare = Some(buf);
            }
            b.launched = None;
        }
    }
}

/// The averaged gradient into `p.grad` in place (a new `.grad` when it had none).
fn write_grad<T: ElementAccess>(p: &Variable<T>, vals: &[f64]) {
    match p.grad() {
        Some(g) => {
            let d = g.data().with_f64_vec(vals);
            g.set_data(d);
            g.bump_version();
        }
        None => p.set_grad(Some(Variable::from_data(p.data().with_f64_vec(vals)))),
    }
}
