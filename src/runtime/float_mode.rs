//! The floating-point mode of the threads that run the CPU engines: whether subnormal numbers
//! are flushed to zero.
//!
//! A wave that starts from rest, or heat spreading from a wall, leaves values that decay below
//! the smallest normal number (2⁻¹²⁶ in `f32`, 2⁻¹⁰²² in `f64`) ahead of the front and in the
//! absorbing layers. On x86 every arithmetic instruction that reads or produces such a
//! subnormal value takes a microcode assist of about a hundred cycles, so a few of them in
//! every vector slow a sweep several times over. Flushing sets the SSE control register's FTZ
//! bit (a subnormal result is zero) and DAZ bit (a subnormal input counts as zero), as Devito's
//! operators do. On other architectures the mode is left as it is.
//!
//! Rust and LLVM assume the default floating-point environment: an operation the compiler
//! evaluates at build time rounds as IEEE 754 says, whatever the mode at run time, and the
//! compiler does not order floating-point arithmetic after a change of the mode. The mode is
//! set only around engine runs, whose arithmetic reads the run's data; a value the compiler
//! could fold is a constant of the kernels (coefficients, weights), all of them normal numbers,
//! on which both modes agree.
/// The SSE control register's flush-to-zero (bit 15) and denormals-are-zero (bit 6) bits.
#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = 0x8040;

/// The calling thread's floating-point mode, restored when dropped (on the thread that set it:
/// the guard cannot be sent to another).
pub(crate) struct ThreadMode {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
    _thread: std::marker::PhantomData<*const ()>,
}

impl ThreadMode {
    /// Sets the calling thread to flush subnormal numbers to zero (`flush`) or to keep them,
    /// until the returned guard drops.
    pub(crate) fn set(flush: bool) -> ThreadMode {
        #[cfg(target_arch = "x86_64")]
        {
            let saved = read_csr();
            let mode = if flush {
                saved | FTZ_DAZ
            } else {
                saved & !FTZ_DAZ
            };
            write_csr(mode);
            ThreadMode {
                saved,
                _thread: std::marker::PhantomData,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = flush;
            ThreadMode {
                _thread: std::marker::PhantomData,
            }
        }
    }

    /// Sets the calling thread's mode for good: for a worker thread, at its start.
    pub(crate) fn set_for_thread(flush: bool) {
        std::mem::forget(ThreadMode::set(flush));
    }
}

impl Drop for ThreadMode {
    /// Restores the two mode bits; the exception flags the run raised stay raised.
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        write_csr((read_csr() & !FTZ_DAZ) | (self.saved & FTZ_DAZ));
    }
}

/// Whether the calling thread flushes subnormal numbers to zero.
#[cfg(test)]
pub(crate) fn flushes() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        read_csr() & FTZ_DAZ == FTZ_DAZ
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The SSE control and status register (MXCSR) of the calling thread.
#[cfg(target_arch = "x86_64")]
fn read_csr() -> u32 {
    let mut csr: u32 = 0;
    // SAFETY: STMXCSR stores the 32-bit register to the address given, a local `u32`; every
    // x86_64 CPU has SSE.
    unsafe {
        std::arch::asm!(
            "stmxcsr [{}]",
            in(reg) &mut csr,
            options(nostack, preserves_flags)
        )
    };
    csr
}

/// Loads `csr` into the calling thread's MXCSR.
#[cfg(target_arch = "x86_64")]
fn write_csr(csr: u32) {
    // SAFETY: LDMXCSR loads the register from a local `u32`. The values written are the
    // thread's own register with only FTZ and DAZ changed, so no reserved bit is set (which
    // would fault): FTZ is architectural, and DAZ is supported by every x86-64 processor (the
    // AMD64 architecture defines it, and Intel's first 64-bit processors already had it). What
    // the mode changes for the compiler's assumptions is stated in the module docs.
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, readonly)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guard sets the mode and restores the one before; with it set a subnormal product is
    /// zero and a subnormal input counts as zero.
    #[test]
    fn the_guard_sets_and_restores_the_mode() {
        let before = flushes();
        let tiny = std::hint::black_box(f32::MIN_POSITIVE);
        {
            let _mode = ThreadMode::set(true);
            if cfg!(target_arch = "x86_64") {
                assert!(flushes());
                assert_eq!(std::hint::black_box(tiny) * 0.5, 0.0);
                // A subnormal input whose product is normal: zero only if it counts as zero.
                assert_eq!(std::hint::black_box(f32::from_bits(1)) * 2f32.powi(30), 0.0);
            }
            {
                let _keep = ThreadMode::set(false);
                assert!(!flushes());
                assert!(std::hint::black_box(tiny) * 0.5 > 0.0);
                assert!(std::hint::black_box(f32::from_bits(1)) * 2f32.powi(30) > 0.0);
            }
            assert_eq!(flushes(), cfg!(target_arch = "x86_64"));
        }
        assert_eq!(flushes(), before);
    }
}
