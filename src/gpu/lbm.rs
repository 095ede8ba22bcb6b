//! Running D3Q19 lattice-Boltzmann plans on the GPU (`gpu-naive`): the lattice's populations,
//! node words (its class and which of its links end in a wall, from the host's classification),
//! flags and boundary table are uploaded, the fused stream-collide kernel of `kernels/lbm.cu`
//! runs once per step, and the populations come back. Two storage schemes:
//!
//! * **two copies** (default): ping-pong between buffers A and B, `2 × 19` values per node on
//!   the device;
//! * **in place** (AA pattern, [`crate::PlanBuilder::in_place`]): one copy, so twice as large a
//!   lattice fits. Even steps pull from the neighbours and push each result to the slot its
//!   neighbour will read, odd steps read and write only the node's own slots; after an odd
//!   number of steps the populations sit one streaming step away from the canonical layout and
//!   the download puts them back (on the host). Every non-wall node must lie off the faces of
//!   closed axes (inlets and outlets one node inside a wall, or on periodic axes): the
//!   zero-gradient reads of face nodes would share storage. Both schemes move the same
//!   `2 × 19` values per node update.
//!
//! There is no `gpu-blocked` lattice engine: two steps per pass through L2 measured 0.28-0.70×
//! this engine on the H100 and the H200 in every storage (`docs/lattice-boltzmann.md`).
//!
//! Kernels raise a device flag when an output is not finite; the flag is read every
//! [`CHECK_EVERY`] steps, and a raised one is traced by replaying the run from the host state
//! (still the input: the result is only downloaded at the end) one step at a time, so the
//! lattice ends on the last finite state and the error names the step and a cell, as the CPU
//! engines do.

use std::time::Instant;

use cudarc::driver::{CudaSlice, DeviceRepr, LaunchArgs, LaunchConfig, PushKernelArg};
use rayon::prelude::*;

use super::compile::Kernel;
use super::device::Gpu;
use super::launch_grid::MAX_BLOCKS;
use super::lbm_source::lattice_source;
use super::stencil::{ensure_memory, gpu_err};
use super::zplanes::ZPlanes;
use crate::engine::Engine;
use crate::lbm::{
    neighbour, Cell, Classes, Lattice, Populations, Storage, IS_INLET, IS_OUTLET, OPPOSITE, Q,
    VELOCITIES, WEIGHTS,
};
use crate::memory::Footprint;
use crate::{Error, Real, Result};

/// Steps between reads of the non-finite flag (each read waits for the device).
pub(crate) const CHECK_EVERY: usize = 64;
/// Values per flag in the boundary table (see `kernels/lbm.cu`).
const BC_STRIDE: usize = 24;
/// Threads per block.
const BLOCK_THREADS: usize = 128;

/// One copy of the populations on the device: in the lattice's precision, or as the 16-bit
/// codes of a [`Storage`] format.
pub(crate) enum Pops<T> {
    Native(CudaSlice<T>),
    Packed(CudaSlice<u16>),
}

impl<T: Real> Pops<T> {
    /// `len` zeroed values in `storage`.
    fn alloc(gpu: &Gpu, len: usize, storage: Storage) -> Result<Self> {
        Ok(if storage.is_16_bit() {
            Pops::Packed(gpu.stream.alloc_zeros::<u16>(len).map_err(gpu_err)?)
        } else {
            Pops::Native(gpu.stream.alloc_zeros::<T>(len).map_err(gpu_err)?)
        })
    }

    /// Pushes the buffer as a kernel argument the kernel only reads.
    fn arg<'a>(&'a self, args: &mut LaunchArgs<'a>) {
        match self {
            Pops::Native(s) => args.arg(s),
            Pops::Packed(s) => args.arg(s),
        };
    }

    /// Pushes the buffer as a kernel argument the kernel writes.
    fn arg_mut<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        match self {
            Pops::Native(s) => args.arg(s),
            Pops::Packed(s) => args.arg(s),
        };
    }

    /// Copies `src` (the same storage and length) into this buffer on the device.
    fn copy_from(&mut self, gpu: &Gpu, src: &Pops<T>) -> Result<()> {
        match (src, self) {
            (Pops::Native(s), Pops::Native(d)) => gpu.stream.memcpy_dtod(s, d),
            (Pops::Packed(s), Pops::Packed(d)) => gpu.stream.memcpy_dtod(s, d),
            _ => unreachable!("both copies of a lattice share its storage"),
        }
        .map_err(gpu_err)
    }
}

/// Device buffers of a lattice run, kept by the solver between runs of the same size.
pub(crate) struct LbmBuffers<T> {
    dims: [usize; 3],
    in_place: bool,
    storage: Storage,
    /// The populations (the current state between steps).
    a: Pops<T>,
    /// The second copy (two-copy scheme only).
    b: Option<Pops<T>>,
    /// Node words ([`node_words`]): the class byte and which links end in a wall; one unread
    /// word for a lattice without walls, inlets or outlets (`ALL_BULK`).
    words: CudaSlice<u32>,
    flags: CudaSlice<u8>,
    flag: CudaSlice<i32>,
}

impl<T: Real> LbmBuffers<T> {
    /// Allocates buffers for `lat` (one or two copies of the populations), failing with
    /// [`Error::GpuOutOfMemory`] when they do not fit.
    pub(crate) fn new(gpu: &Gpu, lat: &Lattice<T>, in_place: bool) -> Result<Self> {
        let len = lat.pop.storage().len();
        let cells = lat.layout().cells_len();
        let (copies, label) = if in_place {
            (1, "on the GPU, in place")
        } else {
            (2, "with its second copy on the GPU")
        };
        // Populations and flags, and for a lattice with walls (or not yet classified) the node
        // words; the one-word flag fits in the reserve.
        let storage = lat.storage();
        let walled = !(lat.has_classes() && lat.classes().all_bulk);
        let node_bytes = if walled { 1 + WORD_BYTES } else { 1 };
        let need =
            Footprint::lattice_stored(T::DTYPE, storage, copies, node_bytes).with_label(label);
        ensure_memory(gpu, &need, lat.dims(), 0)?;
        Ok(LbmBuffers {
            dims: lat.dims(),
            in_place,
            storage,
            a: Pops::alloc(gpu, len, storage)?,
            b: if in_place {
                None
            } else {
                Some(Pops::alloc(gpu, len, storage)?)
            },
            words: gpu
                .stream
                .alloc_zeros::<u32>(if walled { cells } else { 1 })
                .map_err(gpu_err)?,
            flags: gpu.stream.alloc_zeros::<u8>(cells).map_err(gpu_err)?,
            flag: gpu.stream.alloc_zeros::<i32>(1).map_err(gpu_err)?,
        })
    }

    /// Whether these buffers serve a lattice of `dims` in this scheme and storage.
    pub(crate) fn fits(&self, dims: [usize; 3], in_place: bool, storage: Storage) -> bool {
        self.dims == dims && self.in_place == in_place && self.storage == storage
    }

    /// Makes the other copy the current one (two copies only): after a step, its output; in a
    /// split run's replay, the step's input.
    pub(crate) fn swap_copies(&mut self) {
        if let Some(b) = self.b.as_mut() {
            std::mem::swap(&mut self.a, b);
        }
    }

    /// Whether the populations lie in the in-place scheme's shifted layout after `done` steps.
    fn shifted_after(&self, done: usize) -> bool {
        self.in_place && done % 2 == 1
    }
}

/// What a split lattice's run (`lbm_split`) reaches into.
#[cfg(feature = "mpi")]
impl<T: Real> LbmBuffers<T> {
    /// Whether the populations are updated in place (one copy).
    pub(crate) fn in_place(&self) -> bool {
        self.in_place
    }

    /// The copy that holds the current populations.
    pub(crate) fn current(&mut self) -> &mut Pops<T> {
        &mut self.a
    }
}

/// Device bytes per node that a lattice with walls needs beside its populations and flags: the
/// node word.
pub(crate) const WORD_BYTES: u64 = crate::lbm::NODE_WORD_BYTES;

/// The bit of a node word at which its links start (`LINK_BIT` in `kernels/lbm.cu`).
const LINK_BIT: u32 = 8;

/// The node words the kernels read: the class byte (`classify.rs`) in bits 0-7, and from bit
/// [`LINK_BIT`] on the links that end in a wall (bit `i` of the classification's link word).
pub(crate) fn node_words(classes: &Classes) -> Vec<u32> {
    const _: () = assert!(
        Q + LINK_BIT as usize <= 32,
        "links fit above the class byte"
    );
    classes
        .class
        .par_iter()
        .zip(&classes.links)
        .map(|(&c, &l)| c as u32 | l << LINK_BIT)
        .collect()
}

/// The kernels and small tables of one run.
pub(super) struct Run<'a, T> {
    gpu: &'a Gpu,
    step: Kernel,
    even: Kernel,
    odd: Kernel,
    bc: CudaSlice<T>,
    launch: Launch,
    dims: [i32; 3],
    strides: [i64; 3],
}

/// Per flag, its row of the boundary table: the moving-wall term `6 w_i (c_i · u_w)` of each
/// direction as the reference engine rounds it, the inlet velocity, the outlet density.
pub(crate) fn boundary_table<T: Real>(lat: &Lattice<T>) -> Vec<T> {
    let count = lat.table.flag_count();
    let mut bc = vec![T::zero(); count * BC_STRIDE];
    for f in 0..count {
        let cell = lat.table.cell(f as u8);
        let row = &mut bc[f * BC_STRIDE..(f + 1) * BC_STRIDE];
        match cell {
            Cell::MovingWall { velocity } => {
                for (i, v) in VELOCITIES.iter().enumerate() {
                    let cu: f64 = (0..3).map(|a| v[a] as f64 * velocity[a]).sum();
                    row[i] = T::of(6.0 * WEIGHTS[i] * cu);
                }
            }
            Cell::Inlet { velocity } => {
                for a in 0..3 {
                    row[Q + a] = T::of(velocity[a]);
                }
            }
            Cell::Outlet { density } => row[Q + 3] = T::of(density),
            Cell::Fluid | Cell::Wall => {}
        }
    }
    bc
}

/// The in-place scheme needs every inlet and outlet node off the faces of closed axes (fluid
/// nodes never lie there).
pub(crate) fn check_in_place<T: Real>(lat: &Lattice<T>) -> Result<()> {
    let class = &lat.classes().class;
    let layout = *lat.layout();
    let [nx, ny, nz] = layout.dims;
    let periodic = lat.periodic();
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let on_closed_face = [x, y, z]
                    .iter()
                    .zip(layout.dims)
                    .zip(periodic)
                    .any(|((&c, n), p)| !p && (c == 0 || c == n - 1));
                if on_closed_face && class[layout.offset(x, y, z)] & (IS_INLET | IS_OUTLET) != 0 {
                    return Err(Error::InvalidPlan(format!(
                        "the in-place (AA) scheme needs inlets and outlets off the faces of closed \
                         axes, but ({x}, {y}, {z}) is one: move them one node inside a wall, make \
                         the axis periodic, or use the two-copy scheme (in_place(false))"
                    )));
                }
            }
        }
    }
    Ok(())
}

impl<T: Real> Run<'_, T> {
    /// Pushes what every lattice kernel takes after its population buffers, in the kernels'
    /// common parameter order: node words, flags, the boundary table, dims and strides.
    fn lattice_args<'a>(
        &'a self,
        args: &mut LaunchArgs<'a>,
        words: &'a CudaSlice<u32>,
        flags: &'a CudaSlice<u8>,
    ) {
        args.arg(words).arg(flags).arg(&self.bc);
        for d in &self.dims {
            args.arg(d);
        }
        for s in &self.strides {
            args.arg(s);
        }
    }

    /// Queues the two-copy step's launches over the planes `planes` (at most two ranges) from
    /// the current copy into the other (one launch below CUDA's limits); the caller swaps the
    /// copies after the step's last launch.
    pub(super) fn launch_step(&self, bufs: &mut LbmBuffers<T>, planes: &ZPlanes) -> Result<()> {
        let [a0, a1, b0, _] = planes.args();
        for (cfg, [y0, c0]) in self.launch.launches(planes.a.len() + planes.b.len()) {
            let b = bufs.b.as_mut().expect("two-copy buffers");
            let mut args = self.gpu.stream.launch_builder(&self.step.function);
            bufs.a.arg(&mut args);
            b.arg_mut(&mut args);
            self.lattice_args(&mut args, &bufs.words, &bufs.flags);
            args.arg(&a0).arg(&a1).arg(&b0).arg(&y0).arg(&c0);
            args.arg(&mut bufs.flag);
            // SAFETY: the arguments match lbm_step's parameter list in type and order; both
            // population buffers hold the lattice's whole storage (19 arrays `array` apart),
            // the flags one byte per node in the same layout and the words one value per node
            // (a kernel compiled for a lattice without walls, which has one word, reads none),
            // the table one row per flag in use; the launches cover nx x ny nodes of each plane
            // of the ranges, which lie in [0, nz) (`ZPlanes::one(0..nz)` or `split_pass`), and
            // the kernel touches nothing outside them.
            unsafe { args.launch(cfg) }.map_err(gpu_err)?;
        }
        Ok(())
    }

    fn launch_aa(&self, bufs: &mut LbmBuffers<T>, odd: bool) -> Result<()> {
        let kernel = if odd { &self.odd } else { &self.even };
        for (cfg, [y0, z0]) in self.launch.launches(self.dims[2] as usize) {
            let mut args = self.gpu.stream.launch_builder(&kernel.function);
            bufs.a.arg_mut(&mut args);
            self.lattice_args(&mut args, &bufs.words, &bufs.flags);
            args.arg(&y0).arg(&z0).arg(&mut bufs.flag);
            // SAFETY: as in `launch_step`, with the single buffer updated in place: every
            // thread reads and writes its own set of locations only (checked by
            // `check_in_place`).
            unsafe { args.launch(cfg) }.map_err(gpu_err)?;
        }
        Ok(())
    }

    /// Advances the device state from step `first` (0-based count of steps already done on it)
    /// by `count` steps.
    pub(super) fn steps(&self, bufs: &mut LbmBuffers<T>, first: usize, count: usize) -> Result<()> {
        for s in first..first + count {
            if bufs.in_place {
                self.launch_aa(bufs, s % 2 == 1)?;
            } else {
                self.launch_step(bufs, &self.whole())?;
                bufs.swap_copies();
            }
        }
        Ok(())
    }

    /// Every plane of the lattice.
    pub(super) fn whole(&self) -> ZPlanes {
        ZPlanes::one(0..self.dims[2] as usize)
    }

    /// Waits for the device, reads and clears the non-finite flag.
    pub(super) fn flag_raised(&self, bufs: &mut LbmBuffers<T>) -> Result<bool> {
        let mut host = [0i32; 1];
        self.gpu
            .stream
            .memcpy_dtoh(&bufs.flag, &mut host[..])
            .map_err(gpu_err)?;
        self.gpu.stream.synchronize().map_err(gpu_err)?;
        if host[0] != 0 {
            self.gpu
                .stream
                .memset_zeros(&mut bufs.flag)
                .map_err(gpu_err)?;
        }
        Ok(host[0] != 0)
    }
}

/// Copies the host state to the device buffers, in 16-bit storage the lattice's codes (encoded
/// from the populations when a host write replaced them), and in both copies for the two-copy
/// scheme, so wall nodes, which no kernel writes, agree in both.
pub(super) fn upload<T: Real>(gpu: &Gpu, lat: &Lattice<T>, bufs: &mut LbmBuffers<T>) -> Result<()> {
    match &mut bufs.a {
        Pops::Native(a) => gpu.stream.memcpy_htod(lat.pop.storage(), a),
        Pops::Packed(a) => match &lat.codes {
            Some(codes) => gpu.stream.memcpy_htod(&codes[..], a),
            None => {
                // A host write replaced the codes: its values must fit the format.
                lat.pop.check_storage(bufs.storage)?;
                gpu.stream.memcpy_htod(&lat.pop.encode(bufs.storage)[..], a)
            }
        },
    }
    .map_err(gpu_err)?;
    if let Some(b) = bufs.b.as_mut() {
        b.copy_from(gpu, &bufs.a)?;
    }
    gpu.stream.synchronize().map_err(gpu_err)
}

/// The `len` values of a device buffer, on the host.
fn fetch<E: DeviceRepr + Default + Clone>(
    gpu: &Gpu,
    src: &CudaSlice<E>,
    len: usize,
) -> Result<Vec<E>> {
    fetch_into(gpu, src, vec![E::default(); len])
}

/// The values of a device buffer, copied into `out` (as long as the buffer).
fn fetch_into<E: DeviceRepr>(gpu: &Gpu, src: &CudaSlice<E>, mut out: Vec<E>) -> Result<Vec<E>> {
    gpu.stream.memcpy_dtoh(src, &mut out[..]).map_err(gpu_err)?;
    gpu.stream.synchronize().map_err(gpu_err)?;
    Ok(out)
}

/// What the download needs to undo the AA pattern's shifted layout: strides, periodic axes,
/// which flags are walls, and the flags.
pub(crate) struct Geometry<'a> {
    layout: crate::lbm::Layout,
    periodic: [bool; 3],
    wall: Vec<bool>,
    flags: &'a [u8],
}

impl<'a> Geometry<'a> {
    pub(crate) fn of<T: Real>(lat: &'a Lattice<T>) -> Self {
        Geometry {
            layout: *lat.layout(),
            periodic: lat.periodic(),
            wall: Geometry::walls(lat),
            flags: &lat.flags,
        }
    }

    /// Which flags of `lat` are walls (resting or moving).
    fn walls<T: Real>(lat: &Lattice<T>) -> Vec<bool> {
        (0..lat.table.flag_count())
            .map(|f| lat.table.cell(f as u8).is_wall())
            .collect()
    }
}

/// Copies the device state after `done` steps into `dst` in the canonical layout (undoing the
/// AA pattern's shifted layout after an odd number of in-place steps), decoding 16-bit codes;
/// returns the codes in 16-bit storage.
pub(super) fn download<T: Real>(
    gpu: &Gpu,
    geo: &Geometry<'_>,
    bufs: &LbmBuffers<T>,
    done: usize,
    dst: &mut Populations<T>,
) -> Result<Option<Vec<u16>>> {
    download_reusing(gpu, geo, bufs, done, dst, None)
}

/// [`download`], fetching 16-bit codes into `reuse` (codes no longer needed) where it has
/// their length, so that a two-copy run of a lattice near the host's memory does not hold two
/// sets of codes at once.
fn download_reusing<T: Real>(
    gpu: &Gpu,
    geo: &Geometry<'_>,
    bufs: &LbmBuffers<T>,
    done: usize,
    dst: &mut Populations<T>,
    reuse: Option<Vec<u16>>,
) -> Result<Option<Vec<u16>>> {
    let shifted = bufs.shifted_after(done);
    let len = dst.storage().len();
    match &bufs.a {
        Pops::Native(a) if !shifted => {
            gpu.stream
                .memcpy_dtoh(a, dst.storage_mut())
                .map_err(gpu_err)?;
            gpu.stream.synchronize().map_err(gpu_err)?;
        }
        Pops::Native(a) => unshift(&fetch(gpu, a, len)?, geo, dst.storage_mut()),
        Pops::Packed(a) => {
            let out = reuse
                .filter(|c| c.len() == len)
                .unwrap_or_else(|| vec![0; len]);
            let mut codes = fetch_into(gpu, a, out)?;
            if shifted {
                let raw = codes.clone();
                unshift(&raw, geo, &mut codes);
            }
            dst.decode(bufs.storage, &codes);
            return Ok(Some(codes));
        }
    }
    Ok(None)
}

/// Puts populations stored as the in-place scheme leaves them after an odd step (`raw`) back in
/// the canonical layout (`dst`): node x's f*_i sits at (x + c_i, opposite i), or at (x, i) when
/// x + c_i is a wall; wall nodes are untouched.
pub(crate) fn unshift<E: Copy + Send + Sync>(raw: &[E], geo: &Geometry<'_>, dst: &mut [E]) {
    let layout = geo.layout;
    let [nx, ny, nz] = layout.dims;
    let periodic = geo.periodic;
    let solid = |o: usize| geo.wall[geo.flags[o] as usize];
    dst.par_chunks_mut(layout.array)
        .enumerate()
        .for_each(|(i, out)| {
            let c = VELOCITIES[i];
            let o_base = OPPOSITE[i] * layout.array;
            let i_base = i * layout.array;
            for z in 0..nz {
                for y in 0..ny {
                    for x in 0..nx {
                        let o = layout.offset(x, y, z);
                        if solid(o) {
                            out[o] = raw[i_base + o];
                            continue;
                        }
                        let n = layout.offset(
                            neighbour(x as isize + c[0] as isize, nx, periodic[0]),
                            neighbour(y as isize + c[1] as isize, ny, periodic[1]),
                            neighbour(z as isize + c[2] as isize, nz, periodic[2]),
                        );
                        out[o] = if solid(n) {
                            raw[i_base + o]
                        } else {
                            raw[o_base + n]
                        };
                    }
                }
            }
        });
}

/// The launches of one step: 128 threads a block (registers allow as many resident threads as
/// 256-thread blocks, with finer granularity), up to 128 along x (whole warps), a block row per
/// row group along y and per plane along z. A launch holds at most `most` of them along y and
/// z (CUDA's 65,535, or fewer in the emulator's tests); a lattice longer than that takes
/// several launches a step, from block row `y0` and plane `z0` on, and kernels compiled for it
/// ([`Launch::is_long`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Launch {
    /// Threads per block along x and y.
    pub(super) block: [usize; 2],
    /// Blocks along x and block rows along y.
    pub(super) blocks: [usize; 2],
    /// Most block rows of one launch along y and z.
    pub(super) most: [usize; 2],
}

impl Launch {
    /// The launch shape for a lattice of `dims` with at most `most` block rows a launch.
    pub(super) fn new([nx, ny, _]: [usize; 3], most: [usize; 2]) -> Self {
        let bx = nx.div_ceil(32).clamp(1, 4) * 32;
        let by = BLOCK_THREADS / bx;
        Launch {
            block: [bx, by],
            blocks: [nx.div_ceil(bx), ny.div_ceil(by)],
            most,
        }
    }

    /// The most block rows CUDA takes in one launch along y and z.
    pub(super) const CUDA_MOST: [usize; 2] = [MAX_BLOCKS[1], MAX_BLOCKS[2]];

    /// The launch shape for a lattice of `dims` within CUDA's limits.
    fn of(dims: [usize; 3]) -> Self {
        Self::new(dims, Self::CUDA_MOST)
    }

    /// Whether a step over `planes` planes takes more than one launch.
    pub(super) fn is_long(&self, planes: usize) -> bool {
        self.blocks[1] > self.most[0] || planes > self.most[1]
    }

    /// The launches over `planes` planes, each with its first block row and plane: one when
    /// the lattice keeps to the limits. Lattices hold fewer than 2^31 nodes (`open_run`), so
    /// every figure fits.
    pub(super) fn launches(&self, planes: usize) -> Vec<(LaunchConfig, [i32; 2])> {
        let chunks = |n: usize, most: usize| {
            (0..n)
                .step_by(most.max(1))
                .map(move |o| (o, most.min(n - o)))
        };
        let mut out = Vec::new();
        for (y0, rows) in chunks(self.blocks[1], self.most[0]) {
            for (z0, count) in chunks(planes, self.most[1]) {
                let cfg = LaunchConfig {
                    grid_dim: (self.blocks[0] as u32, rows as u32, count as u32),
                    block_dim: (self.block[0] as u32, self.block[1] as u32, 1),
                    shared_mem_bytes: 0,
                };
                out.push((cfg, [y0 as i32, z0 as i32]));
            }
        }
        out
    }
}

/// Compiles (or fetches) the kernels of `lat`'s physics, periodicity and storage.
fn kernels<T: Real>(gpu: &Gpu, lat: &Lattice<T>) -> Result<[Kernel; 3]> {
    let dims = lat.layout().dims;
    let source = lattice_source::<T>(lat, Launch::of(dims).is_long(dims[2]));
    Ok([
        gpu.kernel(&source, "lbm_step", 0)?,
        gpu.kernel(&source, "lbm_aa_even", 0)?,
        gpu.kernel(&source, "lbm_aa_odd", 0)?,
    ])
}

/// Advances `lat` by `steps` steps on the GPU with `engine`; returns the seconds of computation
/// and of transfers. On a blow-up the lattice holds the last finite state (its step count says
/// which) and the error the 1-based step of this run that went bad.
pub(crate) fn run<T: Real>(
    gpu: &Gpu,
    engine: Engine,
    lat: &mut Lattice<T>,
    bufs: &mut LbmBuffers<T>,
    steps: usize,
) -> Result<(f64, f64)> {
    if engine != Engine::GpuNaive {
        return Err(Error::PlanMismatch(format!(
            "engine '{engine}' does not run lattices on the GPU: gpu-naive does"
        )));
    }
    lat.prepare();
    if bufs.in_place {
        check_in_place(lat)?;
    }
    let transfer_start = Instant::now();
    let run = open_run(gpu, lat, bufs)?;
    let mut transfer = transfer_start.elapsed().as_secs_f64();

    let start = Instant::now();
    let mut done = 0;
    while done < steps {
        let count = CHECK_EVERY.min(steps - done);
        run.steps(bufs, done, count)?;
        if run.flag_raised(bufs)? {
            return Err(trace_failure(&run, lat, bufs, done + count));
        }
        done += count;
    }
    let compute = start.elapsed().as_secs_f64();
    let download_start = Instant::now();
    // Straight into the lattice (no second host copy): the geometry borrows other fields.
    let wall = Geometry::walls(lat);
    let geo = Geometry {
        layout: *lat.pop.layout(),
        periodic: lat.periodic,
        wall,
        flags: &lat.flags,
    };
    let spare = spare_codes(&mut lat.codes, bufs.shifted_after(steps));
    lat.codes = download_reusing(gpu, &geo, bufs, steps, &mut lat.pop, spare)?;
    transfer += download_start.elapsed().as_secs_f64();
    lat.count_steps(steps as u64);
    Ok((compute, transfer))
}

/// Compiles (or fetches) `lat`'s kernels and uploads its tables, node classes, flags and
/// populations (the lattice checked and prepared by the caller).
pub(super) fn open_run<'a, T: Real>(
    gpu: &'a Gpu,
    lat: &Lattice<T>,
    bufs: &mut LbmBuffers<T>,
) -> Result<Run<'a, T>> {
    let layout = *lat.layout();
    if layout.cells_len() > i32::MAX as usize {
        return Err(Error::InvalidPlan(format!(
            "the GPU kernels index one population array with 32-bit offsets: {} padded nodes \
             exceed 2^31",
            layout.cells_len()
        )));
    }
    let [step, even, odd] = kernels(gpu, lat)?;
    let bc = boundary_table(lat);
    let run = Run {
        gpu,
        step,
        even,
        odd,
        bc: gpu.stream.clone_htod(&bc[..]).map_err(gpu_err)?,
        launch: Launch::of(layout.dims),
        dims: layout.dims.map(|n| n as i32),
        strides: [layout.pitch, layout.plane, layout.array].map(|s| s as i64),
    };
    gpu.stream
        .memcpy_htod(&lat.flags[..], &mut bufs.flags)
        .map_err(gpu_err)?;
    if !lat.classes().all_bulk {
        if bufs.words.len() < layout.cells_len() {
            // Buffers made for the lattice before it had walls.
            let need = Footprint::lattice_stored(T::DTYPE, lat.storage(), 0, WORD_BYTES)
                .with_label("with its node words");
            ensure_memory(gpu, &need, layout.dims, 0)?;
            bufs.words = gpu
                .stream
                .alloc_zeros::<u32>(layout.cells_len())
                .map_err(gpu_err)?;
        }
        gpu.stream
            .memcpy_htod(&node_words(lat.classes()), &mut bufs.words)
            .map_err(gpu_err)?;
    }
    gpu.stream.memset_zeros(&mut bufs.flag).map_err(gpu_err)?;
    upload(gpu, lat, bufs)?;
    Ok(run)
}

/// The lattice's codes (`codes`), taken to receive the run's result when the new set (and, for
/// a `shifted` in-place result, the raw set it is put back in order from) would not fit the
/// host's memory beside them; `None` (they stay until the result is complete) otherwise. A
/// download into taken codes that fails leaves the lattice without codes and its populations as
/// they were (they are decoded only from a complete fetch): the next upload encodes them again
/// from the populations, which may differ from the exact codes in the smallest deviations
/// (docs/lattice-boltzmann.md).
fn spare_codes(codes: &mut Option<Vec<u16>>, shifted: bool) -> Option<Vec<u16>> {
    let bytes = (1 + u64::from(shifted)) * 2 * codes.as_ref()?.len() as u64;
    let available = crate::memory::available();
    let fits = available.is_none_or(|a| bytes <= crate::memory::usable_host(a));
    if fits {
        None
    } else {
        codes.take()
    }
}

/// Replays the run from the host state (still this run's input) one step at a time up to
/// `limit` steps to find the first step with a non-finite output and a cell it holds; leaves
/// the state before that step in `lat`.
fn trace_failure<T: Real>(
    run: &Run<'_, T>,
    lat: &mut Lattice<T>,
    bufs: &mut LbmBuffers<T>,
    limit: usize,
) -> Error {
    let traced = (|| -> Result<Error> {
        upload(run.gpu, lat, bufs)?;
        run.flag_raised(bufs)?;
        let mut bad = None;
        for s in 0..limit {
            run.steps(bufs, s, 1)?;
            if run.flag_raised(bufs)? {
                bad = Some(s + 1);
                break;
            }
        }
        let Some(step) = bad else {
            return Err(Error::Gpu(
                "a non-finite value appeared but did not reappear when the steps were replayed"
                    .into(),
            ));
        };
        // The failing step's output (a population copy, with any 16-bit codes, and for the
        // in-place scheme the shifted copy it is fetched into): an error rather than the OOM
        // killer where the host cannot hold them, the lattice still the run's input.
        let codes_bytes = bufs.storage.code_bytes_per_node();
        Footprint::lattice(T::DTYPE, 1 + u64::from(bufs.in_place), codes_bytes)
            .with_label("to find the non-finite value")
            .check(lat.dims(), 0, crate::memory::available())?;
        let mut out = Populations::new(lat.dims())?;
        let codes = download(run.gpu, &Geometry::of(lat), bufs, step, &mut out)?;
        let error = failure_at(&out, codes.as_deref(), bufs.storage, step);
        // Back to the last finite state, fetched into the same copy and codes.
        upload(run.gpu, lat, bufs)?;
        run.steps(bufs, 0, step - 1)?;
        let geo = Geometry::of(lat);
        let codes = download_reusing(run.gpu, &geo, bufs, step - 1, &mut out, codes)?;
        lat.pop = out;
        lat.codes = codes;
        lat.count_steps(step as u64 - 1);
        Ok(error)
    })();
    traced.unwrap_or_else(|e| e)
}

/// The error for the output `out` (with its 16-bit `codes`) of the step `step` that raised
/// the device flag: the first non-finite population, or in 16-bit storage, where the kernels
/// also flag a deviation beyond the format's range (stored saturated, so finite), the first
/// saturated one.
fn failure_at<T: Real>(
    out: &Populations<T>,
    codes: Option<&[u16]>,
    storage: Storage,
    step: usize,
) -> Error {
    let saturated = || codes.and_then(|c| out.find_saturated(storage, c));
    match (out.find_non_finite(), saturated()) {
        (None, Some(([x, y, z], i, value))) => Error::Saturated {
            step,
            what: format!(
                "population {i} of node ({x}, {y}, {z}) reached {value}, the edge of what \
                 {storage} storage holds ({:.4} ± {:.3})",
                WEIGHTS[i],
                storage.max_deviation(),
            ),
        },
        (found, _) => {
            let (cell, _, value) = found.unwrap_or(([0; 3], 0, f64::NAN));
            Error::NonFinite { step, cell, value }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step takes one launch with one block row per row group and plane up to CUDA's limit,
    /// and several past it, each from its first block row and plane; 128 threads a block, whole
    /// warps along x.
    #[test]
    fn launches_keep_to_the_limits() {
        let grids = |dims: [usize; 3]| {
            let l = Launch::of(dims);
            let grids: Vec<_> = l
                .launches(dims[2])
                .into_iter()
                .map(|(c, from)| {
                    assert_eq!(c.block_dim, (l.block[0] as u32, l.block[1] as u32, 1));
                    (c.grid_dim, from)
                })
                .collect();
            assert_eq!(l.is_long(dims[2]), grids.len() > 1, "{dims:?}");
            (l.block, grids)
        };
        assert_eq!(grids([37, 29, 23]), ([64, 2], vec![((1, 15, 23), [0, 0])]));
        assert_eq!(
            grids([64, 131_070, 65_535]),
            ([64, 2], vec![((1, 65_535, 65_535), [0, 0])])
        );
        assert_eq!(
            grids([6, 3, 70_001]),
            (
                [32, 4],
                vec![((1, 1, 65_535), [0, 0]), ((1, 1, 4_466), [0, 65_535])]
            )
        );
        assert_eq!(
            grids([129, 65_537, 2]),
            (
                [128, 1],
                vec![((2, 65_535, 2), [0, 0]), ((2, 2, 2), [65_535, 0])]
            )
        );
        let l = Launch::new([17, 11, 6], [2, 4]);
        let froms: Vec<_> = l
            .launches(6)
            .into_iter()
            .map(|(c, f)| (c.grid_dim, f))
            .collect();
        assert_eq!(
            froms,
            vec![
                ((1, 2, 4), [0, 0]),
                ((1, 2, 2), [0, 4]),
                ((1, 1, 4), [2, 0]),
                ((1, 1, 2), [2, 4])
            ]
        );
    }
}
