//! Compiling kernels with NVRTC for the device's own architecture, once per distinct source in
//! a process, and loading them.

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute as FnAttr;
use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};

use super::device::Gpu;
use crate::{Error, Result};

/// A loaded kernel and what the compiler made of it.
#[derive(Clone, Debug)]
pub(crate) struct Kernel {
    pub(crate) function: CudaFunction,
    /// Registers per thread.
    pub(crate) registers: usize,
    /// Local-memory (spill) bytes per thread.
    pub(crate) spill_bytes: usize,
}

impl Gpu {
    /// The function `name` of `source`, compiled on first request and cached for the process.
    /// `dynamic_shared` raises the kernel's dynamic shared-memory limit when above 48 KiB.
    pub(crate) fn kernel(&self, source: &str, name: &str, dynamic_shared: usize) -> Result<Kernel> {
        let module = self.module(source)?;
        let function = module.load_function(name).map_err(|e| {
            Error::Gpu(format!(
                "kernel {name} not found in the compiled module: {e}"
            ))
        })?;
        if dynamic_shared > 48 << 10 {
            if dynamic_shared > self.info.shared_per_block {
                return Err(Error::InvalidPlan(format!(
                    "the kernel needs {dynamic_shared} bytes of shared memory per block, the device allows {}",
                    self.info.shared_per_block
                )));
            }
            function
                .set_attribute(
                    FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_shared as i32,
                )
                .map_err(|e| Error::Gpu(format!("cannot raise the shared-memory limit: {e}")))?;
        }
        let registers = function
            .num_regs()
            .map_err(|e| Error::Gpu(e.to_string()))?
            .max(0) as usize;
        let spill_bytes = function
            .local_size_bytes()
            .map_err(|e| Error::Gpu(e.to_string()))?
            .max(0) as usize;
        Ok(Kernel {
            function,
            registers,
            spill_bytes,
        })
    }

    fn module(&self, source: &str) -> Result<Arc<CudaModule>> {
        if let Some(m) = self
            .modules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(source)
        {
            return Ok(Arc::clone(m));
        }
        // Compile without holding the lock, so threads compiling different kernels overlap.
        let ptx = compile_ptx(source, self.info.compute_capability)?;
        let module = self.ctx.load_module(ptx).map_err(|e| {
            Error::Gpu(format!(
                "the driver could not load the compiled kernels: {e}"
            ))
        })?;
        let mut cache = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        Ok(Arc::clone(
            cache.entry(source.to_string()).or_insert(module),
        ))
    }
}

/// CUDA C `source` compiled by NVRTC to PTX for compute capability `(major, minor)`, with the
/// options every kernel of this crate is built with.
fn compile_ptx(source: impl Into<String>, (major, minor): (i32, i32)) -> Result<Ptx> {
    let opts = CompileOptions {
        options: vec![
            format!("--gpu-architecture=compute_{major}{minor}"),
            "--std=c++17".into(),
        ],
        ..Default::default()
    };
    compile_ptx_with_opts(source.into(), opts)
        .map_err(|e| Error::Gpu(format!("NVRTC failed: {e:?}")))
}

/// For the NVRTC compile tests, which run without a GPU.
#[cfg(test)]
pub(crate) mod test_support {
    /// Whether NVRTC can be loaded; when not, the calling test skips saying so, or fails
    /// where a GPU is required (see [`crate::gpu::test_gate`]).
    pub(crate) fn nvrtc_present() -> bool {
        use crate::gpu::test_gate::{current_test, gpu_or_skip, gpu_required};
        // SAFETY: only tries to dlopen NVRTC.
        let present = unsafe { cudarc::nvrtc::sys::is_culib_present() };
        let found = if present {
            Ok(())
        } else {
            Err("NVRTC (libnvrtc.so) is not installed")
        };
        gpu_or_skip(gpu_required(), &current_test(), found).is_some()
    }

    /// `source`'s PTX for sm_90 (an H100) and the seconds NVRTC took; panics naming `what`
    /// when it does not compile.
    pub(crate) fn ptx_for_sm90(source: String, what: &str) -> (String, f64) {
        let start = std::time::Instant::now();
        let ptx = super::compile_ptx(source, (9, 0)).unwrap_or_else(|e| panic!("{what}: {e}"));
        (ptx.to_src(), start.elapsed().as_secs_f64())
    }
}
