//! [`DistributedLattice`]: one rank's block of a D3Q19 lattice split over MPI ranks, with its
//! halo of `dim_t` nodes. Periodic axes split over several ranks join the first and last
//! ranks; a split axis is closed in each rank's local lattice, whose halo faces may hold fluid.

use std::borrow::Cow;
use std::ops::Range;

use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};

use super::agree::{agreed, broadcast_json, common_step, start};
use super::exchange::{exchange_axis, populations, receive_all, send_all, FaceRegion, HaloRows};
use super::grid::{owned_local, whole_local};
use super::on_device::LatticeHalos;
use super::{Block, Decomposition};
use crate::gpu::lbm::LbmBuffers;
use crate::lbm::populations::ZCut;
use crate::lbm::{Lattice, Shared, Q};
use crate::{Error, Plan, Real, Result};

/// A D3Q19 lattice split over the ranks of an MPI communicator. Every rank holds one for the
/// same plan; constructors, [`crate::Solver::run`] and [`DistributedLattice::gather`] are
/// collective. A lattice in 16-bit storage runs on the ranks' GPUs: its codes travel with
/// it (scatter, gather and halo exchanges), so a split run continues from exactly the codes a
/// run in one process would.
pub struct DistributedLattice<T: Real> {
    pub(crate) comm: SimpleCommunicator,
    pub(crate) decomposition: Decomposition,
    pub(crate) block: Block,
    /// The rank's local lattice: its block and halos.
    pub(crate) local: Lattice<T>,
    /// The whole lattice's periodicity.
    pub(crate) periodic: [bool; 3],
    /// Steps advanced between halo exchanges.
    pub(crate) steps_per_exchange: usize,
    /// The exchange's send and receive buffers, kept between passes.
    pub(crate) buffers: Vec<Vec<T>>,
    /// The link and buffers of halo exchanges between GPUs, kept between runs on them.
    pub(crate) device: Option<LatticeHalos<T>>,
    /// The device copies of the local lattice, kept between runs on the GPU.
    pub(crate) device_lattice: Option<LbmBuffers<T>>,
}

impl<T: Real + Equivalence> DistributedLattice<T> {
    /// `whole`, which `root` holds (the other ranks pass `None`), split over the ranks of
    /// `comm` for `plan` (made for `whole`, e.g. with [`Plan::for_lattice`]). Collective.
    ///
    /// Errors, on every rank: a plan that is not for this lattice, ranks whose builds or
    /// plans differ, a rank count that cannot split the lattice into blocks
    /// thicker than the halo, a root that is not a rank or passes no lattice, and a block that
    /// does not fit in a rank's memory.
    pub fn scatter(
        comm: &impl Communicator,
        plan: &Plan,
        root: usize,
        whole: Option<&Lattice<T>>,
    ) -> Result<Self> {
        let comm = start(comm, plan, root)?;
        two_copies(plan)?;
        let me = comm.rank() as usize;
        let given = match whole {
            _ if me != root => Ok(None),
            None => Err(Error::InvalidArgument(
                "the root rank of a scatter must pass the lattice".into(),
            )),
            Some(w) => check_lattice(plan, w).map(|()| Some(w)),
        };
        let whole = agreed(&comm, given)?;
        let shared: Shared = broadcast_json(&comm, root, whole.map(Lattice::shared).as_ref())?;
        let mut lat = Self::empty(comm, plan, &shared)?;
        if let Some(whole) = whole {
            let codes = codes_of(whole);
            for r in 0..lat.decomposition.ranks() {
                let block = lat.decomposition.block(r);
                let (flags, pops) = parts_of(whole, &block);
                let region = whole_local(&block);
                let global = |y, z| (block.global(0, y), block.global(1, z));
                let codes = codes.as_ref().map(|c| code_rows(whole, c, &region, global));
                if r == me {
                    write_rows(&mut lat.local, &region, &flags, &pops);
                    if let Some(codes) = codes {
                        write_code_rows(&mut lat.local, &region, &codes);
                    }
                } else {
                    let to = lat.comm.process_at_rank(r as i32);
                    send_all(&to, &flags);
                    send_all(&to, &pops);
                    if let Some(codes) = codes {
                        send_all(&to, &codes);
                    }
                }
            }
        } else {
            let all = whole_local(&lat.block);
            let (mut flags, mut pops) = buffers_for(&lat.local, &all);
            let from = lat.comm.process_at_rank(root as i32);
            receive_all(&from, &mut flags);
            receive_all(&from, &mut pops);
            write_rows(&mut lat.local, &all, &flags, &pops);
            if shared.storage.is_16_bit() {
                let mut codes = vec![0u16; pops.len()];
                receive_all(&from, &mut codes);
                write_code_rows(&mut lat.local, &all, &codes);
            }
        }
        Ok(lat)
    }

    /// The whole lattice on rank 0 (`None` elsewhere): every rank sends the nodes it owns.
    /// Collective.
    ///
    /// Errors, on every rank: [`Error::InvalidArgument`] when the ranks' blocks hold different
    /// steps, which make no one lattice (a guard: a run, also a failed one, leaves every rank
    /// at one step).
    pub fn gather(&self) -> Result<Option<Lattice<T>>> {
        common_step(&self.comm, Some(self.local.steps()), "lattice")?;
        let owned = owned_local(&self.block);
        let (flags, pops) = read_rows(&self.local, &owned);
        let local_codes = codes_of(&self.local);
        let codes = local_codes
            .as_ref()
            .map(|c| code_rows(&self.local, c, &owned, |y, z| (y, z)));
        let root = self.comm.process_at_rank(0);
        let whole = if self.comm.rank() == 0 {
            let shared = Shared {
                dims: self.dims(),
                periodic: self.periodic,
                ..self.local.shared()
            };
            Lattice::part(&shared, shared.dims, self.periodic, [[false; 2]; 3]).map(Some)
        } else {
            Ok(None)
        };
        let Some(mut whole) = agreed(&self.comm, whole)? else {
            send_all(&root, &flags);
            send_all(&root, &pops);
            if let Some(codes) = codes {
                send_all(&root, &codes);
            }
            return Ok(None);
        };
        // Codes last: writing populations drops a lattice's codes.
        let mut all_codes = Vec::new();
        write_rows(&mut whole, &self.block.owned, &flags, &pops);
        all_codes.extend(codes.map(|c| (self.block.owned.clone(), c)));
        for r in 1..self.decomposition.ranks() {
            let region = self.decomposition.block(r).owned;
            let (mut flags, mut pops) = buffers_for(&whole, &region);
            let from = self.comm.process_at_rank(r as i32);
            receive_all(&from, &mut flags);
            receive_all(&from, &mut pops);
            write_rows(&mut whole, &region, &flags, &pops);
            if whole.storage().is_16_bit() {
                let mut codes = vec![0u16; pops.len()];
                receive_all(&from, &mut codes);
                all_codes.push((region, codes));
            }
        }
        for (region, codes) in &all_codes {
            write_code_rows(&mut whole, region, codes);
        }
        Ok(Some(whole))
    }

    /// A lattice of fluid at rest split for `plan`, sharing `shared`.
    fn empty(comm: SimpleCommunicator, plan: &Plan, shared: &Shared) -> Result<Self> {
        let steps = plan.dim_t().max(1);
        let [py, pz] = [shared.periodic[1], shared.periodic[2]];
        let decomposition =
            Decomposition::new(plan.dims(), comm.size() as usize, steps)?.with_periodic([py, pz]);
        let block = decomposition.block(comm.rank() as usize);
        let dims = block.local_dims(plan.dims()[0]);
        let periodic = local_periodic(shared.periodic, decomposition.procs);
        let local = Lattice::part(shared, dims, periodic, halo_faces(&block));
        let local = agreed(&comm, local)?;
        Ok(Self::assemble(comm, decomposition, local, shared.periodic))
    }

    /// The distributed lattice of this rank's `local` lattice in `decomposition`.
    pub(crate) fn assemble(
        comm: SimpleCommunicator,
        decomposition: Decomposition,
        local: Lattice<T>,
        periodic: [bool; 3],
    ) -> Self {
        DistributedLattice {
            block: decomposition.block(comm.rank() as usize),
            steps_per_exchange: decomposition.halo,
            comm,
            decomposition,
            local,
            periodic,
            buffers: Vec::new(),
            device: None,
            device_lattice: None,
        }
    }

    /// Refreshes the halo nodes' flags from the ranks that own them, y faces then z faces, as a
    /// pass's exchange does their populations. Collective.
    pub(crate) fn exchange_flags(&mut self) {
        let mut buffers = Vec::new();
        for axis in 0..2 {
            let (d, b) = (&self.decomposition, &self.block);
            let mut flags = FlagRows(&mut self.local);
            exchange_axis(&self.comm, d, b, axis, &mut flags, &mut buffers);
        }
    }
}

/// A local lattice's flag rows, for the exchange.
struct FlagRows<'a, T: Real>(&'a mut Lattice<T>);

impl<T: Real> HaloRows for FlagRows<'_, T> {
    type Elem = u8;
    /// Row by row over the face's region, z outer (the order both ranks of a face use).
    fn pack(&self, face: &FaceRegion, out: &mut Vec<u8>) {
        each_row(&face.region, |y, z| {
            out.extend_from_slice(self.0.flag_row(y, z))
        });
    }
    fn unpack(&mut self, face: &FaceRegion, data: &[u8]) {
        let mut rows = data.chunks_exact(self.0.dims()[0]);
        each_row(&face.region, |y, z| {
            let row = rows.next().expect("the data holds the face");
            self.0.flag_row_mut(y, z).copy_from_slice(row);
        });
    }
    fn len(&self, face: &FaceRegion) -> usize {
        face.region[0].len() * face.region[1].len() * self.0.dims()[0]
    }
}

super::accessors::split_accessors!(DistributedLattice, crate::lbm::Lattice<T>, "lattice");

impl<T: Real + Equivalence> HaloRows for Lattice<T> {
    type Elem = T;
    /// Layer by layer along the face's axis, population by population, rows across.
    fn pack(&self, face: &FaceRegion, out: &mut Vec<T>) {
        for_rows(face, |i, y, z| {
            out.extend_from_slice(self.population_row(i, y, z))
        });
    }
    fn unpack(&mut self, face: &FaceRegion, data: &[T]) {
        let nx = self.dims()[0];
        unpack_rows(face, data, nx, self, Lattice::population_row_mut);
    }
    fn len(&self, face: &FaceRegion) -> usize {
        rows_len(face, self.dims()[0])
    }
}

/// The populations cut at the z halos, for the exchange of the z faces beside a blocked pass:
/// packed and unpacked as a [`Lattice`]'s.
impl<T: Real + Equivalence> HaloRows for ZCut<'_, T> {
    type Elem = T;
    fn pack(&self, face: &FaceRegion, out: &mut Vec<T>) {
        for_rows(face, |i, y, z| out.extend_from_slice(self.row(i, y, z)));
    }
    fn unpack(&mut self, face: &FaceRegion, data: &[T]) {
        let nx = self.dims()[0];
        unpack_rows(face, data, nx, self, ZCut::row_mut);
    }
    fn len(&self, face: &FaceRegion) -> usize {
        rows_len(face, self.dims()[0])
    }
}

/// Writes `data`, rows of `nx` values in [`for_rows`]'s order, into the rows of `into` that
/// `row(into, i, y, z)` gives.
fn unpack_rows<X: ?Sized, T: Copy>(
    face: &FaceRegion,
    data: &[T],
    nx: usize,
    into: &mut X,
    row: impl for<'b> Fn(&'b mut X, usize, usize, usize) -> &'b mut [T],
) {
    let mut rows = data.chunks_exact(nx);
    for_rows(face, |i, y, z| {
        let from = rows.next().expect("the data holds the face");
        row(into, i, y, z).copy_from_slice(from);
    });
}

/// Values in `face`'s population rows of `nx` values.
fn rows_len(face: &FaceRegion, nx: usize) -> usize {
    let mut rows = 0;
    for_rows(face, |_, _, _| rows += 1);
    rows * nx
}

/// Calls `visit(i, y, z)` for every population row of `face` in the exchange's order.
fn for_rows(face: &FaceRegion, mut visit: impl FnMut(usize, usize, usize)) {
    let [ys, zs] = &face.region;
    let (layers, across) = if face.axis == 0 { (ys, zs) } else { (zs, ys) };
    for layer in layers.clone() {
        for i in populations(face, layer) {
            for other in across.clone() {
                let (y, z) = if face.axis == 0 {
                    (layer, other)
                } else {
                    (other, layer)
                };
                visit(i, y, z);
            }
        }
    }
}

/// The periodicity of a rank's local lattice: an axis split over several ranks is closed
/// locally, its ends being halos or the whole lattice's own closed faces.
pub(crate) fn local_periodic(periodic: [bool; 3], procs: [usize; 2]) -> [bool; 3] {
    [
        periodic[0],
        periodic[1] && procs[0] == 1,
        periodic[2] && procs[1] == 1,
    ]
}

/// The faces of a rank's local lattice (x, y, z; low, high) that are halos.
pub(crate) fn halo_faces(block: &Block) -> [[bool; 2]; 3] {
    [[0, 0], block.halos[0], block.halos[1]].map(|h| h.map(|d| d > 0))
}

/// Errors for a plan the user made in place: a distributed lattice runs the two-copy scheme
/// (also where the planner would keep one copy on a single GPU).
pub(crate) fn two_copies(plan: &Plan) -> Result<()> {
    if plan.in_place() && plan.overrides().in_place {
        return Err(Error::InvalidPlan(
            "a distributed lattice runs the two-copy scheme: the in-place (AA) kernels need the \
             faces of closed axes free of fluid, and a rank's halo faces hold fluid"
                .into(),
        ));
    }
    Ok(())
}

/// Checks that `plan` was made for `lat` and that `lat` can be split.
fn check_lattice<T: Real>(plan: &Plan, lat: &Lattice<T>) -> Result<()> {
    let kernel = crate::lbm::LbmKernel::of(lat);
    if plan.kernel().lbm() != Some(&kernel) || plan.dims() != lat.dims() {
        return Err(Error::PlanMismatch(format!(
            "the plan is for {} on {:?}, the lattice is {kernel} on {:?}: make the plan with \
             Plan::for_lattice",
            plan.kernel(),
            plan.dims(),
            lat.dims()
        )));
    }
    lat.validate()
}

/// The flag rows and population rows of `block`'s local lattice, taken from `whole` (wrapped
/// across periodic ends), in [`write_rows`]' order.
fn parts_of<T: Real>(whole: &Lattice<T>, block: &Block) -> (Vec<u8>, Vec<T>) {
    let region = whole_local(block);
    let (mut flags, mut pops) = (Vec::new(), Vec::new());
    each_row(&region, |y, z| {
        let (gy, gz) = (block.global(0, y), block.global(1, z));
        flags.extend_from_slice(whole.flag_row(gy, gz));
        for i in 0..Q {
            pops.extend_from_slice(whole.population_row(i, gy, gz));
        }
    });
    (flags, pops)
}

/// The flag and population rows of `lat` in `region`.
pub(crate) fn read_rows<T: Real>(
    lat: &Lattice<T>,
    region: &[Range<usize>; 2],
) -> (Vec<u8>, Vec<T>) {
    let (mut flags, mut pops) = (Vec::new(), Vec::new());
    each_row(region, |y, z| {
        flags.extend_from_slice(lat.flag_row(y, z));
        for i in 0..Q {
            pops.extend_from_slice(lat.population_row(i, y, z));
        }
    });
    (flags, pops)
}

/// Zeroed buffers for the flag and population rows of `region` of a lattice like `lat`.
fn buffers_for<T: Real>(lat: &Lattice<T>, region: &[Range<usize>; 2]) -> (Vec<u8>, Vec<T>) {
    let rows = region[0].len() * region[1].len();
    let nx = lat.dims()[0];
    (vec![0; rows * nx], vec![T::zero(); rows * nx * Q])
}

/// Writes flag and population rows (row by row: the flags, then the 19 populations) into
/// `region` of `lat`.
pub(crate) fn write_rows<T: Real>(
    lat: &mut Lattice<T>,
    region: &[Range<usize>; 2],
    flags: &[u8],
    pops: &[T],
) {
    let nx = lat.dims()[0];
    let (mut f, mut p) = (flags.chunks_exact(nx), pops.chunks_exact(nx));
    each_row(region, |y, z| {
        lat.flag_row_mut(y, z)
            .copy_from_slice(f.next().expect("the flags hold the region"));
        for i in 0..Q {
            lat.population_row_mut(i, y, z)
                .copy_from_slice(p.next().expect("the populations hold the region"));
        }
    });
}

/// The 16-bit codes a run of `lat` starts from (`None` in native storage): those it keeps
/// (borrowed), or its populations encoded, as the upload to a GPU takes them.
pub(super) fn codes_of<T: Real>(lat: &Lattice<T>) -> Option<Cow<'_, [u16]>> {
    let storage = lat.storage();
    storage.is_16_bit().then(|| match &lat.codes {
        Some(codes) => Cow::Borrowed(&codes[..]),
        None => Cow::Owned(lat.pop.encode(storage)),
    })
}

/// The codes of the population rows of `region` (in [`write_rows`]' order) from `codes`, laid
/// out as `lat`'s populations; `at` maps a row of the region to the row of `lat` it reads.
pub(super) fn code_rows<T: Real>(
    lat: &Lattice<T>,
    codes: &[u16],
    region: &[Range<usize>; 2],
    at: impl Fn(usize, usize) -> (usize, usize),
) -> Vec<u16> {
    let mut out = Vec::new();
    each_row(region, |y, z| {
        let (y, z) = at(y, z);
        for i in 0..Q {
            out.extend_from_slice(&codes[lat.code_row(i, y, z)]);
        }
    });
    out
}

/// Writes code rows (as [`code_rows`] orders them) into `region` of `lat`'s codes (zero
/// elsewhere where it had none). Call after the populations are written, which drops codes.
pub(super) fn write_code_rows<T: Real>(
    lat: &mut Lattice<T>,
    region: &[Range<usize>; 2],
    rows: &[u16],
) {
    let mut codes = lat
        .codes
        .take()
        .unwrap_or_else(|| vec![0; lat.pop.storage().len()]);
    let mut rows = rows.chunks_exact(lat.dims()[0]);
    each_row(region, |y, z| {
        for i in 0..Q {
            let row = rows.next().expect("the codes hold the region");
            codes[lat.code_row(i, y, z)].copy_from_slice(row);
        }
    });
    lat.codes = Some(codes);
}

/// Calls `visit(y, z)` for the rows of `region`, z outer.
fn each_row(region: &[Range<usize>; 2], mut visit: impl FnMut(usize, usize)) {
    for z in region[1].clone() {
        for y in region[0].clone() {
            visit(y, z);
        }
    }
}
