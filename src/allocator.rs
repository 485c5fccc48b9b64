//! Keeps freed memory in the process instead of handing it back to the kernel.
//!
//! The prover allocates tables of 100–500 MB for every step of a large proof. glibc serves
//! each of them with a fresh `mmap` and unmaps it on free, so every step pays the kernel
//! to fault in and zero every page again: measured at s = 512, h = 12 (2 cores), 16–20 % of
//! the prover's samples were `clear_page_erms`, and disabling `mmap` for large blocks took
//! the proof from 20.0 s to 16.3 s. Freed blocks then stay in the heap and are reused.
//! The cost: the process keeps its peak heap until it exits, which suits a command-line
//! program. No allocator crate does this without building C code, hence the two `mallopt`
//! calls.

/// Tells glibc's allocator never to `mmap` large blocks and never to trim the heap.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn retain_freed_memory() {
    const M_TRIM_THRESHOLD: i32 = -1;
    const M_MMAP_MAX: i32 = -4;
    unsafe extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    // SAFETY: `mallopt` only sets allocator parameters; it is called before any other thread
    // exists and takes plain integers (constants from glibc's <malloc.h>).
    unsafe {
        mallopt(M_MMAP_MAX, 0);
        mallopt(M_TRIM_THRESHOLD, i32::MAX);
    }
}

/// Elsewhere the allocator keeps its defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn retain_freed_memory() {}
