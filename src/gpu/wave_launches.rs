//! The launches of one wave pass, worked out without a device: which kernel each runs (the
//! pass's step kernel, the inner kernel of a one-step pass, or the mirror of a rigid face),
//! over which output planes, with which grid of blocks. The engine queues exactly this list,
//! and the host emulator (`wave_emulate`) runs it, so a wrong grid here fails the emulated
//! tests as it would fail on a device.

use std::ops::Range;

use cudarc::driver::LaunchConfig;

use super::launch_grid::{grid_words, launch_grid};
use super::wave_source::{WaveShape, NAIVE_BLOCK};
use super::zplanes::{split_pass, InFlight, ZPlanes};
use crate::wave::rigid::rigid_sides;
use crate::wave::WaveKernel;
use crate::{DType, Result};

/// What a blocked pass's launches take from its kernels: the shape, the shared memory a block
/// takes, and whether a one-step pass's inner tiles have a kernel of their own.
#[derive(Clone, Copy, Debug)]
pub(super) struct BlockedTerms {
    pub(super) shape: WaveShape,
    pub(super) shared: usize,
    pub(super) inner: bool,
}

impl BlockedTerms {
    /// The terms of `shape` at radius `r` in `dtype`: the inner kernel exists at one step per
    /// pass (see `wave_blocked_inner` in `kernels/wave.cu`).
    pub(super) fn of(shape: WaveShape, r: usize, dtype: DType) -> Self {
        BlockedTerms {
            shape,
            shared: shape.shared_bytes(r, dtype),
            inner: shape.dim_t == 1,
        }
    }
}

/// The kernel a launch runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    /// The pass's own kernel: the naive step, or the blocked pass (at one step per pass the
    /// layers' form, see [`PassTerms::launches`]).
    Step,
    /// The inner kernel of a one-step blocked pass.
    Inner,
    /// The mirror of the rigid face on `side` (0 low, 1 high) across `axis`.
    Mirror { axis: usize, side: usize },
}

/// One launch of a pass.
#[derive(Clone, Debug)]
pub(super) struct PassLaunch {
    pub(super) form: Form,
    /// Output planes (none for a mirror).
    pub(super) planes: ZPlanes,
    pub(super) cfg: LaunchConfig,
    /// Planes per z-chunk (0 for the naive kernel and the mirrors).
    pub(super) hz: usize,
}

/// What fixes a pass's launches besides the halos in flight.
#[derive(Clone, Copy)]
pub(super) struct PassTerms<'a> {
    pub(super) kernel: &'a WaveKernel,
    pub(super) dims: [usize; 3],
    /// Where the one-step tiles start (see [`super::wave_tiles::tile_origin`]).
    pub(super) origin: [i64; 2],
    /// The inner box's planes.
    pub(super) inner_z: &'a Range<usize>,
    /// The blocked pass's terms; `None` for a naive step.
    pub(super) blocked: Option<BlockedTerms>,
}

impl PassTerms<'_> {
    /// Whether the pass computes the planes that need no halo while the z halos travel: a
    /// blocked pass without rigid faces (the mirrors read the halos first).
    pub(super) fn overlaps(&self) -> bool {
        self.blocked.is_some() && !self.kernel.has_rigid_faces()
    }

    /// The pass's launches in the order they are queued, with `in_flight` the halo planes
    /// still travelling as it starts ([`InFlight::NONE`] unless [`PassTerms::overlaps`]), and
    /// how many of them go before the halos arrive: the mirrors of the rigid faces, then the
    /// planes that need no halo ([`split_pass`]), then the bands beside the halos. The planes
    /// of a one-step blocked pass go to its kernel in the layers' form, then to the inner
    /// kernel over the inner box's planes, so that no chunk straddles an end of the inner box.
    pub(super) fn launches(&self, in_flight: InFlight) -> Result<(Vec<PassLaunch>, usize)> {
        debug_assert!(self.overlaps() || in_flight == InFlight::NONE);
        let mut out = Vec::new();
        for (axis, side) in rigid_sides(self.kernel) {
            out.push(PassLaunch {
                form: Form::Mirror { axis, side },
                planes: ZPlanes::none(),
                cfg: mirror_config(axis, self.dims)?,
                hz: 0,
            });
        }
        let r = self.kernel.radius();
        let steps = self.blocked.map_or(1, |b| b.shape.dim_t);
        let (early, late) = split_pass(self.dims[2], r, r * steps, in_flight);
        self.forms(&early, &mut out)?;
        let before_halos = out.len();
        self.forms(&late, &mut out)?;
        Ok((out, before_halos))
    }

    /// Appends the launches over `planes` to `out`.
    fn forms(&self, planes: &ZPlanes, out: &mut Vec<PassLaunch>) -> Result<()> {
        if planes.is_empty() {
            return Ok(());
        }
        let (outside, middle) = match self.blocked {
            Some(b) if b.inner => planes.split_by(self.inner_z),
            _ => (vec![planes.clone()], Vec::new()),
        };
        let step = outside.iter().chain(&middle).map(|p| (Form::Step, p));
        for (form, p) in step.chain(middle.iter().map(|p| (Form::Inner, p))) {
            let r = self.kernel.radius();
            let (cfg, hz) = launch_config(self.blocked, r, self.dims, self.origin, p)?;
            out.push(PassLaunch {
                form,
                planes: p.clone(),
                cfg,
                hz,
            });
        }
        Ok(())
    }
}

/// A launch over the output planes `planes` of a `dims` grid at radius `r`, with its z-chunk
/// length: the naive kernel's (`blocked` None, 2D blocks of columns) or a blocked pass's (its
/// tiles from `origin`, a block row per z-chunk). [`crate::Error::InvalidPlan`] when the grid
/// of blocks exceeds CUDA's limits.
pub(super) fn launch_config(
    blocked: Option<BlockedTerms>,
    r: usize,
    dims: [usize; 3],
    origin: [i64; 2],
    planes: &ZPlanes,
) -> Result<(LaunchConfig, usize)> {
    let [nx, ny, _] = dims;
    let Some(b) = blocked else {
        let blocks = [nx.div_ceil(NAIVE_BLOCK[0]), ny.div_ceil(NAIVE_BLOCK[1]), 1];
        let cfg = LaunchConfig {
            grid_dim: launch_grid(blocks, || grid_words(dims))?,
            block_dim: (NAIVE_BLOCK[0] as u32, NAIVE_BLOCK[1] as u32, 1),
            shared_mem_bytes: 0,
        };
        return Ok((cfg, 0));
    };
    let hz = match b.shape.hz {
        0 => planes.a.len().max(planes.b.len()),
        hz => hz,
    };
    let g = b.shape.grid(r, dims, origin).unwrap_or([1; 3]);
    let cfg = LaunchConfig {
        grid_dim: launch_grid([g[0], g[1], planes.chunks(hz)], || grid_words(dims))?,
        block_dim: (b.shape.bx as u32, b.shape.by as u32, 1),
        shared_mem_bytes: b.shared as u32,
    };
    Ok((cfg, hz))
}

/// Checks, without a device, that the one-step launches of `kernel` on a `dims` grid keep to
/// CUDA's grid limits: gpu-naive's (which also replays a failed blocked pass) and the mirrors
/// of its rigid faces, which every GPU run takes.
pub(crate) fn check_naive_launches(kernel: &WaveKernel, dims: [usize; 3]) -> Result<()> {
    let inner_z = 0..0;
    let terms = PassTerms {
        kernel,
        dims,
        origin: [kernel.radius() as i64; 2],
        inner_z: &inner_z,
        blocked: None,
    };
    terms.launches(InFlight::NONE).map(|_| ())
}

/// The mirror launch of a rigid face across `axis` of a `dims` grid: a thread per cell of the
/// face in 32 x 8 blocks.
fn mirror_config(axis: usize, [nx, ny, nz]: [usize; 3]) -> Result<LaunchConfig> {
    let (na, nb) = match axis {
        0 => (ny, nz),
        1 => (nx, nz),
        _ => (nx, ny),
    };
    Ok(LaunchConfig {
        grid_dim: launch_grid([na.div_ceil(32), nb.div_ceil(8), 1], || {
            grid_words([nx, ny, nz])
        })?,
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wave::Face;
    use crate::Error;

    /// The naive wave launch takes `NAIVE_BLOCK[1]` rows a block along y: a grid one row past
    /// CUDA's 65,535 blocks is refused before anything is uploaded.
    #[test]
    fn wave_launches_past_cudas_grid_limits_are_refused() {
        let rows = NAIVE_BLOCK[1] * 65_535;
        let planes = ZPlanes::one(4..5);
        assert!(launch_config(None, 4, [9, rows, 9], [4, 4], &planes).is_ok());
        assert!(matches!(
            launch_config(None, 4, [9, rows + 1, 9], [4, 4], &planes),
            Err(Error::InvalidPlan(m)) if m.contains("along y")
        ));
    }

    /// A one-step blocked pass with a rigid face and a split run's halos in flight: the
    /// mirror first, then (no overlap with a rigid face) every plane at once; without the
    /// face, the planes that need no halo first, each range to the layers' form and the inner
    /// box's planes also to the inner kernel, none of their chunks straddling the inner box.
    #[test]
    fn a_one_step_pass_lists_its_mirrors_forms_and_bands() {
        let kernel = WaveKernel::new(10.0, 1e-3, 2500.0)
            .with_order(4)
            .with_pml(6);
        let dims = [40, 30, 40];
        let shape = WaveShape {
            dim_t: 1,
            bx: 8,
            by: 2,
            ry: 2,
            rx: 1,
            hz: 5,
        };
        let inner_z = 8..32;
        let blocked = Some(BlockedTerms::of(shape, 2, DType::F32));
        let rigid = kernel.clone().with_face(0, 1, Face::Rigid);
        let terms = PassTerms {
            kernel: &rigid,
            dims,
            origin: [2, 2],
            inner_z: &inner_z,
            blocked,
        };
        assert!(!terms.overlaps());
        let (all, early) = terms.launches(InFlight::NONE).unwrap();
        assert_eq!(all[0].form, Form::Mirror { axis: 0, side: 1 });
        assert_eq!(early, all.len());
        let terms = PassTerms {
            kernel: &kernel,
            ..terms
        };
        assert!(terms.overlaps());
        let (all, early) = terms.launches(InFlight { lo: 2, hi: 2 }).unwrap();
        let forms: Vec<(Form, ZPlanes)> = all.iter().map(|l| (l.form, l.planes.clone())).collect();
        let one = |f, r: Range<usize>| (f, ZPlanes::one(r));
        let two = |f, a, b| (f, ZPlanes { a, b });
        let want = [
            two(Form::Step, 4..8, 32..36),
            one(Form::Step, 8..32),
            one(Form::Inner, 8..32),
            two(Form::Step, 2..4, 36..38),
        ];
        assert_eq!(forms, want);
        assert_eq!(early, 3);
        // Chunks of 5 planes, counted per range of a launch.
        assert_eq!(all[0].cfg.grid_dim.2, 2);
        assert_eq!(all[1].cfg.grid_dim.2, 5);
        assert_eq!(all[3].cfg.grid_dim.2, 2);
    }
}
