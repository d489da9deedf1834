//! The process group: MPI's `COMM_WORLD`, driven by one communication thread per process.
//!
//! The thread initialises MPI (`MPI_THREAD_FUNNELED`: it makes every MPI call), starts the
//! collectives the program asks for with MPI's non-blocking calls (`MPI_Iallreduce`,
//! `MPI_Ibcast`, `MPI_Ibarrier`) and drives them to completion with `MPI_Test` while the
//! program's own thread goes on (the backward pass, for [`crate::Ddp`]'s buckets): that is
//! what makes communication overlap computation, since Open MPI progresses a non-blocking
//! collective only inside MPI calls. The program waits for a result with
//! [`ProcessGroup::wait`], under the group's timeout.
//!
//! Failures reach every rank: a rank that fails (an error in [`crate::Ddp::backward`], a
//! timeout, or [`ProcessGroup::report_failure`]) sends a notice to the others on a
//! communicator of its own, and a rank that drops its group sends a leave notice; a rank
//! waiting for a collective then gets [`DistError::PeerFailed`] or
//! [`DistError::PeerLeft`] instead of hanging, and [`DistError::Timeout`] covers a rank
//! that died without a word. When the group is dropped every rank waits (up to the
//! timeout) for the others' leave notices, then finalizes MPI, unless something failed:
//! then MPI is left unfinalized (pending collectives would make `MPI_Finalize` wait) and
//! `mpirun` reports the processes that ended without it.

use crate::DistError;
use crate::raw::{self, Comm, Request};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The default timeout of a collective operation.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A buffer of a collective operation: `f32` or `f64` elements.
#[derive(Debug, Clone, PartialEq)]
pub enum Buf {
    /// Single precision.
    F32(Vec<f32>),
    /// Double precision.
    F64(Vec<f64>),
}

impl Buf {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Buf::F32(v) => v.len(),
            Buf::F64(v) => v.len(),
        }
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as `f64`.
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Buf::F32(v) => v.iter().map(|x| f64::from(*x)).collect(),
            Buf::F64(v) => v.clone(),
        }
    }
}

/// A collective operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// Element-wise sum over the ranks, result on every rank.
    AllReduceSum,
    /// Rank `root`'s buffer to every rank.
    Broadcast {
        /// The rank whose buffer is sent.
        root: usize,
    },
    /// No data: completes when every rank has started it.
    Barrier,
}

/// A collective operation started with [`ProcessGroup::start`], to [`ProcessGroup::wait`] for.
#[derive(Debug)]
pub struct Pending {
    id: u64,
    what: String,
    /// When it was handed to the communication thread.
    pub started: Instant,
}

/// A completed collective: its result and when the communication thread saw it complete.
#[derive(Debug)]
pub struct Completed {
    /// The result.
    pub buf: Buf,
    /// When `MPI_Test` reported it complete.
    pub finished: Instant,
}

enum Job {
    Collective {
        id: u64,
        op: Collective,
        buf: Buf,
        what: String,
    },
    Notify(String),
    Shutdown,
}

enum Event {
    Done {
        id: u64,
        buf: Buf,
        finished: Instant,
    },
    Error(DistError),
}

struct Waiter {
    rx: Receiver<Event>,
    done: HashMap<u64, Completed>,
    error: Option<DistError>,
}

struct Inner {
    rank: usize,
    size: usize,
    timeout: Duration,
    jobs: Sender<Job>,
    waiter: Mutex<Waiter>,
    next_id: AtomicU64,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.jobs.send(Job::Shutdown);
        if let Some(t) = self.thread.lock().map(|mut t| t.take()).unwrap_or(None) {
            let _ = t.join();
        }
    }
}

/// The processes of an `mpirun` job (MPI's `COMM_WORLD`), with a communication thread.
/// Cloning gives another handle to the same group; the last one dropped ends it, after the
/// other ranks have ended theirs: it waits for them up to the timeout, or, when this rank
/// failed, up to 10 s whatever the timeout, so that they hear of the failure before
/// `mpirun` ends the job.
#[derive(Clone)]
pub struct ProcessGroup {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProcessGroup(rank {} of {})", self.rank(), self.size())
    }
}

impl ProcessGroup {
    /// Initialises MPI on a new communication thread, with the default timeout (60 s).
    /// A process has one group: a second `init` fails. Run under `mpirun -n N`, or alone
    /// (a group of one process).
    pub fn init() -> Result<Self, DistError> {
        Self::init_with_timeout(DEFAULT_TIMEOUT)
    }

    /// [`ProcessGroup::init`] with the timeout of every collective operation.
    pub fn init_with_timeout(timeout: Duration) -> Result<Self, DistError> {
        let (jobs, job_rx) = mpsc::channel();
        let (ev_tx, rx) = mpsc::channel();
        let (init_tx, init_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("autograd-dist-comm".to_string())
            .spawn(move || comm_thread(init_tx, job_rx, ev_tx, timeout))
            .map_err(|e| {
                DistError::Closed(format!("cannot start the communication thread: {e}"))
            })?;
        let (rank, size) = match init_rx.recv() {
            Ok(Ok(rs)) => rs,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(DistError::Closed(
                    "the communication thread ended".to_string(),
                ));
            }
        };
        Ok(ProcessGroup {
            inner: Arc::new(Inner {
                rank,
                size,
                timeout,
                jobs,
                waiter: Mutex::new(Waiter {
                    rx,
                    done: HashMap::new(),
                    error: None,
                }),
                next_id: AtomicU64::new(0),
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    /// The number of processes.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// The timeout of a collective operation.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    fn waiter(&self) -> std::sync::MutexGuard<'_, Waiter> {
        // A panic while holding the lock leaves plain data behind: use it.
        self.inner.waiter.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The error that ended the group, if one did.
    pub fn error(&self) -> Option<DistError> {
        self.waiter().error.clone()
    }

    /// Hands a collective operation to the communication thread and returns at once
    /// (`what` names it in errors). Every rank must start the same collectives in the same
    /// order.
    pub fn start(&self, op: Collective, buf: Buf, what: &str) -> Result<Pending, DistError> {
        if let Some(e) = self.error() {
            return Err(e);
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let job = Job::Collective {
            id,
            op,
            buf,
            what: what.to_string(),
        };
        self.inner
            .jobs
            .send(job)
            .map_err(|_| DistError::Closed("the communication thread ended".to_string()))?;
        Ok(Pending {
            id,
            what: what.to_string(),
            started: Instant::now(),
        })
    }

    /// Waits for a collective started with [`ProcessGroup::start`], at most the group's
    /// timeout. An error (a failed or departed peer, a timeout, MPI's) ends the group: the
    /// other ranks are told, and every later operation returns the same error.
    pub fn wait(&self, p: Pending) -> Result<Completed, DistError> {
        let deadline = Instant::now() + self.timeout();
        let mut w = self.waiter();
        loop {
            if let Some(c) = w.done.remove(&p.id) {
                return Ok(c);
            }
            if let Some(e) = &w.error {
                return Err(e.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match w.rx.recv_timeout(left) {
                Ok(Event::Done { id, buf, finished }) => {
                    w.done.insert(id, Completed { buf, finished });
                }
                Ok(Event::Error(e)) => w.error = Some(e),
                Err(RecvTimeoutError::Timeout) => {
                    let e = DistError::Timeout {
                        what: p.what.clone(),
                        after: self.timeout(),
                    };
                    w.error = Some(e.clone());
                    let _ = self.inner.jobs.send(Job::Notify(e.to_string()));
                    return Err(e);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let e = DistError::Closed("the communication thread ended".to_string());
                    w.error = Some(e.clone());
                    return Err(e);
                }
            }
        }
    }

    /// Starts a collective and waits for it.
    pub fn run(&self, op: Collective, buf: Buf, what: &str) -> Result<Buf, DistError> {
        let p = self.start(op, buf, what)?;
        Ok(self.wait(p)?.buf)
    }

    /// Element-wise sum of `values` over the ranks.
    pub fn all_reduce_sum(&self, values: &[f64]) -> Result<Vec<f64>, DistError> {
        Ok(self
            .run(
                Collective::AllReduceSum,
                Buf::F64(values.to_vec()),
                "all_reduce",
            )?
            .to_f64())
    }

    /// Rank `root`'s `values` (every rank passes a buffer of the same length).
    pub fn broadcast(&self, values: &[f64], root: usize) -> Result<Vec<f64>, DistError> {
        if root >= self.size() {
            return Err(DistError::Protocol(format!(
                "broadcast from rank {root} in a group of {} processes",
                self.size()
            )));
        }
        let buf = Buf::F64(values.to_vec());
        Ok(self
            .run(Collective::Broadcast { root }, buf, "broadcast")?
            .to_f64())
    }

    /// Waits until every rank has reached the barrier.
    pub fn barrier(&self) -> Result<(), DistError> {
        self.run(Collective::Barrier, Buf::F64(Vec::new()), "barrier")
            .map(|_| ())
    }

    /// Tells the other ranks that this one failed (`message` is what they report), and
    /// ends the group here: later operations fail. [`crate::Ddp::backward`] calls it on its
    /// own errors; a program calls it for failures of its own between steps (or drops the
    /// group: the others then see [`DistError::PeerLeft`]).
    pub fn report_failure(&self, message: &str) {
        let mut w = self.waiter();
        if w.error.is_none() {
            w.error = Some(DistError::Closed(format!(
                "this rank reported a failure: {message}"
            )));
            let _ = self.inner.jobs.send(Job::Notify(message.to_string()));
        }
    }
}

/// Tag of the control messages; their first byte is the kind.
const CTRL_TAG: i32 = 7;
const KIND_FAILED: u8 = 1;
const KIND_BYE: u8 = 2;
/// The longest control message.
const CTRL_BYTES: usize = 2048;
/// How long the thread waits for new jobs between two rounds of `MPI_Test`: from
/// `POLL_MIN` after a job arrived or a collective completed, doubling while nothing
/// happens, up to `POLL_MAX` (a round of `MPI_Test` is also what moves Open MPI's
/// non-blocking collectives on, so the bound keeps them moving without a busy core).
const POLL_MIN: Duration = Duration::from_micros(10);
const POLL_MAX: Duration = Duration::from_micros(POLL_MAX_US);
const POLL_MAX_US: u64 = 200;
/// At most this many spare send buffers are kept.
const MAX_SPARE_SENDS: usize = 16;
/// How long a collective may stay incomplete after a peer's leave notice.
const LEAVE_GRACE: Duration = Duration::from_secs(2);
/// How long a rank that failed waits, as it ends, for the others to leave.
const FAILED_WAIT: Duration = Duration::from_secs(10);

struct Active {
    id: u64,
    what: String,
    req: Request,
    // The buffers MPI reads and writes (their elements stay in place when a `Buf` moves).
    send: Option<Buf>,
    recv: Buf,
}

struct State {
    rank: usize,
    size: usize,
    data: Comm,
    ctrl: Comm,
    active: Vec<Active>,
    ctrl_req: Request,
    ctrl_buf: Box<[u8; CTRL_BYTES]>,
    sent: Vec<(Request, Box<[u8]>)>,
    /// Send buffers of completed all-reduces, for the next ones of the same size.
    spare_sends: Vec<Buf>,
    left: Vec<Option<Instant>>,
    /// An error that ended the group (from here or reported by the main thread).
    failed: bool,
    events: Sender<Event>,
}

fn comm_thread(
    init_tx: Sender<Result<(usize, usize), DistError>>,
    jobs: Receiver<Job>,
    events: Sender<Event>,
    timeout: Duration,
) {
    let (rank, size, data, ctrl) = match raw::init() {
        Ok(r) => r,
        Err(e) => {
            let _ = init_tx.send(Err(e));
            return;
        }
    };
    let mut ctrl_buf = Box::new([0u8; CTRL_BYTES]);
    let ctrl_req = match raw::irecv_bytes(&mut ctrl_buf[..], CTRL_TAG, ctrl) {
        Ok(r) => r,
        Err(e) => {
            let _ = init_tx.send(Err(e));
            return;
        }
    };
    let _ = init_tx.send(Ok((rank, size)));
    let mut st = State {
        rank,
        size,
        data,
        ctrl,
        active: Vec::new(),
        ctrl_req,
        ctrl_buf,
        sent: Vec::new(),
        spare_sends: Vec::new(),
        left: vec![None; size],
        failed: false,
        events,
    };
    let mut poll = POLL_MIN;
    loop {
        let job = if st.active.is_empty() {
            jobs.recv().ok()
        } else {
            match jobs.recv_timeout(poll) {
                Ok(j) => Some(j),
                Err(RecvTimeoutError::Timeout) => {
                    let before = st.active.len();
                    st.progress();
                    poll = if st.active.len() < before {
                        POLL_MIN
                    } else {
                        (poll * 2).min(POLL_MAX)
                    };
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => None,
            }
        };
        poll = POLL_MIN;
        match job {
            Some(Job::Collective { id, op, buf, what }) => st.begin(id, op, buf, what),
            Some(Job::Notify(msg)) => st.notify(KIND_FAILED, &msg),
            Some(Job::Shutdown) | None => break,
        }
        st.progress();
    }
    st.shutdown(timeout);
}

impl State {
    fn fail(&mut self, e: DistError) {
        if !self.failed {
            self.abandon();
            let _ = self.events.send(Event::Error(e));
        }
    }

    /// Ends the group here: the active collectives are given up (their buffers stay
    /// allocated: MPI may still write them).
    fn abandon(&mut self) {
        self.failed = true;
        for a in self.active.drain(..) {
            std::mem::forget(a);
        }
    }

    fn begin(&mut self, id: u64, op: Collective, buf: Buf, what: String) {
        if self.failed {
            let _ = self.events.send(Event::Error(DistError::Closed(
                "an earlier error ended the process group".to_string(),
            )));
            return;
        }
        let mut recv = buf;
        let mut send = None;
        let req = match op {
            Collective::AllReduceSum => {
                // MPI's in-place form is not in rsmpi's bindings: a copy to send from.
                let s = send.insert(self.send_copy(&recv));
                raw::iallreduce_sum(s, &mut recv, self.data)
            }
            Collective::Broadcast { root } => raw::ibcast(&mut recv, root, self.data),
            Collective::Barrier => raw::ibarrier(self.data),
        };
        match req {
            Ok(req) => self.active.push(Active {
                id,
                what,
                req,
                send,
                recv,
            }),
            Err(e) => {
                let note = e.to_string();
                self.fail(e);
                self.notify(KIND_FAILED, &note);
            }
        }
    }

    /// A copy of `buf` in a spare send buffer of its size when there is one.
    fn send_copy(&mut self, buf: &Buf) -> Buf {
        let fits = |s: &Buf| {
            s.len() == buf.len()
                && matches!(
                    (s, buf),
                    (Buf::F32(_), Buf::F32(_)) | (Buf::F64(_), Buf::F64(_))
                )
        };
        match self.spare_sends.iter().position(fits) {
            Some(i) => {
                let mut s = self.spare_sends.swap_remove(i);
                match (&mut s, buf) {
                    (Buf::F32(d), Buf::F32(v)) => d.copy_from_slice(v),
                    (Buf::F64(d), Buf::F64(v)) => d.copy_from_slice(v),
                    _ => unreachable!("matched by `fits`"),
                }
                s
            }
            None => buf.clone(),
        }
    }

    /// Tests every active collective and the control receive once.
    fn progress(&mut self) {
        let mut i = 0;
        while i < self.active.len() {
            match raw::test(&mut self.active[i].req) {
                Ok(None) => i += 1,
                Ok(Some(_)) => {
                    let mut a = self.active.remove(i);
                    if let Some(s) = a.send.take() {
                        self.spare_sends.push(s);
                        if self.spare_sends.len() > MAX_SPARE_SENDS {
                            self.spare_sends.remove(0);
                        }
                    }
                    let finished = Instant::now();
                    let _ = self.events.send(Event::Done {
                        id: a.id,
                        buf: a.recv,
                        finished,
                    });
                }
                Err(e) => return self.fail(e),
            }
        }
        self.sent
            .retain_mut(|(req, _)| !matches!(raw::test(req), Ok(Some(_)) | Err(_)));
        self.poll_ctrl();
        self.check_left();
    }

    fn poll_ctrl(&mut self) {
        loop {
            let (source, count) = match raw::test(&mut self.ctrl_req) {
                Ok(Some(sc)) => sc,
                Ok(None) => return,
                Err(e) => return self.fail(e),
            };
            let msg = &self.ctrl_buf[..count.min(CTRL_BYTES)];
            let (kind, text) = msg.split_first().map_or((0, &[][..]), |(k, t)| (*k, t));
            let text = String::from_utf8_lossy(text).into_owned();
            if kind == KIND_BYE && source < self.size {
                self.left[source] = Some(Instant::now());
            } else if kind == KIND_FAILED {
                self.fail(DistError::PeerFailed {
                    rank: source,
                    message: text,
                });
            }
            match raw::irecv_bytes(&mut self.ctrl_buf[..], CTRL_TAG, self.ctrl) {
                Ok(r) => self.ctrl_req = r,
                Err(e) => return self.fail(e),
            }
        }
    }

    /// A collective still running `LEAVE_GRACE` after a peer left will not complete.
    fn check_left(&mut self) {
        if self.active.is_empty() {
            return;
        }
        let gone = self
            .left
            .iter()
            .enumerate()
            .find_map(|(r, t)| t.filter(|t| t.elapsed() > LEAVE_GRACE).map(|_| r));
        if let Some(rank) = gone {
            let waiting_for = self.active[0].what.clone();
            self.fail(DistError::PeerLeft { rank, waiting_for });
        }
    }

    /// Sends a control message to every other rank (small: MPI sends it eagerly).
    fn notify(&mut self, kind: u8, text: &str) {
        if kind == KIND_FAILED {
            self.abandon();
        }
        let mut bytes = vec![kind];
        bytes.extend(text.bytes().take(CTRL_BYTES - 1));
        for r in (0..self.size).filter(|r| *r != self.rank) {
            let b: Box<[u8]> = bytes.clone().into_boxed_slice();
            if let Ok(req) = raw::isend_bytes(&b, r, CTRL_TAG, self.ctrl) {
                self.sent.push((req, b));
            }
        }
    }

    /// Leave notices out, the others' in (until `timeout`), then `MPI_Finalize` if all is
    /// well.
    fn shutdown(mut self, timeout: Duration) {
        self.notify(KIND_BYE, "");
        // After a failure, the others hear of it at their next collective, however short the
        // timeout is: wait for them so long (`mpirun` ends the job when this rank exits).
        let wait = if self.failed { FAILED_WAIT } else { timeout };
        let deadline = Instant::now() + wait;
        let everyone = |s: &State| (0..s.size).all(|r| r == s.rank || s.left[r].is_some());
        while !everyone(&self) && Instant::now() < deadline {
            self.progress();
            std::thread::sleep(Duration::from_micros(200));
        }
        while !self.sent.is_empty() && Instant::now() < deadline {
            self.progress();
            std::thread::yield_now();
        }
        let clean = !self.failed && self.active.is_empty() && everyone(&self);
        if clean && raw::cancel_recv(&mut self.ctrl_req).is_ok() {
            let _ = raw::finalize(self.data, self.ctrl);
        }
        // Otherwise MPI stays initialised: the process ends without `MPI_Finalize`.
    }
}
