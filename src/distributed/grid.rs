//! [`DistributedGrid`]: one rank's block of a grid split over MPI ranks, with its halo.

use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;

use std::ops::Range;

use super::agree::{agreed, common_step, start};
use super::exchange::{
    exchange_axis, exchange_slices, receive_all, send_all, FaceRegion, HaloRows, Waiting,
};
use super::on_device::DeviceHalos;
use super::{Block, Decomposition};
use crate::{Engine, Error, Grid, Plan, Real, Result};

/// A grid split over the ranks of an MPI communicator (see [`crate::distributed`]). Every
/// rank holds a `DistributedGrid` for the same plan; collective calls (constructors,
/// [`crate::Solver::run`], [`DistributedGrid::gather`]) must be made on every rank in the same
/// order.
pub struct DistributedGrid<T: Real> {
    pub(crate) comm: SimpleCommunicator,
    pub(crate) decomposition: Decomposition,
    pub(crate) block: Block,
    /// The rank's local array: its block and halos (local indices, see [`Block`]).
    pub(crate) local: Grid<T>,
    /// Steps advanced between halo exchanges.
    pub(crate) steps_per_exchange: usize,
    /// The exchange's send and receive buffers, kept between passes.
    pub(crate) buffers: Vec<Vec<T>>,
    /// The link and buffers of halo exchanges between GPUs, kept between runs on them.
    pub(crate) device: Option<DeviceHalos<T>>,
    /// Steps the local array has advanced since the split (see [`DistributedGrid::steps`]).
    pub(crate) steps: Option<u64>,
}

impl<T: Real + Equivalence> DistributedGrid<T> {
    /// The grid `plan` was made for, split over the ranks of `comm`, each rank's cells (halo
    /// included) set to `f(x, y, z)` of their global coordinates. Collective.
    ///
    /// Errors, on every rank: a plan that is not for a stencil, ranks whose builds or plans
    /// differ (see [`common_plan`]), a rank count that cannot split the grid into blocks
    /// thicker than the halo, and a block that does not fit in a rank's memory (that rank's
    /// error; the others get [`Error::RankFailed`]).
    pub fn from_fn(
        comm: &impl Communicator,
        plan: &Plan,
        f: impl Fn(usize, usize, usize) -> T,
    ) -> Result<Self> {
        let comm = start(comm, plan, 0)?;
        let (decomposition, steps_per_exchange) = split(plan, comm.size() as usize)?;
        let block = decomposition.block(comm.rank() as usize);
        let dims = block.local_dims(plan.dims()[0]);
        let local = Grid::from_fn(dims, |x, y, z| f(x, block.global(0, y), block.global(1, z)));
        let local = agreed(&comm, local)?;
        Ok(DistributedGrid {
            comm,
            decomposition,
            block,
            local,
            steps_per_exchange,
            buffers: Vec::new(),
            device: None,
            steps: Some(0),
        })
    }

    /// The grid `plan` was made for, split over the ranks of `comm` from `whole`, which
    /// `root` holds (the other ranks pass `None`). Collective.
    ///
    /// Errors, on every rank: those of [`DistributedGrid::from_fn`], a root that is not a rank,
    /// and a root without the grid or with one of another size than the plan's.
    pub fn scatter(
        comm: &impl Communicator,
        plan: &Plan,
        root: usize,
        whole: Option<&Grid<T>>,
    ) -> Result<Self> {
        let comm = start(comm, plan, root)?;
        let mut grid = Self::from_fn(&comm, plan, |_, _, _| T::zero())?;
        let me = grid.comm.rank() as usize;
        // The root checks what it was given before any rank waits for its part.
        let given = match whole {
            _ if me != root => Ok(None),
            None => Err(Error::InvalidArgument(
                "the root rank of a scatter must pass the grid".into(),
            )),
            Some(w) if w.dims() != plan.dims() => Err(Error::PlanMismatch(format!(
                "the plan is for {:?}, the grid to scatter is {:?}",
                plan.dims(),
                w.dims()
            ))),
            Some(w) => Ok(Some(w)),
        };
        let whole = agreed(&grid.comm, given)?;
        scatter_rows(
            &grid.comm,
            &grid.decomposition,
            root,
            whole,
            &mut grid.local,
        );
        Ok(grid)
    }

    /// The whole grid on rank 0 (`None` elsewhere): every rank sends the cells it owns.
    /// Collective.
    ///
    /// Errors, on every rank: [`Error::InvalidArgument`] when the ranks' blocks hold different
    /// steps (see [`DistributedGrid::steps`]), which make no one grid.
    pub fn gather(&self) -> Result<Option<Grid<T>>> {
        common_step(&self.comm, self.steps, "grid")?;
        gather_rows(&self.comm, &self.decomposition, &self.local)
    }

    /// Time steps this rank's block has advanced since the grid was split. After a run that
    /// failed on some rank every block holds one step: after a non-finite value, which the
    /// ranks trace back together, the last finite step; after another error, the end of the
    /// last pass all ranks finished (on GPUs, the step the run started from, unless the error
    /// came as the ranks located the failing cell). `None` where the copy back from the GPU
    /// failed and left the block part written: ranks whose blocks differ cannot be gathered
    /// or run again.
    pub fn steps(&self) -> Option<u64> {
        self.steps
    }
}

/// Sets `local`, this rank's local array of `d`, from `whole`, which `root` holds (`None`
/// elsewhere; the ranks have agreed that the root has it). Collective.
pub(crate) fn scatter_rows<T: Real + Equivalence>(
    comm: &SimpleCommunicator,
    d: &Decomposition,
    root: usize,
    whole: Option<&Grid<T>>,
    local: &mut Grid<T>,
) {
    let me = comm.rank() as usize;
    let all = whole_local(&d.block(me));
    if let Some(whole) = whole {
        for r in 0..d.ranks() {
            let data = pack_from_whole(whole, &d.block(r));
            if r == me {
                unpack(local, &all, &data);
            } else {
                send_all(&comm.process_at_rank(r as i32), &data);
            }
        }
    } else {
        let mut data = vec![T::zero(); region_len(local, &all)];
        receive_all(&comm.process_at_rank(root as i32), &mut data);
        unpack(local, &all, &data);
    }
}

/// The whole grid on rank 0 (`None` elsewhere) from every rank's owned cells of `local`, its
/// local array of `d`. Collective.
pub(crate) fn gather_rows<T: Real + Equivalence>(
    comm: &SimpleCommunicator,
    d: &Decomposition,
    local: &Grid<T>,
) -> Result<Option<Grid<T>>> {
    let block = d.block(comm.rank() as usize);
    let mine = pack(local, &owned_local(&block));
    let root = comm.process_at_rank(0);
    // Rank 0 allocates the whole grid before any rank sends.
    let whole = if comm.rank() == 0 {
        Grid::new(d.dims).map(Some)
    } else {
        Ok(None)
    };
    let Some(mut whole) = agreed(comm, whole)? else {
        send_all(&root, &mine);
        return Ok(None);
    };
    unpack(&mut whole, &block.owned, &mine);
    for r in 1..d.ranks() {
        let region = d.block(r).owned;
        let mut data = vec![T::zero(); region_len(&whole, &region)];
        receive_all(&comm.process_at_rank(r as i32), &mut data);
        unpack(&mut whole, &region, &data);
    }
    Ok(Some(whole))
}

/// Refreshes every halo cell of `grid`, this rank's local array of `d` (`block` its part),
/// from the rank that owns it: y faces packed (through `buffers`, kept between passes), then
/// z faces as whole planes straight from and into the array. Collective.
pub(crate) fn exchange_grid<T: Real + Equivalence>(
    comm: &SimpleCommunicator,
    d: &Decomposition,
    block: &Block,
    grid: &mut Grid<T>,
    buffers: &mut Vec<Vec<T>>,
) {
    exchange_axis(comm, d, block, 0, grid, buffers);
    let plane = grid.plane_stride();
    let (low, owned, high) = grid.planes_cut_mut(block.halos[1]);
    swap_z_planes(comm, d, plane, (low, owned, high), Waiting::Spin);
}

/// The z half of a grid's exchange, on a local array cut at its z halos (`low`, the owned
/// planes, `high`; planes `plane` elements long): the `d.halo` owned planes next to each face
/// that has a neighbour go to it, and its planes come back into the halo, waiting as `waiting`
/// says. A z face spans the whole local y extent, which the neighbours across z share: a run of
/// whole planes, contiguous and laid out alike on both ranks, so it travels straight from and
/// into the array. Collective among the neighbours.
pub(crate) fn swap_z_planes<T: Real + Equivalence>(
    comm: &SimpleCommunicator,
    d: &Decomposition,
    plane: usize,
    (low, owned, high): (&mut [T], &[T], &mut [T]),
    waiting: Waiting,
) {
    let me = comm.rank() as usize;
    let peers = [0, 1].map(|side| d.neighbour(me, 1, side));
    let (h, n) = (d.halo, owned.len());
    // Only a face with a neighbour sends: an unsplit z may hold fewer planes than the halo.
    let sends = [0, 1].map(|side| match (side, peers[side]) {
        (_, None) => &owned[..0],
        (0, Some(_)) => &owned[..h * plane],
        (_, Some(_)) => &owned[n - h * plane..],
    });
    exchange_slices(comm, peers, sends, [low, high], waiting);
}

impl<T: Real + Equivalence> HaloRows for Grid<T> {
    type Elem = T;
    fn pack(&self, face: &FaceRegion, out: &mut Vec<T>) {
        out.reserve(region_len(self, &face.region));
        for z in face.region[1].clone() {
            for y in face.region[0].clone() {
                out.extend_from_slice(self.row(y, z));
            }
        }
    }
    fn unpack(&mut self, face: &FaceRegion, data: &[T]) {
        unpack(self, &face.region, data);
    }
    fn len(&self, face: &FaceRegion) -> usize {
        region_len(self, &face.region)
    }
}

super::accessors::split_accessors!(DistributedGrid, crate::Grid<T>, "array");

/// `plan` with rank 0's engine and `dim_t` on every rank. Ranks plan on their own and may
/// measure the machine differently; a distributed grid needs one engine and one halo depth,
/// so a program that lets the planner choose passes its plan through this first. A rank whose
/// own choice differs rebuilds its plan with rank 0's as overrides; a `dim_t` the planner
/// chose whose halo would be too deep to split the grid over these ranks is lowered until it
/// splits. Collective.
///
/// Errors, on every rank: a rank's plan that cannot take rank 0's choices.
pub fn common_plan(comm: &impl Communicator, plan: Plan) -> Result<Plan> {
    let comm = comm.duplicate();
    let engine = Engine::ALL.iter().position(|&e| e == plan.engine());
    let mut choice = [
        engine.expect("every engine is listed") as u64,
        plan.dim_t() as u64,
    ];
    comm.process_at_rank(0).broadcast_into(&mut choice[..]);
    let (engine, chosen_dim_t) = (Engine::ALL[choice[0] as usize], choice[1] as usize);
    // A blocked plan whose halo (radius × dim_t) is too deep for this many ranks takes the
    // deepest dim_t that splits, unless the user fixed it.
    let radius = halo_radius(&plan);
    let ranks = comm.size() as usize;
    let splits = |t: usize| Decomposition::new(plan.dims(), ranks, radius * t).is_ok();
    let mut dim_t = chosen_dim_t;
    if engine.is_blocked() && !plan.overrides().dim_t {
        while dim_t > 1 && !splits(dim_t) {
            dim_t -= 1;
        }
    }
    let note = (dim_t < chosen_dim_t).then(|| {
        format!(
            "dim_t lowered from the planner's {chosen_dim_t} to {dim_t}: a halo of {} \
             (radius {radius} × dim_t) splits the grid over {ranks} ranks, a deeper one does not",
            crate::error::count(radius * dim_t, "cell")
        )
    });
    let outcome = if (engine, dim_t) == (plan.engine(), plan.dim_t()) {
        Ok(plan)
    } else {
        let rebuilt = plan.rebuild().engine(engine).dim_t(dim_t).build();
        rebuilt.map(|p| p.agreed_by_ranks(&plan, note))
    };
    agreed(&comm, outcome)
}

/// The dependency radius of one step of `plan`'s kernel: the stencil's, 1 for a lattice, the
/// wave equation's `order / 2`.
fn halo_radius(plan: &Plan) -> usize {
    match plan.kernel() {
        crate::Kernel::Lbm(_) => 1,
        crate::Kernel::Wave(w) => w.radius(),
        k => k.stencil().map_or(1, |s| s.radius()),
    }
}

/// The decomposition for `plan` over `ranks` and the steps between exchanges: the plan's
/// `dim_t` (at least 1), so the halo is the stencil radius times it.
pub(crate) fn split(plan: &Plan, ranks: usize) -> Result<(Decomposition, usize)> {
    let stencil = plan.kernel().stencil().ok_or_else(|| {
        Error::PlanMismatch(format!(
            "a distributed grid runs stencils; the plan is for {}",
            plan.kernel()
        ))
    })?;
    let steps = plan.dim_t().max(1);
    let decomposition = Decomposition::new(plan.dims(), ranks, stencil.radius() * steps)?;
    Ok((decomposition, steps))
}

/// The local y and z index ranges of a block's whole local array.
pub(crate) fn whole_local(block: &Block) -> [Range<usize>; 2] {
    [0..block.local_len(0), 0..block.local_len(1)]
}

/// The local y and z index ranges of the cells a block owns.
pub(crate) fn owned_local(block: &Block) -> [Range<usize>; 2] {
    [block.owned_local(0), block.owned_local(1)]
}

/// Cells of `grid` in the y and z index ranges `region`.
pub(crate) fn region_len<T: Real>(grid: &Grid<T>, region: &[Range<usize>; 2]) -> usize {
    grid.dims()[0] * region[0].len() * region[1].len()
}

/// The rows of `grid` in `region` (z outer, y inner).
pub(crate) fn pack<T: Real>(grid: &Grid<T>, region: &[Range<usize>; 2]) -> Vec<T> {
    let mut out = Vec::with_capacity(region_len(grid, region));
    for z in region[1].clone() {
        for y in region[0].clone() {
            out.extend_from_slice(grid.row(y, z));
        }
    }
    out
}

/// The rows of `whole` that `block`'s local array holds, in local order (as [`pack`] orders a
/// local array's), wrapped across periodic ends.
fn pack_from_whole<T: Real>(whole: &Grid<T>, block: &Block) -> Vec<T> {
    let region = whole_local(block);
    let mut out = Vec::with_capacity(region_len(whole, &region));
    for z in region[1].clone() {
        for y in region[0].clone() {
            out.extend_from_slice(whole.row(block.global(0, y), block.global(1, z)));
        }
    }
    out
}

/// Writes `data` (as [`pack`] orders it) into the rows of `grid` in `region`.
pub(crate) fn unpack<T: Real>(grid: &mut Grid<T>, region: &[Range<usize>; 2], data: &[T]) {
    let nx = grid.dims()[0];
    let mut rows = data.chunks_exact(nx);
    for z in region[1].clone() {
        for y in region[0].clone() {
            let row = rows.next().expect("the data holds the region");
            grid.row_mut(y, z).copy_from_slice(row);
        }
    }
}
