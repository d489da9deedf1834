//! "Design B": a sketch of the other end of the design space, measured to
//! know what it would buy before anyone builds it (docs/runtime.md,
//! "Design B").
//!
//! Nodes are not individually reference-counted objects: each thread records
//! into a *segment*, an append-only list of records (graph metadata plus the
//! type-erased node, bump-allocated), and a node's edges to nodes of the same
//! segment are plain indices. Variables are shared handles (`Arc`) that keep
//! their segment alive; a segment's nodes are freed together when nothing
//! refers to it any more. The recording order of a segment is a topological
//! order, so backward is a reverse walk over indices with raw-tensor
//! gradients (no `create_graph`).
//!
//! What the chain's path pays here, as the real runtime would have to:
//! grad-mode and anomaly checks (the runtime's own thread-locals),
//! `requires_grad` propagation, one `Arc` per output variable plus a segment
//! reference in it, dynamic dispatch to the node, the output's version
//! counter (kept in the record, so a saved output needs no allocation and
//! forms no cycle) checked at unpack, "backward twice" detection, the hooks
//! flag, validation of every gradient against the target's recorded shape
//! and dtype, leaf accumulation under a lock, exclusive use of the segment
//! during backward, and freeing.
//!
//! Left out (each adds a branch or a rare path, not per-op work): edges across
//! segments (graphs spanning threads or segment rotations), nodes with
//! several outputs, running hooks, `retain_grad`, `grad()`, and formulas on
//! `Variable`s for `create_graph` (a second form of every formula).

use std::alloc::{Layout, alloc, dealloc};
use std::cell::{Cell, UnsafeCell};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use autograd_runtime::{TensorMeta, is_anomaly_enabled, is_grad_enabled, set_grad_enabled};

use super::Raw;

/// A backward node of design B: raw gradients in and out.
pub trait BNode<T>: Send {
    /// Gradients of the (at most two) inputs from the output's gradient;
    /// `version` is the output's version counter now.
    fn apply_raw(&mut self, grad: T, version: u32) -> Result<[Option<T>; 2], String>;
    /// Frees saved tensors (after apply, unless retain_graph).
    fn release(&mut self) {}
}

/// Where an input's gradient goes.
pub enum BEdge<T: Raw> {
    None,
    /// A record of the same segment.
    Local(u32),
    /// A leaf that requires grad.
    Leaf(BVar<T>),
}

struct Header<T: Raw> {
    edges: [BEdge<T>; 2],
    /// Shape and dtype of the output (what a gradient for it must have).
    meta: TensorMeta,
    /// The output's version counter.
    version: AtomicU32,
    has_hooks: AtomicBool,
    /// Per-node lifetime only (see [`PER_NODE`]): references to this record
    /// (its output variable, edges of later records), and whether its node
    /// and edges were already dropped.
    strong: AtomicU32,
    dropped: AtomicBool,
}

/// The variant with PyTorch's per-node lifetime: each record is counted
/// (output variable + edges into it) and its node is dropped as soon as
/// nothing refers to it; the segment's memory is still reclaimed as a whole.
/// Measures what per-node freeing costs on top of design B.
pub static PER_NODE: AtomicBool = AtomicBool::new(false);

/// The variant that passes every gradient as a variable (an `Arc` built per
/// backward step, as `Variable::from_data` does) instead of a raw tensor:
/// what the engine would pay without a raw-tensor form of every formula.
pub static VAR_GRADS: AtomicBool = AtomicBool::new(false);

struct RecordBox<T: Raw, N: ?Sized> {
    header: Header<T>,
    node: UnsafeCell<N>,
}

type DynRecord<T> = RecordBox<T, dyn BNode<T>>;

const CHUNK: usize = 64 << 10;

/// An append-only list of records of one thread.
pub struct Segment<T: Raw> {
    records: UnsafeCell<Vec<NonNull<DynRecord<T>>>>,
    chunks: UnsafeCell<Vec<NonNull<u8>>>,
    offset: Cell<usize>,
    /// Taken by a backward pass: the nodes are used by one pass at a time.
    running: Mutex<()>,
}

// SAFETY (sketch): records are appended only by the owning thread, read by a
// backward pass holding `running`; nodes are `Send`.
unsafe impl<T: Raw> Send for Segment<T> {}
// SAFETY: as above.
unsafe impl<T: Raw> Sync for Segment<T> {}

impl<T: Raw> Segment<T> {
    fn new() -> Self {
        Segment {
            records: UnsafeCell::new(Vec::new()),
            chunks: UnsafeCell::new(Vec::new()),
            offset: Cell::new(CHUNK),
            running: Mutex::new(()),
        }
    }

    fn bump(&self, layout: Layout) -> NonNull<u8> {
        assert!(layout.size() <= CHUNK && layout.align() <= 64);
        let chunks = unsafe { &mut *self.chunks.get() };
        let mut start = (self.offset.get() + layout.align() - 1) & !(layout.align() - 1);
        if start + layout.size() > CHUNK || chunks.is_empty() {
            let l = Layout::from_size_align(CHUNK, 64).unwrap();
            chunks.push(NonNull::new(unsafe { alloc(l) }).expect("alloc"));
            start = 0;
        }
        self.offset.set(start + layout.size());
        let base = *chunks.last().unwrap();
        unsafe { base.add(start) }
    }

    fn push<N: BNode<T> + 'static>(&self, header: Header<T>, node: N) -> u32 {
        let p = self
            .bump(Layout::new::<RecordBox<T, N>>())
            .cast::<RecordBox<T, N>>();
        unsafe {
            p.as_ptr().write(RecordBox {
                header,
                node: UnsafeCell::new(node),
            })
        };
        let records = unsafe { &mut *self.records.get() };
        let erased: NonNull<DynRecord<T>> = p;
        records.push(erased);
        records.len() as u32 - 1
    }

    fn record(&self, i: u32) -> &DynRecord<T> {
        unsafe { (&*self.records.get())[i as usize].as_ref() }
    }

    /// Drops every record; keeps the first chunk for the next graph.
    fn clear(&self) {
        let records = unsafe { &mut *self.records.get() };
        for r in records.drain(..) {
            unsafe {
                if (*r.as_ptr()).header.dropped.load(Ordering::Relaxed) {
                    std::ptr::drop_in_place(&raw mut (*r.as_ptr()).header);
                } else {
                    std::ptr::drop_in_place(r.as_ptr());
                }
            }
        }
        let chunks = unsafe { &mut *self.chunks.get() };
        let l = Layout::from_size_align(CHUNK, 64).unwrap();
        while chunks.len() > 1 {
            unsafe { dealloc(chunks.pop().unwrap().as_ptr(), l) };
        }
        self.offset.set(0);
    }
}

impl<T: Raw> Drop for Segment<T> {
    fn drop(&mut self) {
        self.clear();
        let l = Layout::from_size_align(CHUNK, 64).unwrap();
        for c in self.chunks.get_mut().drain(..) {
            unsafe { dealloc(c.as_ptr(), l) };
        }
    }
}

thread_local! {
    /// The thread's current segment (an `Arc<Segment<T>>` behind a raw
    /// pointer, with its `TypeId`: one segment type per thread in the sketch).
    static CURRENT: Cell<(*const (), Option<std::any::TypeId>)> = const { Cell::new((std::ptr::null(), None)) };
}

fn current<T: Raw + 'static>() -> Arc<Segment<T>> {
    let (p, ty) = CURRENT.with(Cell::get);
    if ty == Some(std::any::TypeId::of::<T>()) {
        let p = p.cast::<Segment<T>>();
        unsafe { Arc::increment_strong_count(p) };
        return unsafe { Arc::from_raw(p) };
    }
    let seg = Arc::new(Segment::new());
    // The sketch leaks the thread's reference when the thread ends.
    CURRENT.with(|c| {
        c.set((
            Arc::into_raw(seg.clone()).cast(),
            Some(std::any::TypeId::of::<T>()),
        ))
    });
    seg
}

struct VarInner<T: Raw> {
    data: T,
    requires_grad: bool,
    history: Option<(Arc<Segment<T>>, u32)>,
    /// Leaves' own counter (outputs use their record's).
    version: AtomicU32,
    grad: Mutex<Option<T>>,
}

impl<T: Raw> Segment<T> {
    /// Per-node lifetime: drops one reference to record `i`; a record whose
    /// last reference goes has its node and edges dropped, in a loop along
    /// the chain of records whose last reference those edges held.
    fn release(&self, i: u32) {
        let mut stack = Vec::new();
        let mut next = Some(i);
        while let Some(k) = next {
            let rec = self.record(k);
            if rec.header.strong.fetch_sub(1, Ordering::Release) == 1 {
                std::sync::atomic::fence(Ordering::Acquire);
                let p = (&raw const *rec).cast_mut();
                // SAFETY (sketch): no reference is left, so nobody else uses it.
                let edges = unsafe {
                    let edges =
                        std::mem::replace(&mut (*p).header.edges, [BEdge::None, BEdge::None]);
                    std::ptr::drop_in_place((*p).node.get());
                    (*p).header.dropped.store(true, Ordering::Relaxed);
                    edges
                };
                for e in edges {
                    if let BEdge::Local(j) = e {
                        stack.push(j);
                    }
                }
            }
            next = stack.pop();
        }
    }
}

impl<T: Raw> Drop for VarInner<T> {
    fn drop(&mut self) {
        if PER_NODE.load(Ordering::Relaxed)
            && let Some((seg, i)) = &self.history
        {
            seg.release(*i);
        }
        // The last variable of the thread's current segment: the graph is
        // gone, free its nodes (the thread's own reference is the other one).
        if let Some((seg, _)) = &self.history
            && Arc::strong_count(seg) == 2
            && CURRENT.with(|c| std::ptr::eq(c.get().0, Arc::as_ptr(seg).cast()))
        {
            seg.clear();
        }
    }
}

/// A variable of design B: a shared handle, like the runtime's.
pub struct BVar<T: Raw>(Arc<VarInner<T>>);

impl<T: Raw> Clone for BVar<T> {
    fn clone(&self) -> Self {
        BVar(self.0.clone())
    }
}

impl<T: Raw + 'static> BVar<T> {
    pub fn leaf(data: T, requires_grad: bool) -> Self {
        BVar(Arc::new(VarInner {
            data,
            requires_grad,
            history: None,
            version: AtomicU32::new(0),
            grad: Mutex::new(None),
        }))
    }

    pub fn data(&self) -> &T {
        &self.0.data
    }

    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad
    }

    pub fn version(&self) -> u32 {
        match &self.0.history {
            Some((s, i)) => s.record(*i).header.version.load(Ordering::Acquire),
            None => self.0.version.load(Ordering::Acquire),
        }
    }

    /// What an in-place op does to the version counter.
    pub fn bump_version(&self) {
        match &self.0.history {
            Some((s, i)) => s.record(*i).header.version.fetch_add(1, Ordering::AcqRel),
            None => self.0.version.fetch_add(1, Ordering::AcqRel),
        };
    }

    pub fn grad(&self) -> Option<T> {
        self.0.grad.lock().unwrap().clone()
    }

    /// Where this variable's gradient goes, seen from segment `seg`.
    fn edge(&self, seg: &Arc<Segment<T>>) -> BEdge<T> {
        match &self.0.history {
            Some((s, i)) if Arc::ptr_eq(s, seg) => BEdge::Local(*i),
            Some(_) => unimplemented!("design B sketch: edges across segments"),
            None if self.0.requires_grad => BEdge::Leaf(self.clone()),
            None => BEdge::None,
        }
    }
}

/// Whether an op on `inputs` is recorded (the runtime's `should_record`).
fn should_record<T: Raw + 'static>(inputs: &[&BVar<T>]) -> bool {
    is_grad_enabled() && inputs.iter().any(|v| v.requires_grad())
}

/// Records a one-output op; `save` may fill the node from the output (its
/// version counter starts at 0 in the record).
fn record<T: Raw + 'static, N: BNode<T> + 'static>(
    node: N,
    inputs: [Option<&BVar<T>>; 2],
    data: T,
) -> BVar<T> {
    let seg = current::<T>();
    let edges = inputs.map(|v| v.map_or(BEdge::None, |v| v.edge(&seg)));
    if PER_NODE.load(Ordering::Relaxed) {
        for e in &edges {
            if let BEdge::Local(j) = e {
                seg.record(*j).header.strong.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    if is_anomaly_enabled() {
        unimplemented!("design B sketch: anomaly traces");
    }
    let header = Header {
        edges,
        meta: TensorMeta::of(&data),
        version: AtomicU32::new(0),
        has_hooks: AtomicBool::new(false),
        strong: AtomicU32::new(1),
        dropped: AtomicBool::new(false),
    };
    let idx = seg.push(header, node);
    BVar(Arc::new(VarInner {
        data,
        requires_grad: true,
        history: Some((seg, idx)),
        version: AtomicU32::new(0),
        grad: Mutex::new(None),
    }))
}

struct MulS {
    s: f32,
}
impl<T: Raw> BNode<T> for MulS {
    fn apply_raw(&mut self, grad: T, _: u32) -> Result<[Option<T>; 2], String> {
        Ok([Some(grad.mul_s(self.s)), None])
    }
}

struct AddS;
impl<T: Raw> BNode<T> for AddS {
    fn apply_raw(&mut self, grad: T, _: u32) -> Result<[Option<T>; 2], String> {
        Ok([Some(grad), None])
    }
}

/// Saves its own output: the data and the version it had (0: just made).
struct TanhB<T> {
    result: Option<T>,
}
impl<T: Raw> BNode<T> for TanhB<T> {
    fn apply_raw(&mut self, grad: T, version: u32) -> Result<[Option<T>; 2], String> {
        let Some(y) = &self.result else {
            return Err("Trying to backward through the graph a second time".into());
        };
        if version != 0 {
            return Err(format!(
                "one of the variables needed for gradient computation has been modified by an inplace operation: is at version {version}; expected version 0 instead"
            ));
        }
        Ok([Some(T::tanh_backward(&grad, y)), None])
    }
    fn release(&mut self) {
        self.result = None;
    }
}

pub fn mul_scalar<T: Raw + 'static>(a: &BVar<T>, s: f32) -> BVar<T> {
    let raw = a.data().mul_s(s);
    if !should_record(&[a]) {
        return BVar::leaf(raw, false);
    }
    record(MulS { s }, [Some(a), None], raw)
}

pub fn add_scalar<T: Raw + 'static>(a: &BVar<T>, s: f32) -> BVar<T> {
    let raw = a.data().add_s(s);
    if !should_record(&[a]) {
        return BVar::leaf(raw, false);
    }
    record(AddS, [Some(a), None], raw)
}

pub fn tanh<T: Raw + 'static>(a: &BVar<T>) -> BVar<T> {
    let raw = a.data().tanh();
    if !should_record(&[a]) {
        return BVar::leaf(raw, false);
    }
    let node = TanhB {
        result: Some(raw.clone()),
    };
    record(node, [Some(a), None], raw)
}

fn shape_ok<T: Raw>(meta: &TensorMeta, g: &T) -> bool {
    meta.shape() == g.shape() && meta.dtype() == g.dtype()
}

thread_local! {
    static GRADS: Cell<Option<Box<dyn std::any::Any>>> = const { Cell::new(None) };
}

/// Backward from `root` (one element): a reverse walk over its segment.
pub fn backward<T: Raw + 'static>(root: &BVar<T>, retain_graph: bool) -> Result<(), String> {
    let Some((seg, idx)) = &root.0.history else {
        return Err(
            "element 0 of tensors does not require grad and does not have a grad_fn".into(),
        );
    };
    let _mode = set_grad_enabled(false);
    let _running = seg.running.lock().unwrap();
    let mut grads: Vec<Option<T>> = GRADS
        .with(|c| c.take())
        .and_then(|b| b.downcast::<Vec<Option<T>>>().ok())
        .map(|b| *b)
        .unwrap_or_default();
    grads.clear();
    grads.resize_with(*idx as usize + 1, || None);
    grads[*idx as usize] = Some(root.data().ones_like());
    let anomaly = is_anomaly_enabled();
    for i in (0..=*idx).rev() {
        let Some(g) = grads[i as usize].take() else {
            continue;
        };
        let rec = seg.record(i);
        if rec.header.has_hooks.load(Ordering::Acquire) {
            unimplemented!("design B sketch: hooks");
        }
        // SAFETY (sketch): `running` gives this pass the nodes.
        let node = unsafe { &mut *rec.node.get() };
        let version = rec.header.version.load(Ordering::Acquire);
        let g = if VAR_GRADS.load(Ordering::Relaxed) {
            let v = BVar::leaf(g, false);
            std::hint::black_box(&v);
            v.data().clone()
        } else {
            g
        };
        let outs = node.apply_raw(g, version)?;
        if !retain_graph {
            node.release();
        }
        for (edge, out) in rec.header.edges.iter().zip(outs) {
            let Some(out) = out else { continue };
            if anomaly && out.has_nan() {
                return Err("NaN in gradient".into());
            }
            match edge {
                BEdge::None => {}
                BEdge::Local(j) => {
                    if !shape_ok(&seg.record(*j).header.meta, &out) {
                        return Err(format!("invalid gradient at index {i}"));
                    }
                    let slot = &mut grads[*j as usize];
                    *slot = Some(match slot.take() {
                        None => out,
                        Some(old) => old.add(&out),
                    });
                }
                BEdge::Leaf(v) => {
                    if !shape_ok(&TensorMeta::of(v.data()), &out) {
                        return Err(format!("invalid gradient at index {i}"));
                    }
                    let mut slot = v.0.grad.lock().unwrap();
                    *slot = Some(match slot.take() {
                        None => out,
                        Some(old) => old.add(&out),
                    });
                }
            }
        }
    }
    // Kept for the next pass up to the runtime's limit (16,384 vertices).
    if grads.capacity() <= 16_384 {
        grads.clear();
        GRADS.with(|c| c.set(Some(Box::new(grads))));
    }
    Ok(())
}

/// The sketch's checks are real: an in-place change of a saved output and a
/// second backward fail, a retained graph runs twice and accumulates.
pub fn self_check<T: Raw + 'static>() {
    let x = BVar::leaf(T::scalar(0.5), true);
    let y = tanh(&mul_scalar(&x, 2.0));
    assert_eq!(y.version(), 0);
    backward(&y, true).unwrap();
    let g1 = x.grad().unwrap().value();
    backward(&y, false).unwrap();
    let g2 = x.grad().unwrap().value();
    assert!((g2 - 2.0 * g1).abs() < 1e-6, "accumulates: {g1} {g2}");
    let e = backward(&y, false).unwrap_err();
    assert!(e.contains("second time"), "{e}");
    let y = tanh(&add_scalar(&x, 1.0));
    y.bump_version();
    assert_eq!(y.version(), 1);
    let e = backward(&y, false).unwrap_err();
    assert!(e.contains("modified by an inplace operation"), "{e}");
}
