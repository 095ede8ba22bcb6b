//! [`Candidate`]: one configuration the planner rates, with the model's numbers, the limit that
//! binds it ([`Bound`]) and, on the GPU, its launch ([`GpuLaunch`]).

use serde::{Deserialize, Serialize};

use crate::engine::Engine;

/// What limits a configuration in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// Memory bandwidth.
    Memory,
    /// Arithmetic and load/store throughput.
    Compute,
    /// GPU shared-memory bandwidth.
    SharedMemory,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::SharedMemory => "shared",
        })
    }
}

/// One configuration the planner considered, with the model's verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Engine.
    pub engine: Engine,
    /// Time steps per pass.
    pub dim_t: usize,
    /// Loaded tile `dim_X × dim_Y` (the whole XY plane for unblocked engines).
    pub tile: [usize; 2],
    /// Redundant-work factor for this grid and tiling (1.0 = none).
    pub kappa: f64,
    /// Bytes of on-chip storage the configuration keeps live (eq. 1; for a lattice its rings
    /// and one plane of each population streamed in).
    pub working_set: usize,
    /// Compute-bound rate, million updates per second.
    pub compute_mups: f64,
    /// Memory-bound rate, million updates per second.
    pub memory_mups: f64,
    /// The predicted rate: min(compute, memory) / κ, or on measured machines for streaming
    /// stencils the rate whose time is the sum of both (see the module docs); blocked
    /// candidates also carry the tile groups' balance, barrier and remote-row factors.
    pub predicted_mups: f64,
    /// Which limit binds.
    pub bound: Bound,
    /// GPU launch parameters and model details (GPU engines only).
    pub gpu: Option<GpuLaunch>,
    /// Measured rate, million updates per second, when the configuration was autotuned.
    pub measured_mups: Option<f64>,
    /// Threads per tile group of the blocked CPU engine (the whole team for other engines;
    /// 0 for GPU engines).
    #[serde(default)]
    pub tile_threads: usize,
}

/// Launch parameters and model details of a GPU configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuLaunch {
    /// Threads per block `[x, y]`.
    pub block: [usize; 2],
    /// Cells per thread along y (register tiling).
    pub ry: usize,
    /// Cells per thread along x of the shuffle kernel (x neighbours by warp shuffle, stars
    /// only); 0 for the shared-memory kernel.
    #[serde(default)]
    pub rx: usize,
    /// The shuffle kernel's level schedule: skewed (all levels exchange their planes behind one
    /// barrier per plane) or not (a barrier per level).
    #[serde(default)]
    pub skew: bool,
    /// Output planes per block along z (division of the streaming dimension, AN5D's h_SN).
    pub stream_block: usize,
    /// The model's register estimate per thread.
    pub registers: usize,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: usize,
    /// Resident blocks per SM the model expects.
    pub blocks_per_sm: usize,
    /// Thread blocks per pass.
    pub blocks: usize,
    /// Model times of one pass, milliseconds: compute, shared memory, global memory.
    pub times_ms: [f64; 3],
    /// SM utilisation (wave quantisation and latency hiding), 0..1.
    pub sm_efficiency: f64,
    /// Multi-array kernels (the wave equation): each array's buffering strategy and the
    /// model's cost of that assignment.
    #[serde(skip)]
    pub buffering: Option<super::gpu_buffering::Buffering>,
}
