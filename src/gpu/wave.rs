//! The wave equation's kernels and device state on the GPU: `gpu-naive` (a launch per step)
//! and `gpu-blocked` (a launch per pass of `dim_t` steps) of `kernels/wave.cu`. The
//! wavefield's arrays live on the device for the run: four buffers of `u` (the current and
//! previous level, and the outputs of a pass), two of `φ`, `(v dt)²`, the damping profiles,
//! the source taps with their amplitudes for a batch of passes, and the probed cells with
//! their values for the batch. Passes are queued without waiting ([`queue_batch`]); the
//! non-finite flag is read once per batch. `wave_run` runs a plan with them (a failed blocked
//! pass replayed a step at a time with the naive kernel to name the step) and `wave_split` a
//! split field's part (its ranks trace a failure back together).

use std::ops::Range;

use cudarc::driver::{CudaSlice, PushKernelArg};

use super::compile::Kernel;
use super::device::Gpu;
use super::source::WIDE_INDEX;
use super::stencil::{ensure_memory, gpu_err, PassHooks};
use super::wave_launches::{
    check_naive_launches, launch_config, BlockedTerms, Form, PassLaunch, PassTerms,
};
use super::wave_source::{wave_source, WaveShape};
use super::wave_tiles::tile_origin;
use super::zplanes::{InFlight, ZPlanes};
use crate::engine::{Engine, EngineParams, Failure};
use crate::memory::Footprint;
use crate::wave::{WaveKernel, Wavefield};
use crate::{Error, Grid, Real, Result};

/// The blocked shape a gpu-blocked plan runs at `dim_t`, `None` for gpu-naive.
pub(crate) fn shape_of(params: &EngineParams, dim_t: usize) -> Result<Option<WaveShape>> {
    match params.engine {
        Engine::GpuNaive => Ok(None),
        Engine::GpuBlocked => {
            let l = params.launch.as_ref().ok_or_else(|| {
                Error::InvalidPlan("a gpu-blocked plan needs a launch shape".to_string())
            })?;
            Ok(Some(WaveShape {
                dim_t,
                bx: l.block[0],
                by: l.block[1],
                ry: l.ry.max(1),
                rx: l.rx.max(1),
                hz: l.stream_block,
            }))
        }
        other => Err(Error::PlanMismatch(format!(
            "engine {other} does not run on the GPU"
        ))),
    }
}

/// A compiled blocked kernel with the terms of its launches.
struct Blocked {
    kernel: Kernel,
    /// At one step per pass, `wave_blocked_inner`: the inner tiles' planes of the inner box in
    /// the plain form, while `kernel` takes the layers' form everywhere else.
    inner: Option<Kernel>,
    terms: BlockedTerms,
}

/// The kernels a run launches: the naive one (also the replay of a failed pass) and the blocked
/// pass kernels.
pub(super) struct Kernels {
    pub(super) radius: usize,
    naive: Kernel,
    /// The mirror of rigid faces (`None` without any).
    mirror: Option<Kernel>,
    full: Option<Blocked>,
    short: Option<Blocked>,
}

impl Kernels {
    /// Compiles (or finds in the process's cache) what `params` launches for `steps` steps and
    /// checks that the launches keep to CUDA's grid limits.
    pub(super) fn new<T: Real>(
        gpu: &Gpu,
        field: &Wavefield<T>,
        params: &EngineParams,
        steps: usize,
    ) -> Result<Self> {
        let kernel = field.kernel();
        let elements = field.u.storage().len();
        let source = wave_source::<T>(kernel, None, elements);
        let naive = gpu.kernel(&source, "wave_naive", 0)?;
        let mirror = match kernel.has_rigid_faces() {
            true if params.dim_t > 1 => {
                return Err(Error::PlanMismatch(format!(
                    "a wave kernel with a rigid face runs one step per pass, the plan has dim_t {}",
                    params.dim_t
                )))
            }
            true => Some(gpu.kernel(&source, "wave_mirror", 0)?),
            false => None,
        };
        let r = kernel.radius();
        let blocked = |dim_t: usize| -> Result<Option<Blocked>> {
            let Some(shape) = shape_of(params, dim_t)? else {
                return Ok(None);
            };
            if field.u.plane_stride() >= WIDE_INDEX {
                return Err(Error::InvalidPlan(format!(
                    "gpu-blocked indexes a plane with 32 bits: an x-y plane of {} elements is \
                     too large, use gpu-naive",
                    field.u.plane_stride()
                )));
            }
            if let Some(why) = shape.refusal(r) {
                return Err(Error::InvalidPlan(why));
            }
            if shape.valid(r).is_none() {
                return Err(Error::InvalidPlan(format!(
                    "a {}x{} tile at dim_t {dim_t} leaves no output at radius {r}",
                    shape.bx * shape.rx,
                    shape.by * shape.ry
                )));
            }
            let terms = BlockedTerms::of(shape, r, T::DTYPE);
            let source = wave_source::<T>(kernel, Some(shape), elements);
            let inner = match terms.inner {
                true => Some(gpu.kernel(&source, "wave_blocked_inner", terms.shared)?),
                false => None,
            };
            Ok(Some(Blocked {
                kernel: gpu.kernel(&source, "wave_blocked", terms.shared)?,
                inner,
                terms,
            }))
        };
        let dim_t = params.dim_t.max(1);
        let full = blocked(dim_t)?;
        let short = match steps % dim_t {
            0 => None,
            tail => blocked(tail)?,
        };
        // Every launch keeps to CUDA's grid limits, checked before anything is uploaded.
        let dims = field.dims();
        let interior = ZPlanes::one(r..dims[2].saturating_sub(r));
        for b in [full.as_ref(), short.as_ref()].into_iter().flatten() {
            let origin = tile_origin(&b.terms.shape, r, dims, field.damping.inner);
            launch_config(Some(b.terms), r, dims, origin, &interior)?;
        }
        check_naive_launches(kernel, dims)?;
        Ok(Kernels {
            radius: r,
            naive,
            mirror,
            full,
            short,
        })
    }

    /// Steps per pass.
    pub(super) fn dim_t(&self) -> usize {
        self.full.as_ref().map_or(1, |b| b.terms.shape.dim_t)
    }

    /// The shape of the run's one-step blocked pass, if it has one (every other pass's tiles
    /// start at the radius).
    pub(super) fn one_step(&self) -> Option<WaveShape> {
        [&self.full, &self.short]
            .into_iter()
            .flatten()
            .map(|b| b.terms.shape)
            .find(|s| s.dim_t == 1)
    }
}

/// Which buffers hold the current `u`, the previous `u` and `φ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Levels {
    u: usize,
    prev: usize,
    phi: usize,
}

impl Levels {
    /// The two `u` buffers holding neither level.
    fn free(&self) -> [usize; 2] {
        let mut it = (0..4).filter(|&i| i != self.u && i != self.prev);
        [it.next().unwrap_or(0), it.next().unwrap_or(0)]
    }
}

/// The probed cells in the order the kernels address them (by column, then z), with each
/// receiver tap's cell index.
pub(super) struct ProbeMap {
    /// Offsets per column `y·nx + x` into `z` (CSR, `nx·ny + 1` entries).
    pub(super) start: Vec<i32>,
    /// The z of each probed cell.
    pub(super) z: Vec<i32>,
    /// `(receiver, cell index, weight)` per probe tap.
    taps: Vec<(usize, usize, f64)>,
}

impl ProbeMap {
    pub(super) fn new<T: Real>(field: &Wavefield<T>) -> Self {
        let [nx, ny, _] = field.dims();
        let mut cells: Vec<[usize; 3]> = field.probes.iter().map(|p| p.cell).collect();
        cells.sort_by_key(|&[x, y, z]| (y * nx + x, z));
        cells.dedup();
        let mut start = vec![0i32; nx * ny + 1];
        for &[x, y, _] in &cells {
            start[y * nx + x + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let taps = field
            .probes
            .iter()
            .map(|p| {
                let [x, y, z] = p.cell;
                let j = cells
                    .binary_search_by_key(&(y * nx + x, z), |&[cx, cy, cz]| (cy * nx + cx, cz));
                (p.point, j.unwrap_or(0), p.weight)
            })
            .collect();
        ProbeMap {
            start,
            z: cells.iter().map(|c| c[2] as i32).collect(),
            taps,
        }
    }
}

impl ProbeMap {
    /// Appends to `traces` the samples of `n` steps whose probed cells' values are `values`
    /// (step-major).
    pub(super) fn append<T: Real>(&self, values: &[T], n: usize, traces: &mut [Vec<f64>]) {
        let cells = self.z.len();
        for s in 0..n {
            let mut samples = vec![0.0; traces.len()];
            for &(r, j, w) in &self.taps {
                samples[r] += w * values[s * cells + j].to_f64().unwrap_or(f64::NAN);
            }
            for (trace, v) in traces.iter_mut().zip(samples) {
                trace.push(v);
            }
        }
    }
}

/// The kernels' `meta` list for `field` with the one-step tiles starting at `origin` (see
/// `kernels/wave.cu`).
pub(super) fn meta<T: Real>(
    field: &Wavefield<T>,
    probes: &ProbeMap,
    origin: [i64; 2],
) -> [i32; 14] {
    let inner = field.damping.inner;
    let tz = z_range(field.injections.iter().map(|t| t.cell[2]));
    let pz = z_range(field.probes.iter().map(|p| p.cell[2]));
    [
        inner[0][0] as i32,
        inner[0][1] as i32,
        inner[1][0] as i32,
        inner[1][1] as i32,
        inner[2][0] as i32,
        inner[2][1] as i32,
        field.injections.len() as i32,
        tz[0],
        tz[1],
        probes.z.len() as i32,
        pz[0],
        pz[1],
        origin[0] as i32,
        origin[1] as i32,
    ]
}

/// The source taps' cells, `x, y, z` each.
pub(super) fn tap_cells<T: Real>(field: &Wavefield<T>) -> Vec<i32> {
    field
        .injections
        .iter()
        .flat_map(|t| t.cell.map(|c| c as i32))
        .collect()
}

/// The damping profiles as the kernels read them: `η_x, η_y, η_z, g_x, g_y, g_z`.
pub(super) fn profiles<T: Real>(field: &Wavefield<T>) -> Vec<T> {
    let d = &field.damping;
    d.eta
        .iter()
        .chain(d.grad.iter())
        .flatten()
        .copied()
        .collect()
}

/// The sources' amplitudes for the `n` steps from the field's current step, step-major.
pub(super) fn amplitudes<T: Real>(field: &Wavefield<T>, n: usize) -> Vec<T> {
    (0..n)
        .flat_map(|s| {
            field
                .injections
                .iter()
                .map(move |t| field.injected(t, field.step + s))
        })
        .collect()
}

/// A wavefield's arrays on the device for one run.
pub(super) struct OnDevice<T> {
    u: Vec<CudaSlice<T>>,
    phi: Vec<CudaSlice<T>>,
    coef: CudaSlice<T>,
    damp: CudaSlice<T>,
    meta: CudaSlice<i32>,
    taps: CudaSlice<i32>,
    amp: CudaSlice<T>,
    pstart: CudaSlice<i32>,
    pz: CudaSlice<i32>,
    pout: CudaSlice<T>,
    pub(super) flag: CudaSlice<i32>,
    probes: ProbeMap,
    pub(super) at: Levels,
    dims: [usize; 3],
    pitch: usize,
    plane: usize,
    /// The planes of the inner box in z (`meta[4] .. meta[5]`).
    inner_z: Range<usize>,
    /// Where the one-step pass's tiles start in x and y (`meta[12]`, `meta[13]`).
    origin: [i64; 2],
    /// `1 + α·dt`, the denominator of the auxiliary field's update beyond `η` (a kernel
    /// argument, so that the kernels read it from the constant bank).
    one_leak: T,
}

/// The inclusive z range of `cells`, or an empty one.
fn z_range(cells: impl Iterator<Item = usize>) -> [i32; 2] {
    cells.fold([i32::MAX, -1], |[lo, hi], z| {
        [lo.min(z as i32), hi.max(z as i32)]
    })
}

/// Copies `data` to the device (at least one element, so that empty lists have a pointer).
fn upload<V: cudarc::driver::DeviceRepr + Clone + Default>(
    gpu: &Gpu,
    data: &[V],
) -> Result<CudaSlice<V>> {
    if data.is_empty() {
        return gpu.stream.clone_htod(&[V::default()]).map_err(gpu_err);
    }
    gpu.stream.clone_htod(data).map_err(gpu_err)
}

/// Device bytes a run needs besides its seven grids: the probe values and amplitudes of a
/// batch of `batch_steps` steps, the probe map and the profiles.
fn extra_bytes<T: Real>(field: &Wavefield<T>, batch_steps: usize) -> u64 {
    let [nx, ny, nz] = field.dims();
    let e = std::mem::size_of::<T>() as u64;
    let per_step = (field.probes.len() + field.injections.len()) as u64 * e;
    batch_steps as u64 * per_step + (nx * ny + 1) as u64 * 4 + 2 * (nx + ny + nz) as u64 * e + 4096
}

impl<T: Real> OnDevice<T> {
    /// Uploads `field` and the run's lists for batches of `batch_steps` steps, the tiles of a
    /// one-step pass of shape `one_step` placed by [`tile_origin`].
    pub(super) fn new(
        gpu: &Gpu,
        field: &Wavefield<T>,
        batch_steps: usize,
        one_step: Option<WaveShape>,
    ) -> Result<Self> {
        let dims = field.dims();
        let need = Footprint::grids(T::DTYPE, 7)
            .plus(extra_bytes(field, batch_steps))
            .at_least(field.kernel().smallest_side())
            .with_label("with the wave run's buffers on the GPU");
        ensure_memory(gpu, &need, dims, 0)?;
        let put = |g: &Grid<T>| gpu.stream.clone_htod(g.storage()).map_err(gpu_err);
        let u = vec![
            put(&field.u)?,
            put(&field.prev)?,
            put(&field.u)?,
            put(&field.prev)?,
        ];
        let phi = vec![put(&field.phi)?, put(&field.phi)?];
        let probes = ProbeMap::new(field);
        let r = field.kernel().radius();
        let origin = one_step.map_or([r as i64; 2], |s| {
            tile_origin(&s, r, dims, field.damping.inner)
        });
        let meta = meta(field, &probes, origin);
        let pout_len = (batch_steps * probes.z.len()).max(1);
        Ok(OnDevice {
            u,
            phi,
            coef: put(&field.coef)?,
            damp: upload(gpu, &profiles(field))?,
            meta: upload(gpu, &meta)?,
            taps: upload(gpu, &tap_cells(field))?,
            amp: upload(gpu, &[T::zero()])?,
            pstart: upload(gpu, &probes.start)?,
            pz: upload(gpu, &probes.z)?,
            pout: gpu.stream.alloc_zeros::<T>(pout_len).map_err(gpu_err)?,
            flag: gpu.stream.alloc_zeros::<i32>(1).map_err(gpu_err)?,
            probes,
            at: Levels {
                u: 0,
                prev: 1,
                phi: 0,
            },
            dims,
            pitch: field.u.pitch(),
            plane: field.u.plane_stride(),
            inner_z: meta[4] as usize..meta[5] as usize,
            origin,
            one_leak: T::one() + field.damping.leak,
        })
    }

    /// Uploads the sources' amplitudes for the `n` steps from the field's current step.
    fn set_amplitudes(&mut self, gpu: &Gpu, field: &Wavefield<T>, n: usize) -> Result<()> {
        let amp = amplitudes(field, n);
        self.amp = upload(gpu, &amp)?;
        Ok(())
    }

    /// Appends the receivers' samples of the batch's first `n` steps to the field's traces and
    /// counts the steps. A field with receivers but none of their cells (a rank's block away
    /// from them) appends zeros: every trace has a sample for every step.
    pub(super) fn record(&self, gpu: &Gpu, field: &mut Wavefield<T>, n: usize) -> Result<()> {
        let cells = self.probes.z.len();
        let mut values = vec![T::zero(); n * cells];
        if n > 0 && cells > 0 {
            let view = self.pout.slice(0..n * cells);
            gpu.stream
                .memcpy_dtoh(&view, &mut values)
                .map_err(gpu_err)?;
            gpu.stream.synchronize().map_err(gpu_err)?;
        }
        self.probes.append(&values, n, &mut field.traces);
        field.step += n;
        Ok(())
    }

    /// The buffers the next pass reads: both pressure levels and the auxiliary field.
    fn current(&mut self) -> Result<[&mut CudaSlice<T>; 3]> {
        let Levels { u, prev, phi } = self.at;
        let [cur, old] = self
            .u
            .get_disjoint_mut([u, prev])
            .map_err(|e| Error::Gpu(format!("the wave levels overlap: {e}")))?;
        Ok([cur, old, &mut self.phi[phi]])
    }

    /// Puts `field`'s levels back into the device buffers as [`OnDevice::new`] placed them:
    /// the input of a split run that traces a failure from its start.
    pub(super) fn reload(&mut self, gpu: &Gpu, field: &Wavefield<T>) -> Result<()> {
        let s = &gpu.stream;
        let levels = [&field.u, &field.prev, &field.u, &field.prev];
        for (buffer, level) in self.u.iter_mut().zip(levels) {
            s.memcpy_htod(level.storage(), buffer).map_err(gpu_err)?;
        }
        for buffer in &mut self.phi {
            s.memcpy_htod(field.phi.storage(), buffer)
                .map_err(gpu_err)?;
        }
        self.at = Levels {
            u: 0,
            prev: 1,
            phi: 0,
        };
        Ok(())
    }

    /// Copies the current state into `field`.
    pub(super) fn download(&self, gpu: &Gpu, field: &mut Wavefield<T>) -> Result<()> {
        let s = &gpu.stream;
        s.memcpy_dtoh(&self.u[self.at.u], field.u.storage_mut())
            .map_err(gpu_err)?;
        s.memcpy_dtoh(&self.u[self.at.prev], field.prev.storage_mut())
            .map_err(gpu_err)?;
        s.memcpy_dtoh(&self.phi[self.at.phi], field.phi.storage_mut())
            .map_err(gpu_err)?;
        s.synchronize().map_err(gpu_err)
    }

    /// Queues `l`, a launch of `kernel` from the current levels over its output planes; `s0` is
    /// the batch step of its first level. Leaves the levels where they are
    /// ([`OnDevice::move_on`] moves them after a pass's last launch).
    fn launch(
        &mut self,
        gpu: &Gpu,
        kernel: &Kernel,
        l: &PassLaunch,
        [s0, pass]: [usize; 2],
    ) -> Result<()> {
        let [nx, ny, _] = self.dims;
        let [out_u, out_prev] = self.at.free();
        let out_phi = 1 - self.at.phi;
        let (nx, ny, nz) = (nx as i32, ny as i32, self.dims[2] as i32);
        let (pitch, plane) = (self.pitch as i64, self.plane as i64);
        let [a0, a1, b0, b1] = l.planes.args();
        let (hz, s0, pass) = (l.hz as i32, s0 as i32, pass as i32);
        let mut args = gpu.stream.launch_builder(&kernel.function);
        args.arg(&self.u[self.at.u])
            .arg(&self.u[self.at.prev])
            .arg(&self.phi[self.at.phi])
            .arg(&self.coef)
            .arg(&self.damp)
            .arg(&self.meta)
            .arg(&self.taps)
            .arg(&self.amp)
            .arg(&self.pstart)
            .arg(&self.pz)
            .arg(&self.pout)
            .arg(&self.u[out_u])
            .arg(&self.u[out_prev])
            .arg(&self.phi[out_phi])
            .arg(&nx)
            .arg(&ny)
            .arg(&nz)
            .arg(&pitch)
            .arg(&plane)
            .arg(&a0)
            .arg(&a1)
            .arg(&b0)
            .arg(&b1)
            .arg(&hz)
            .arg(&s0)
            .arg(&pass)
            .arg(&self.flag)
            .arg(&self.one_leak);
        // SAFETY: the arguments match WAVE_PARAMS of wave_naive, wave_blocked and
        // wave_blocked_inner in type and order; every grid buffer holds the field's padded
        // layout; the taps, amplitudes and probe lists were sized from the field for this batch
        // (`amp`: the batch's steps times the taps; `pout`: the batch's steps times the probed
        // cells), and the kernels index them only below those counts, which `meta` carries. The
        // output buffers are distinct from the inputs (`Levels::free`, the other φ). The plane
        // ranges lie in the interior [R, nz - R) (`split_pass`, cut by `split_by`), and the
        // launch has one block row per z-chunk of them (`PassTerms::launches`).
        unsafe { args.launch(l.cfg) }.map_err(gpu_err)?;
        Ok(())
    }

    /// Moves the levels on after a pass's launches wrote the free buffers.
    fn move_on(&mut self, blocked: Option<&Blocked>) {
        let [out_u, out_prev] = self.at.free();
        // At dim_t 1 the blocked kernel, like the naive one, leaves the new u⁻ (the old u)
        // where it is.
        let prev = match blocked {
            Some(b) if b.terms.shape.dim_t > 1 => out_prev,
            _ => self.at.u,
        };
        self.at = Levels {
            u: out_u,
            prev,
            phi: 1 - self.at.phi,
        };
    }

    /// Queues one pass of `steps` steps (the blocked kernel `blocked`, else a naive step) after
    /// its halo exchange, as [`PassTerms::launches`] lists it: the mirrors of the rigid faces,
    /// the planes that need no halo (while the z halos travel, for a blocked pass without
    /// rigid faces), then the bands next to the halos; then moves the levels on. A one-step
    /// pass reads the older level and `φ` at its own cells only, so only `u` needs its halo.
    fn queue_pass(
        &mut self,
        gpu: &Gpu,
        (kernels, faces): (&Kernels, &WaveKernel),
        (blocked, steps): (Option<&Blocked>, usize),
        (s0, pass): (usize, usize),
        hooks: &mut dyn PassHooks<T>,
    ) -> Result<()> {
        let inner_z = self.inner_z.clone();
        let terms = PassTerms {
            kernel: faces,
            dims: self.dims,
            origin: self.origin,
            inner_z: &inner_z,
            blocked: blocked.map(|b| b.terms),
        };
        let with_halo = if steps == 1 { 1 } else { 3 };
        let in_flight = if terms.overlaps() {
            hooks.before_pass_beside(&mut self.current()?[..with_halo])?
        } else {
            hooks.before_pass(&mut self.current()?[..with_halo])?;
            InFlight::NONE
        };
        let (launches, before_halos) = terms.launches(in_flight)?;
        for (i, l) in launches.iter().enumerate() {
            if i == before_halos {
                hooks.halos_arrived()?;
            }
            let kernel = match (l.form, blocked) {
                (Form::Step, None) => Some(&kernels.naive),
                (Form::Step, Some(b)) => Some(&b.kernel),
                (Form::Inner, b) => b.and_then(|b| b.inner.as_ref()),
                (Form::Mirror { .. }, _) => kernels.mirror.as_ref(),
            };
            let kernel = kernel.ok_or_else(|| {
                Error::Gpu(format!("no kernel was compiled for a {:?} launch", l.form))
            })?;
            match l.form {
                Form::Mirror { axis, side } => self.mirror(gpu, kernel, l, [axis, side])?,
                _ => self.launch(gpu, kernel, l, [s0, pass])?,
            }
        }
        if launches.len() == before_halos {
            hooks.halos_arrived()?;
        }
        self.move_on(blocked);
        Ok(())
    }

    /// Queues `l`, the mirror launch of the rigid face on `side` of `axis`, into the boundary
    /// layer of the current `u` (faces across x first, then y, then z, as on the host:
    /// [`crate::wave::rigid::mirror_rigid_faces`]).
    fn mirror(
        &mut self,
        gpu: &Gpu,
        mirror: &Kernel,
        l: &PassLaunch,
        [axis, side]: [usize; 2],
    ) -> Result<()> {
        let [nx, ny, nz] = self.dims;
        let (pitch, plane) = (self.pitch as i64, self.plane as i64);
        let (n, axis, side) = ([nx as i32, ny as i32, nz as i32], axis as i32, side as i32);
        let mut args = gpu.stream.launch_builder(&mirror.function);
        args.arg(&mut self.u[self.at.u])
            .arg(&n[0])
            .arg(&n[1])
            .arg(&n[2])
            .arg(&pitch)
            .arg(&plane)
            .arg(&axis)
            .arg(&side);
        // SAFETY: the arguments match wave_mirror's parameters; the buffer holds the field's
        // padded layout of these dimensions and strides, and the kernel touches only cells of
        // it (the grid's dimensions are at least 3R along a rigid face's axis, checked with the
        // kernel).
        unsafe { args.launch(l.cfg) }.map_err(gpu_err)?;
        Ok(())
    }

    /// The failure of step `step`, whose output levels are `out`.
    pub(super) fn locate(&self, gpu: &Gpu, out: Levels, r: usize, step: usize) -> Result<Failure> {
        let mut grid = Grid::<T>::unchecked(self.dims)?;
        for buffer in [&self.u[out.u], &self.phi[out.phi]] {
            gpu.stream
                .memcpy_dtoh(buffer, grid.storage_mut())
                .map_err(gpu_err)?;
            gpu.stream.synchronize().map_err(gpu_err)?;
            let f = Failure::locate(&grid, r, step);
            if !f.value.is_nan() || !grid.get(f.cell[0], f.cell[1], f.cell[2]).is_finite() {
                return Ok(f);
            }
        }
        Ok(Failure {
            step,
            cell: [r; 3],
            value: f64::NAN,
        })
    }
}

/// Queues up to `most` passes from step `done` of `steps` (`dim_t` steps each with the blocked
/// kernels where `blocked` and the plan has them, else one naive step each), with the sources'
/// amplitudes from the field's step on, each after the exchange `hooks` makes: the passes'
/// steps, and the levels before each pass and after the last.
pub(super) fn queue_batch<T: Real>(
    gpu: &Gpu,
    (kernels, blocked): (&Kernels, bool),
    field: &Wavefield<T>,
    dev: &mut OnDevice<T>,
    [done, steps]: [usize; 2],
    most: usize,
    hooks: &mut dyn PassHooks<T>,
) -> Result<(Vec<usize>, Vec<Levels>)> {
    let dim_t = if blocked { kernels.dim_t() } else { 1 };
    let mut passes = Vec::new();
    let mut at = done;
    while at < steps && passes.len() < most {
        let n = dim_t.min(steps - at);
        passes.push(n);
        at += n;
    }
    dev.set_amplitudes(gpu, field, at - done)?;
    let mut inputs = Vec::with_capacity(passes.len() + 1);
    let mut s0 = 0;
    for (i, &n) in passes.iter().enumerate() {
        inputs.push(dev.at);
        let pass_kernel = match (blocked, n == dim_t) {
            (false, _) => None,
            (true, true) => kernels.full.as_ref(),
            (true, false) => kernels.short.as_ref(),
        };
        let of = (kernels, field.kernel());
        dev.queue_pass(gpu, of, (pass_kernel, n), (s0, i + 1), hooks)?;
        s0 += n;
    }
    inputs.push(dev.at);
    Ok((passes, inputs))
}
