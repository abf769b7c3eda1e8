//! Which bytes of the process can be read without faulting, asked of the
//! kernel: module images arrive as bare pointers, and a truncated image
//! whose headers declare more than the caller mapped must give
//! `CUDA_ERROR_INVALID_IMAGE`, not a SIGSEGV inside the caller's process.
//!
//! `process_vm_readv` on our own process copies one byte of each page of a
//! range; the kernel stops at the first page that is unmapped or not
//! readable and says how many it copied. One call covers up to 1,024 pages
//! (4 MiB), so checking a module image costs a few system calls, plus the
//! page faults that reading it would take anyway. Where a sandbox refuses
//! the call, a pipe does the same one page at a time (`write` of an
//! unreadable byte fails with `EFAULT` instead of faulting).

use std::sync::atomic::{AtomicU8, Ordering};

/// The kernel's answer, as a [`fatbin::Readable`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessMemory;

/// Pages per `process_vm_readv` call (the kernel's `UIO_MAXIOV`).
const BATCH: usize = 1024;

/// 0: untried, 1: `process_vm_readv` works, 2: refused (use the pipe).
static METHOD: AtomicU8 = AtomicU8::new(0);

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

impl fatbin::Readable for ProcessMemory {
    fn readable_prefix(&self, addr: usize, len: usize) -> usize {
        prefix_by(addr, len, |pages, start| match METHOD.load(Ordering::Relaxed) {
            2 => pipe_pages(pages, start),
            _ => match vm_pages(pages, start) {
                Some(n) => {
                    METHOD.store(1, Ordering::Relaxed);
                    n
                }
                None => {
                    METHOD.store(2, Ordering::Relaxed);
                    crate::trace::log(
                        crate::trace::Level::Debug,
                        "process_vm_readv is refused here; module images are checked through a pipe",
                    );
                    pipe_pages(pages, start)
                }
            },
        })
    }
}

/// The readable prefix of `len` bytes at `addr`, from `pages_readable`,
/// which says how many of a number of pages (the first byte of page `i` at
/// `start(i)`) can be read, counted from the first.
fn prefix_by(addr: usize, len: usize, pages_readable: impl FnOnce(usize, &dyn Fn(usize) -> usize) -> usize) -> usize {
    if len == 0 {
        return 0;
    }
    let Some(last) = addr.checked_add(len - 1) else { return 0 };
    let page = page_size();
    let first_page = addr & !(page - 1);
    let pages = (last & !(page - 1)) / page - first_page / page + 1;
    // The start of page i of the range, clamped to `addr` for the first.
    let start = |i: usize| if i == 0 { addr } else { first_page + i * page };
    let readable = pages_readable(pages, &start);
    if readable >= pages {
        len
    } else {
        start(readable) - addr
    }
}

/// How many of the `pages` pages (the first byte of each at `start(i)`)
/// can be read, counted from the first; `None` when the call is refused.
fn vm_pages(pages: usize, start: &dyn Fn(usize) -> usize) -> Option<usize> {
    let mut sink = [0u8; BATCH];
    let mut remote = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 1 }; BATCH];
    let mut done = 0;
    while done < pages {
        let n = (pages - done).min(BATCH);
        for (i, r) in remote[..n].iter_mut().enumerate() {
            r.iov_base = start(done + i) as *mut libc::c_void;
        }
        let local = libc::iovec { iov_base: sink.as_mut_ptr().cast(), iov_len: n };
        // SAFETY: the local buffer holds n bytes; remote addresses are only
        // read by the kernel, which reports faults instead of raising them.
        let r = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, remote.as_ptr(), n as libc::c_ulong, 0) };
        if r < 0 {
            let err = std::io::Error::last_os_error().raw_os_error();
            return match err {
                Some(libc::EFAULT) => Some(done),
                _ => None,
            };
        }
        let r = r as usize;
        done += r;
        if r < n {
            return Some(done);
        }
    }
    Some(pages)
}

/// [`vm_pages`] through a pipe: one `write` and one `read` per page.
fn pipe_pages(pages: usize, start: &dyn Fn(usize) -> usize) -> usize {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        // Nothing left to ask: trust the caller, as NVIDIA's driver does.
        return pages;
    }
    let mut n = 0;
    let mut byte = 0u8;
    while n < pages {
        // SAFETY: the kernel reads the byte at start(n), failing with
        // EFAULT if it cannot; the read drains it into `byte`.
        let ok = unsafe {
            libc::write(fds[1], start(n) as *const libc::c_void, 1) == 1 && libc::read(fds[0], (&mut byte as *mut u8).cast(), 1) == 1
        };
        if !ok {
            break;
        }
        n += 1;
    }
    // SAFETY: closing the descriptors created above.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use fatbin::Readable;

    /// Three pages mapped, the middle one made inaccessible.
    struct Map {
        base: usize,
        page: usize,
    }

    impl Map {
        fn new() -> Map {
            let page = page_size();
            // SAFETY: plain anonymous mapping and protection change, checked.
            unsafe {
                let m = libc::mmap(std::ptr::null_mut(), 3 * page, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
                assert_ne!(m, libc::MAP_FAILED);
                assert_eq!(libc::mprotect((m as *mut u8).add(page).cast(), page, libc::PROT_NONE), 0);
                Map { base: m as usize, page }
            }
        }
    }

    impl Drop for Map {
        fn drop(&mut self) {
            // SAFETY: unmaps what `new` mapped.
            unsafe { libc::munmap(self.base as *mut libc::c_void, 3 * self.page) };
        }
    }

    fn check(probe: impl Fn(usize, usize) -> usize) {
        let m = Map::new();
        let (b, p) = (m.base, m.page);
        assert_eq!(probe(b, p), p, "first page");
        assert_eq!(probe(b + 10, p - 10), p - 10);
        assert_eq!(probe(b + 10, p), p - 10, "stops before the PROT_NONE page");
        assert_eq!(probe(b, 3 * p), p);
        assert_eq!(probe(b + p, 1), 0, "inside the PROT_NONE page");
        assert_eq!(probe(b + p + 5, 2 * p), 0);
        assert_eq!(probe(b + 2 * p, p), p, "third page");
        assert_eq!(probe(b + 3 * p - 1, 1), 1);
        assert_eq!(probe(b, 0), 0);
        assert_eq!(probe(usize::MAX - 3, 10), 0, "wraps the address space");
        // A range longer than one batch of pages, all readable.
        let big = vec![1u8; (BATCH + 7) * p];
        assert_eq!(probe(big.as_ptr() as usize, big.len()), big.len());
    }

    #[test]
    fn process_memory_stops_at_the_first_unreadable_page() {
        check(|a, l| ProcessMemory.readable_prefix(a, l));
        assert_eq!(METHOD.load(Ordering::Relaxed), 1, "process_vm_readv works in the test environment");
    }

    #[test]
    fn the_pipe_fallback_agrees() {
        check(|a, l| prefix_by(a, l, pipe_pages));
    }
}
