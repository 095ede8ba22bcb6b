//! From a plan to the plain parameters an engine takes ([`EngineParams`]): the one place the
//! planner's choice is handed down to the engines.

use super::{Candidate, Plan};
use crate::engine::{EngineParams, LaunchShape};
use crate::gpu::KernelResources;
use crate::Result;

impl Candidate {
    /// The gpu-blocked launch shape of a GPU candidate.
    pub(crate) fn launch_shape(&self) -> Option<LaunchShape> {
        self.gpu.as_ref().map(|g| LaunchShape {
            block: g.block,
            ry: g.ry,
            rx: g.rx,
            skew: g.skew,
            stream_block: g.stream_block,
        })
    }

    /// The parameters a GPU engine takes for this candidate (the CPU fields unused).
    pub(crate) fn gpu_params(&self) -> EngineParams {
        EngineParams {
            engine: self.engine,
            isa: crate::Level::Base,
            threads: 1,
            pin: false,
            dim_t: self.dim_t,
            tile: self.tile,
            tile_threads: 1,
            z_chunks: 1,
            llc_bytes: 0,
            in_place: false,
            in_place_fixed: false,
            launch: self.launch_shape(),
            replay: true,
        }
    }
}

impl Plan {
    /// The parameters the plan's engine runs with.
    pub(crate) fn engine_params(&self) -> EngineParams {
        EngineParams {
            engine: self.engine(),
            isa: self.machine().isa,
            threads: self.threads(),
            pin: self.pin(),
            dim_t: self.dim_t(),
            tile: self.tile(),
            tile_threads: self.tile_threads(),
            z_chunks: self.z_chunks(),
            llc_bytes: self.machine().llc_bytes(),
            in_place: self.in_place(),
            in_place_fixed: self.overrides().in_place,
            launch: self.chosen().launch_shape(),
            replay: true,
        }
    }
}

impl Plan {
    /// Compiles (or fetches from the cache) the GPU kernel this plan runs and reports its
    /// register use and spills; `None` for CPU plans and lattice plans.
    pub fn compiled_resources(&self) -> Result<Option<KernelResources>> {
        let Some(stencil) = self.kernel().stencil().filter(|_| self.engine().is_gpu()) else {
            return Ok(None);
        };
        crate::gpu::stencil::kernel_resources(
            stencil,
            self.dtype(),
            &self.engine_params(),
            self.dims(),
        )
        .map(Some)
    }
}
