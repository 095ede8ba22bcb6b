//! The floating-point mode of the threads that run the CPU engines: whether subnormal numbers
//! are flushed to zero.
//!
//! A wave that starts from rest, or heat spreading from a wall, leaves values that decay below
//! the smallest normal number (2⁻¹²⁶ in `f32`, 2⁻¹⁰²² in `f64`) ahead of the front and in the
//! absorbing layers. On x86 every arithmetic instruction that reads or produces such a
//! subnormal value takes a microcode assist of about a hundred cycles, so a few of them in
//! every vector slow a sweep several times over. Flushing sets the SSE control register's FTZ
//! bit (a subnormal result is zero) and DAZ bit (a subnormal input counts as zero), as Devito's
//! operators and the GPUs' fast paths do. On other architectures the mode is left as it is.

/// The SSE control register's flush-to-zero (bit 15) and denormals-are-zero (bit 6) bits.
#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = 0x8040;

/// The calling thread's floating-point mode, restored when dropped.
pub(crate) struct ThreadMode {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
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
            ThreadMode { saved }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = flush;
            ThreadMode {}
        }
    }

    /// Sets the calling thread's mode for good: for a worker thread, at its start.
    pub(crate) fn set_for_thread(flush: bool) {
        std::mem::forget(ThreadMode::set(flush));
    }
}

impl Drop for ThreadMode {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        write_csr(self.saved);
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
    // thread's own register with only FTZ and DAZ changed, whose reserved bits therefore stay
    // zero (a set reserved bit would fault). The mode changes only how later floating-point
    // instructions of this thread round tiny values, which Rust does not assume.
    unsafe {
        std::arch::asm!(
            "ldmxcsr [{}]",
            in(reg) &csr,
            options(nostack, preserves_flags, readonly)
        )
    };
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
                assert_eq!(std::hint::black_box(f32::from_bits(1)) * 1.0, 0.0);
            }
            {
                let _keep = ThreadMode::set(false);
                assert!(!flushes());
                assert!(std::hint::black_box(tiny) * 0.5 > 0.0);
                assert!(std::hint::black_box(f32::from_bits(1)) * 1.0 > 0.0);
            }
            assert_eq!(flushes(), cfg!(target_arch = "x86_64"));
        }
        assert_eq!(flushes(), before);
    }
}
