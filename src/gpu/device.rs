//! Finding the GPU: loading the CUDA driver and NVRTC dynamically (the crate builds and runs
//! without CUDA installed), opening device 0 once per process, and reading the properties the
//! planner needs ([`GpuInfo`]), including a measured device-memory copy bandwidth.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaModule, CudaStream};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// What the planner knows about the GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// Device name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0).
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub sms: usize,
    /// Boost clock, GHz.
    pub clock_ghz: f64,
    /// Resident threads per SM.
    pub max_threads_per_sm: usize,
    /// 32-bit registers per SM.
    pub registers_per_sm: usize,
    /// Shared memory per SM, bytes.
    pub shared_per_sm: usize,
    /// Largest shared memory one block may opt into, bytes.
    pub shared_per_block: usize,
    /// L2 cache, bytes.
    pub l2_bytes: usize,
    /// Device memory, bytes.
    pub memory_bytes: usize,
    /// FP32 lanes per SM (from the compute capability).
    pub fp32_lanes_per_sm: usize,
    /// FP64 lanes per SM (from the compute capability).
    pub fp64_lanes_per_sm: usize,
    /// Memory bandwidth from the memory clock and bus width, GB/s.
    pub peak_bandwidth_gbs: f64,
    /// Measured device-to-device copy rate (bytes read + written), GB/s.
    pub bandwidth_gbs: f64,
}

impl GpuInfo {
    /// An H200 as the driver describes it, with the copy rate measured there (for planning
    /// without the device): an H100 SXM with more L2, memory and bandwidth.
    #[cfg(test)]
    pub(crate) fn h200_for_tests() -> GpuInfo {
        GpuInfo {
            name: "NVIDIA H200".into(),
            l2_bytes: 60 << 20,
            memory_bytes: 141 << 30,
            peak_bandwidth_gbs: 4800.0,
            bandwidth_gbs: 4227.0,
            ..GpuInfo::h100_for_tests()
        }
    }

    /// An H100 SXM as the driver describes it (for planning without the device).
    #[cfg(test)]
    pub(crate) fn h100_for_tests() -> GpuInfo {
        GpuInfo {
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            sms: 132,
            clock_ghz: 1.98,
            max_threads_per_sm: 2048,
            registers_per_sm: 65536,
            shared_per_sm: 233472,
            shared_per_block: 232448,
            l2_bytes: 50 << 20,
            memory_bytes: 80 << 30,
            fp32_lanes_per_sm: 128,
            fp64_lanes_per_sm: 64,
            peak_bandwidth_gbs: 3350.0,
            bandwidth_gbs: 3006.0,
        }
    }

    /// Peak floating-point rate for `dtype` counting an FMA as two flops, GFLOP/s.
    pub fn peak_gflops(&self, dtype: crate::DType) -> f64 {
        let lanes = match dtype {
            crate::DType::F32 => self.fp32_lanes_per_sm,
            crate::DType::F64 => self.fp64_lanes_per_sm,
        };
        2.0 * lanes as f64 * self.sms as f64 * self.clock_ghz
    }

    /// Shared-memory bandwidth: 128 bytes per clock per SM, GB/s.
    pub fn shared_bandwidth_gbs(&self) -> f64 {
        128.0 * self.sms as f64 * self.clock_ghz
    }
}

/// (FP32, FP64) lanes per SM for a compute capability (CUDA programming guide, throughput table).
fn fp_lanes(cc: (i32, i32)) -> (usize, usize) {
    match cc {
        (6, 0) | (7, 0) | (7, 2) | (8, 0) => (64, 32),
        (7, 5) => (64, 2),
        (6, 1) | (6, 2) => (128, 4),
        (8, 6) | (8, 7) | (8, 9) | (12, _) => (128, 2),
        (9, 0) | (10, _) => (128, 64),
        _ => (128, 2),
    }
}

/// The open device: context, stream, properties and the compiled-module cache.
pub(crate) struct Gpu {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) info: GpuInfo,
    pub(crate) modules: Mutex<HashMap<String, Arc<CudaModule>>>,
}

/// The process's GPU, opened on first use; the error (no driver, no NVRTC, no device) is
/// remembered so later calls answer at once.
pub(crate) fn gpu() -> Result<&'static Gpu> {
    static GPU: OnceLock<std::result::Result<Gpu, String>> = OnceLock::new();
    GPU.get_or_init(open_caught)
        .as_ref()
        .map_err(|e| Error::NoGpu(e.clone()))
}

/// [`open`], with a panic inside the CUDA bindings (a driver function they need that the
/// installed driver lacks, as an old driver does) taken as the reason there is no GPU: the
/// CPU then serves.
fn open_caught() -> std::result::Result<Gpu, String> {
    std::panic::catch_unwind(open).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(format!(
            "the CUDA driver failed while the device was opened ({what}): it may be older than \
             the CUDA 13 the library is built for; update the NVIDIA driver"
        ))
    })
}

/// The GPU's properties, or [`Error::NoGpu`] saying why there is none.
pub fn detect_gpu() -> Result<&'static GpuInfo> {
    gpu().map(|g| &g.info)
}

fn open() -> std::result::Result<Gpu, String> {
    if crate::tuning::Tuning::current().no_gpu {
        return Err("disabled by the no_gpu tuning knob (STENCIL35D_NO_GPU)".into());
    }
    // SAFETY: these only try to dlopen the libraries by their usual names; cudarc would panic
    // on first use if they were missing, which is what this check prevents.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(
            "the CUDA driver library (libcuda.so) was not found: no NVIDIA driver is installed"
                .into(),
        );
    }
    // SAFETY: as above, for NVRTC.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("NVRTC (libnvrtc.so) was not found: the CUDA toolkit's runtime compiler is needed to build the kernels; add its lib64 folder to LD_LIBRARY_PATH".into());
    }
    let count =
        CudaContext::device_count().map_err(|e| format!("the CUDA driver could not start: {e}"))?;
    if count < 1 {
        return Err("the CUDA driver reports no devices".into());
    }
    let ordinal = device_ordinal(count as usize)?;
    let ctx =
        CudaContext::new(ordinal).map_err(|e| format!("cannot open CUDA device {ordinal}: {e}"))?;
    let attr = |a: Attr| {
        ctx.attribute(a)
            .map(|v| v.max(0) as usize)
            .map_err(|e| format!("cannot read a device attribute: {e}"))
    };
    let compute_capability = ctx.compute_capability().map_err(|e| e.to_string())?;
    let (fp32, fp64) = fp_lanes(compute_capability);
    let memory_khz = attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? as f64;
    let bus_bits = attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as f64;
    let stream = ctx.default_stream();
    let mut info = GpuInfo {
        name: ctx.name().map_err(|e| e.to_string())?,
        compute_capability,
        sms: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        clock_ghz: attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as f64 / 1e6,
        max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        registers_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        shared_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        shared_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        memory_bytes: ctx.total_mem().map_err(|e| e.to_string())?,
        fp32_lanes_per_sm: fp32,
        fp64_lanes_per_sm: fp64,
        peak_bandwidth_gbs: 2.0 * memory_khz * 1e3 * bus_bits / 8.0 / 1e9,
        bandwidth_gbs: 0.0,
    };
    info.bandwidth_gbs =
        measure_copy_bandwidth(&ctx, &stream).unwrap_or(0.8 * info.peak_bandwidth_gbs);
    Ok(Gpu {
        ctx,
        stream,
        info,
        modules: Mutex::new(HashMap::new()),
    })
}

/// The device this process opens, of `count`: the `gpu_device` tuning knob's, else the local
/// rank an MPI launcher gives the process (OpenMPI, MPICH, MVAPICH2 and Slurm name it) modulo
/// `count`, so that the ranks on one host take one GPU each; else device 0.
fn device_ordinal(count: usize) -> std::result::Result<usize, String> {
    if let Some(d) = crate::tuning::Tuning::current().gpu_device {
        return if d < count {
            Ok(d)
        } else {
            Err(format!(
                "the gpu_device knob asks for CUDA device {d}, but the driver reports {count}"
            ))
        };
    }
    // Slurm names the local rank alone, outside an MPI launcher's variables.
    let slurm = || std::env::var("SLURM_LOCALID").ok()?.parse::<usize>().ok();
    let local_rank = crate::runtime::cores::host_ranks()
        .map(|(rank, _)| rank)
        .or_else(slurm);
    Ok(local_rank.map_or(0, |r| r % count))
}

/// Times device-to-device copies of a buffer far larger than L2 with events; bytes read plus
/// bytes written per second, best of five after a warm-up.
fn measure_copy_bandwidth(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>) -> Option<f64> {
    use cudarc::driver::sys::CUevent_flags;
    let (free, _) = ctx.mem_get_info().ok()?;
    let bytes = (free / 8).min(1 << 30);
    let n = bytes / 4;
    let src = stream.alloc_zeros::<f32>(n).ok()?;
    let mut dst = stream.alloc_zeros::<f32>(n).ok()?;
    stream.memcpy_dtod(&src, &mut dst).ok()?;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .ok()?;
        stream.memcpy_dtod(&src, &mut dst).ok()?;
        let end = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .ok()?;
        end.synchronize().ok()?;
        best = best.min(start.elapsed_ms(&end).ok()? as f64 / 1e3);
    }
    Some(2.0 * (n * 4) as f64 / best / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_table() {
        assert_eq!(fp_lanes((9, 0)), (128, 64));
        assert_eq!(fp_lanes((8, 0)), (64, 32));
        assert_eq!(fp_lanes((8, 9)), (128, 2));
    }

    #[test]
    fn no_gpu_is_an_error_not_a_panic() {
        // On machines without CUDA this must say why; with a GPU it must describe it. Where a
        // GPU is required, its absence fails (see `test_gate`).
        match detect_gpu() {
            Ok(info) => assert!(info.sms > 0 && info.bandwidth_gbs > 0.0, "{info:?}"),
            Err(e) => {
                assert!(matches!(e, Error::NoGpu(_)));
                crate::gpu::test_gate::gpu_or_skip::<(), _>(
                    crate::gpu::test_gate::gpu_required(),
                    "no_gpu_is_an_error_not_a_panic",
                    Err(e),
                );
            }
        }
    }
}
