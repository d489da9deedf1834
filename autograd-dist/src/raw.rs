//! Thin checked wrappers over the MPI calls the communication thread makes (rsmpi's `ffi`,
//! the bindings it generates with bindgen). Every call's return code becomes a
//! [`DistError::Mpi`]: the communicators use `MPI_ERRORS_RETURN`, so MPI reports errors
//! instead of aborting the job. Only the communication thread calls these.

use crate::DistError;
use crate::comm::Buf;
use mpi::ffi;
use std::os::raw::{c_int, c_void};

pub(crate) type Comm = ffi::MPI_Comm;
pub(crate) type Request = ffi::MPI_Request;

/// `MPI_SUCCESS`.
const SUCCESS: c_int = 0;

/// The text of an MPI error code.
fn error_text(code: c_int) -> String {
    let mut buf = vec![0u8; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_ERROR_STRING characters, as the call requires.
    let rc = unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr().cast(), &mut len) };
    if rc != SUCCESS {
        return "unknown MPI error".to_string();
    }
    buf.truncate(len.max(0) as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

/// `Ok` for `MPI_SUCCESS`, else the error of `call`.
pub(crate) fn check(call: &'static str, rc: c_int) -> Result<(), DistError> {
    if rc == SUCCESS {
        Ok(())
    } else {
        Err(DistError::Mpi {
            call,
            code: rc,
            text: error_text(rc),
        })
    }
}

/// `MPI_Init_thread` with `MPI_THREAD_FUNNELED` (the calling thread makes every MPI call),
/// then `MPI_ERRORS_RETURN` on `MPI_COMM_WORLD` and two duplicates of it: one for the
/// collectives, one for the failure and leave notices. Returns `(rank, size, data, ctrl)`.
pub(crate) fn init() -> Result<(usize, usize, Comm, Comm), DistError> {
    let mut flag: c_int = 0;
    // SAFETY: plain queries and initialisation with null argc/argv, which MPI allows.
    unsafe {
        check("MPI_Initialized", ffi::MPI_Initialized(&mut flag))?;
        if flag != 0 {
            return Err(DistError::Protocol(
                "MPI is already initialized in this process: a process has one process group"
                    .to_string(),
            ));
        }
        let mut provided: c_int = 0;
        let rc = ffi::MPI_Init_thread(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            ffi::RSMPI_THREAD_FUNNELED,
            &mut provided,
        );
        check("MPI_Init_thread", rc)?;
        let world = ffi::RSMPI_COMM_WORLD;
        check(
            "MPI_Comm_set_errhandler",
            ffi::MPI_Comm_set_errhandler(world, ffi::RSMPI_ERRORS_RETURN),
        )?;
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        check("MPI_Comm_rank", ffi::MPI_Comm_rank(world, &mut rank))?;
        check("MPI_Comm_size", ffi::MPI_Comm_size(world, &mut size))?;
        let mut data: Comm = std::mem::zeroed();
        let mut ctrl: Comm = std::mem::zeroed();
        check("MPI_Comm_dup", ffi::MPI_Comm_dup(world, &mut data))?;
        check("MPI_Comm_dup", ffi::MPI_Comm_dup(world, &mut ctrl))?;
        Ok((rank as usize, size as usize, data, ctrl))
    }
}

/// `MPI_Comm_free` on both communicators, then `MPI_Finalize`.
pub(crate) fn finalize(mut data: Comm, mut ctrl: Comm) -> Result<(), DistError> {
    // SAFETY: both were made by `init` and have no pending operations (the caller checks).
    unsafe {
        check("MPI_Comm_free", ffi::MPI_Comm_free(&mut data))?;
        check("MPI_Comm_free", ffi::MPI_Comm_free(&mut ctrl))?;
        check("MPI_Finalize", ffi::MPI_Finalize())
    }
}

/// The element count and datatype of a buffer.
fn count_type(buf: &Buf) -> Result<(c_int, ffi::MPI_Datatype), DistError> {
    let n = buf.len();
    let n = c_int::try_from(n).map_err(|_| {
        DistError::Protocol(format!(
            "a buffer of {n} elements is larger than MPI's count"
        ))
    })?;
    // SAFETY: reading the datatype handles rsmpi's C shim exports.
    let t = unsafe {
        match buf {
            Buf::F32(_) => ffi::RSMPI_FLOAT,
            Buf::F64(_) => ffi::RSMPI_DOUBLE,
        }
    };
    Ok((n, t))
}

fn ptr(buf: &mut Buf) -> *mut c_void {
    match buf {
        Buf::F32(v) => v.as_mut_ptr().cast(),
        Buf::F64(v) => v.as_mut_ptr().cast(),
    }
}

/// Starts `MPI_Iallreduce(send, recv, MPI_SUM)`. Both buffers must stay where they are
/// (not be moved or touched) until the request completes.
pub(crate) fn iallreduce_sum(
    send: &mut Buf,
    recv: &mut Buf,
    comm: Comm,
) -> Result<Request, DistError> {
    let (n, t) = count_type(send)?;
    // SAFETY: `send` and `recv` have `n` elements of type `t`; the caller keeps them alive
    // and in place until the request completes.
    unsafe {
        let mut req: Request = ffi::RSMPI_REQUEST_NULL;
        let rc = ffi::MPI_Iallreduce(ptr(send), ptr(recv), n, t, ffi::RSMPI_SUM, comm, &mut req);
        check("MPI_Iallreduce", rc)?;
        Ok(req)
    }
}

/// Starts `MPI_Ibcast(buf, root)`; `buf` stays in place until the request completes.
pub(crate) fn ibcast(buf: &mut Buf, root: usize, comm: Comm) -> Result<Request, DistError> {
    let (n, t) = count_type(buf)?;
    // SAFETY: as for `iallreduce_sum`.
    unsafe {
        let mut req: Request = ffi::RSMPI_REQUEST_NULL;
        check(
            "MPI_Ibcast",
            ffi::MPI_Ibcast(ptr(buf), n, t, root as c_int, comm, &mut req),
        )?;
        Ok(req)
    }
}

/// Starts `MPI_Ibarrier`.
pub(crate) fn ibarrier(comm: Comm) -> Result<Request, DistError> {
    // SAFETY: no buffers.
    unsafe {
        let mut req: Request = ffi::RSMPI_REQUEST_NULL;
        check("MPI_Ibarrier", ffi::MPI_Ibarrier(comm, &mut req))?;
        Ok(req)
    }
}

/// Starts `MPI_Isend` of bytes; `bytes` stays in place until the request completes.
pub(crate) fn isend_bytes(
    bytes: &[u8],
    dest: usize,
    tag: i32,
    comm: Comm,
) -> Result<Request, DistError> {
    // SAFETY: `bytes` is a live buffer of its length; the caller keeps it until completion.
    unsafe {
        let mut req: Request = ffi::RSMPI_REQUEST_NULL;
        let rc = ffi::MPI_Isend(
            bytes.as_ptr().cast(),
            bytes.len() as c_int,
            ffi::RSMPI_UINT8_T,
            dest as c_int,
            tag,
            comm,
            &mut req,
        );
        check("MPI_Isend", rc)?;
        Ok(req)
    }
}

/// Starts `MPI_Irecv` of up to `buf.len()` bytes from any rank.
pub(crate) fn irecv_bytes(buf: &mut [u8], tag: i32, comm: Comm) -> Result<Request, DistError> {
    // SAFETY: as for `isend_bytes`.
    unsafe {
        let mut req: Request = ffi::RSMPI_REQUEST_NULL;
        let rc = ffi::MPI_Irecv(
            buf.as_mut_ptr().cast(),
            buf.len() as c_int,
            ffi::RSMPI_UINT8_T,
            ffi::RSMPI_ANY_SOURCE,
            tag,
            comm,
            &mut req,
        );
        check("MPI_Irecv", rc)?;
        Ok(req)
    }
}

/// What `MPI_Test` says of a request: `None` while it runs, else the source rank and the
/// byte count received (meaningful for receives).
pub(crate) fn test(req: &mut Request) -> Result<Option<(usize, usize)>, DistError> {
    // SAFETY: `req` is a request this thread started (or the null request).
    unsafe {
        let mut flag: c_int = 0;
        let mut status: ffi::MPI_Status = std::mem::zeroed();
        check("MPI_Test", ffi::MPI_Test(req, &mut flag, &mut status))?;
        if flag == 0 {
            return Ok(None);
        }
        let mut count: c_int = 0;
        let rc = ffi::MPI_Get_count(&status, ffi::RSMPI_UINT8_T, &mut count);
        let count = if rc == SUCCESS {
            count.max(0) as usize
        } else {
            0
        };
        Ok(Some((status.MPI_SOURCE.max(0) as usize, count)))
    }
}

/// Cancels a pending receive and completes it.
pub(crate) fn cancel_recv(req: &mut Request) -> Result<(), DistError> {
    // SAFETY: `req` is a pending receive of this thread; MPI allows cancelling receives.
    unsafe {
        check("MPI_Cancel", ffi::MPI_Cancel(req))?;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while test(req)?.is_none() {
        if std::time::Instant::now() > deadline {
            return Err(DistError::Protocol(
                "a cancelled receive did not complete".to_string(),
            ));
        }
        std::thread::yield_now();
    }
    Ok(())
}
