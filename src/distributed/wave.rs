//! [`DistributedWavefield`]: one rank's block of a seismic wavefield split over MPI ranks,
//! with a halo of `R · dim_t` cells: both pressure levels and the absorbing layers' auxiliary
//! field travel in each exchange before a pass of several steps, `u` alone before a one-step
//! pass, the model's coefficient once. Sources are injected by every rank whose local array
//! holds their cells; a receiver is recorded by the ranks that own its cells, as partial sums
//! that the gather adds up.

use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;

use super::agree::{agreed, broadcast_json, common_step, start};
use super::grid::{gather_rows, scatter_rows};
use super::on_device::DeviceHalos;
use super::{Block, Decomposition};
use crate::wave::parts::{Cells, Shared};
use crate::wave::{Damping, Wavefield};
use crate::{Error, Plan, Real, Result};

/// A wavefield split over the ranks of an MPI communicator. Every rank holds one for the same
/// plan; constructors, [`crate::Solver::run`] and [`DistributedWavefield::gather`] are
/// collective.
pub struct DistributedWavefield<T: Real> {
    pub(crate) comm: SimpleCommunicator,
    pub(crate) decomposition: Decomposition,
    pub(crate) block: Block,
    /// The rank's local wavefield: its block and halos.
    pub(crate) local: Wavefield<T>,
    /// What the parts share, and the whole grid's absorbing profiles (for the gather).
    pub(crate) shared: Shared,
    damping: Damping<T>,
    /// On rank 0, the traces recorded before the split; empty elsewhere.
    earlier: Vec<Vec<f64>>,
    /// Steps advanced between halo exchanges.
    pub(crate) steps_per_exchange: usize,
    /// The exchange's send and receive buffers, kept between passes.
    pub(crate) buffers: Vec<Vec<T>>,
    /// The link and buffers of halo exchanges between GPUs, kept between runs on them.
    pub(crate) device: Option<DeviceHalos<T>>,
}

impl<T: Real + Equivalence> DistributedWavefield<T> {
    /// `whole`, which `root` holds (the other ranks pass `None`), split over the ranks of
    /// `comm` for `plan` (made for it, e.g. with [`Plan::for_wavefield`]). Collective.
    ///
    /// Errors, on every rank: a plan that is not for this wavefield, ranks whose builds or
    /// plans differ, a rank count that cannot split the grid into blocks thicker than the halo,
    /// a root that is not a rank or passes no wavefield, and a block that does not fit in a
    /// rank's memory.
    pub fn scatter(
        comm: &impl Communicator,
        plan: &Plan,
        root: usize,
        whole: Option<&Wavefield<T>>,
    ) -> Result<Self> {
        let comm = start(comm, plan, root)?;
        let me = comm.rank() as usize;
        let given = match whole {
            _ if me != root => Ok(None),
            None => Err(Error::InvalidArgument(
                "the root rank of a scatter must pass the wavefield".into(),
            )),
            Some(w) if plan.kernel().wave() != Some(w.kernel()) || plan.dims() != w.dims() => {
                Err(Error::PlanMismatch(format!(
                    "the plan is for {} on {:?}, the wavefield is {} on {:?}: make the plan \
                     with Plan::for_wavefield",
                    plan.kernel(),
                    plan.dims(),
                    w.kernel(),
                    w.dims()
                )))
            }
            Some(w) => Ok(Some(w)),
        };
        let whole = agreed(&comm, given)?;
        let shared: Shared = broadcast_json(&comm, root, whole.map(Wavefield::shared).as_ref())?;
        let r = shared.kernel.radius();
        let damping = broadcast_damping(&comm, root, whole.map(|w| &w.damping), shared.dims, r);
        let steps = plan.dim_t().max(1);
        let halo = shared.kernel.radius() * steps;
        let decomposition = Decomposition::new(plan.dims(), comm.size() as usize, halo)?;
        let block = decomposition.block(me);
        let local = agreed(&comm, part(&shared, &damping, &block))?;
        // The traces recorded before the split, which rank 0's gathers start from, whichever
        // rank held the wavefield.
        let earlier: Vec<Vec<f64>> =
            broadcast_json(&comm, root, whole.map(|w| w.traces().to_vec()).as_ref())?;
        let mut field = DistributedWavefield {
            comm,
            decomposition,
            block,
            local,
            earlier: if me == 0 { earlier } else { Vec::new() },
            shared,
            damping,
            steps_per_exchange: steps,
            buffers: Vec::new(),
            device: None,
        };
        for g in 0..4 {
            let grid = whole.map(|w| w.grids()[g]);
            let (comm, d) = (&field.comm, &field.decomposition);
            scatter_rows(comm, d, root, grid, field.local.grids_mut()[g]);
        }
        Ok(field)
    }

    /// The whole wavefield on rank 0 (`None` elsewhere), its traces complete: those recorded
    /// before the split followed by the sums of the ranks' partial traces. Collective.
    ///
    /// Errors, on every rank: [`Error::InvalidArgument`] when the ranks hold different steps,
    /// whose levels and traces do not make one wavefield (a guard: a run, also a failed one,
    /// leaves every rank at one step).
    pub fn gather(&self) -> Result<Option<Wavefield<T>>> {
        common_step(&self.comm, Some(self.local.step() as u64), "wavefield")?;
        let mut grids = Vec::with_capacity(4);
        for g in 0..4 {
            let whole = gather_rows(&self.comm, &self.decomposition, self.local.grids()[g])?;
            grids.extend(whole);
        }
        let traces = self.summed_traces();
        if self.comm.rank() != 0 {
            return Ok(None);
        }
        let mut shared = self.shared.clone();
        shared.step = self.local.step();
        let damping = self.damping.clone();
        Wavefield::whole(&shared, grids, damping, traces).map(Some)
    }

    /// On rank 0 the traces so far (earlier ones and the ranks' partial sums added up); empty
    /// elsewhere. Collective.
    fn summed_traces(&self) -> Vec<Vec<f64>> {
        let mine = self.local.traces();
        let mut out = self.earlier.clone();
        out.resize(mine.len(), Vec::new());
        for (trace, partial) in out.iter_mut().zip(mine) {
            let mut sum = vec![0.0; partial.len()];
            let root = self.comm.process_at_rank(0);
            if self.comm.rank() == 0 {
                root.reduce_into_root(&partial[..], &mut sum[..], SystemOperation::sum());
                trace.extend(sum);
            } else {
                root.reduce_into(&partial[..], SystemOperation::sum());
            }
        }
        out
    }
}

super::accessors::split_accessors!(
    DistributedWavefield,
    crate::wave::Wavefield<T>,
    "wavefield (its traces are this rank's partial sums since the split)"
);

/// The rank's part of the wavefield `shared` describes, on `block`. Its kernel marks the faces
/// of the split axes free, but for a rigid face the block touches, which the rank mirrors: a
/// part's absorbing profiles are the whole grid's (the engines read those, never the faces),
/// and the faces' widths were checked against the whole grid, not against a block.
fn part<T: Real>(shared: &Shared, damping: &Damping<T>, block: &Block) -> Result<Wavefield<T>> {
    use crate::wave::Face;
    let mut shared = shared.clone();
    for a in 0..2 {
        if block.halos[a] != [0, 0] || block.owned[a].len() < block.extent[a] {
            for (side, face) in shared.kernel.faces[a + 1].iter_mut().enumerate() {
                let touches = if side == 0 {
                    block.owned[a].start == 0
                } else {
                    block.owned[a].end == block.extent[a]
                };
                if !(touches && *face == Face::Rigid) {
                    *face = Face::Free;
                }
            }
        }
    }
    let shared = &shared;
    let xs: Vec<usize> = (0..shared.dims[0]).collect();
    let [ys, zs]: [Vec<usize>; 2] = std::array::from_fn(|a| {
        (0..block.local_len(a))
            .map(|i| block.global(a, i))
            .collect()
    });
    let cells = Cells {
        global: [&xs, &ys, &zs],
        owned: [0..xs.len(), block.owned_local(0), block.owned_local(1)],
    };
    Wavefield::part(shared, damping, &cells)
}

/// `damping` (on `root`) on every rank, for a grid of `dims` and a stencil of radius `r`.
/// Collective.
fn broadcast_damping<T: Real + Equivalence>(
    comm: &SimpleCommunicator,
    root: usize,
    damping: Option<&Damping<T>>,
    dims: [usize; 3],
    r: usize,
) -> Damping<T> {
    let from = comm.process_at_rank(root as i32);
    let mut profiles: [Vec<T>; 6] = std::array::from_fn(|i| vec![T::zero(); dims[i % 3]]);
    let mut leak = [T::zero()];
    if let Some(d) = damping {
        for a in 0..3 {
            profiles[a].clone_from(&d.eta[a]);
            profiles[a + 3].clone_from(&d.grad[a]);
        }
        leak[0] = d.leak;
    }
    for p in &mut profiles {
        from.broadcast_into(&mut p[..]);
    }
    from.broadcast_into(&mut leak[..]);
    let [e0, e1, e2, g0, g1, g2] = profiles;
    let whole: [Vec<usize>; 3] = std::array::from_fn(|a| (0..dims[a]).collect());
    let full = Damping {
        eta: [e0, e1, e2],
        grad: [g0, g1, g2],
        inner: [[0, 0]; 3],
        leak: leak[0],
    };
    full.part([&whole[0], &whole[1], &whole[2]], r)
}
