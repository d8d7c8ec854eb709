//! Who wrote to the target's stderr: `SO_PASSCRED` on leakgate's end of a
//! Unix stream socket, and `recvmsg` to read the data together with the
//! writer's `SCM_CREDENTIALS`. The only `unsafe` of the stderr watcher:
//! std has no stable API for socket credentials (`UnixStream::set_passcred`
//! and `recv_vectored_with_ancillary` are unstable), so these two calls go
//! through libc.
#![allow(unsafe_code)] // setsockopt(SO_PASSCRED) and recvmsg: no stable std API

use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// Asks the kernel to attach the writer's credentials to what `sock`
/// receives. False where that is refused.
pub(super) fn enable(sock: &UnixStream) -> bool {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt on an open socket with a valid int option.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PASSCRED,
            (&raw const one).cast::<libc::c_void>(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// One read: the bytes and the writer's pid (when credentials came with it).
pub(super) fn recv(sock: &UnixStream, buf: &mut [u8]) -> std::io::Result<(usize, Option<u64>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 16];
    // SAFETY: a zeroed msghdr is valid; it points at live buffers.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
    // SAFETY: recvmsg on an open socket with the msghdr above.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut pid = None;
    // SAFETY: walking the control messages recvmsg filled in.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_CREDENTIALS {
                let cred: libc::ucred = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if cred.pid > 0 {
                    pid = Some(cred.pid as u64);
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, pid))
}
