//! A wavefield in parts, for splitting one over MPI ranks: what every part shares (kernel,
//! sources, receivers, step, absorbing profiles) as one serialisable value, a part made from
//! it on given cells of the whole grid, and the whole made again from gathered grids.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::field::Wavefield;
use super::points::{taps, Tap};
use super::profile::Damping;
use super::{Receiver, Source, WaveKernel};
use crate::{Grid, Real, Result};

/// What every part of a wavefield shares.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Shared {
    pub(crate) kernel: WaveKernel,
    /// The whole grid's dimensions.
    pub(crate) dims: [usize; 3],
    pub(crate) sources: Vec<Source>,
    pub(crate) receivers: Vec<Receiver>,
    pub(crate) step: usize,
}

/// Where a part lies: for each axis the whole grid's index of each local index, and the local
/// ranges of the cells the part owns (it records its receivers' taps there only).
pub(crate) struct Cells<'a> {
    pub(crate) global: [&'a [usize]; 3],
    pub(crate) owned: [Range<usize>; 3],
}

impl<T: Real> Wavefield<T> {
    /// What the parts of this wavefield share.
    pub(crate) fn shared(&self) -> Shared {
        Shared {
            kernel: self.kernel().clone(),
            dims: self.dims(),
            sources: self.sources().to_vec(),
            receivers: self.receivers().to_vec(),
            step: self.step,
        }
    }

    /// A part (zero grids until written) on `cells` of the whole grid, whose absorbing
    /// profiles are `damping`'s (the whole grid's) there. It injects every source tap inside
    /// it, halo included, and records the taps of its owned cells: its traces are partial
    /// sums, one value per receiver per step from now on, which add up over the parts.
    pub(crate) fn part(shared: &Shared, damping: &Damping<T>, cells: &Cells<'_>) -> Result<Self> {
        let dims: [usize; 3] = std::array::from_fn(|a| cells.global[a].len());
        let local = |c: [usize; 3]| -> Option<[usize; 3]> {
            let mut l = [0; 3];
            for a in 0..3 {
                l[a] = cells.global[a].iter().position(|&g| g == c[a])?;
            }
            Some(l)
        };
        let (injections, probes) = whole_taps(shared)?;
        let injections = injections
            .into_iter()
            .filter_map(|t| {
                Some(Tap {
                    cell: local(t.cell)?,
                    ..t
                })
            })
            .collect();
        let owned = |l: [usize; 3]| (0..3).all(|a| cells.owned[a].contains(&l[a]));
        let probes = probes
            .into_iter()
            .filter_map(|t| {
                Some(Tap {
                    cell: local(t.cell).filter(|&l| owned(l))?,
                    ..t
                })
            })
            .collect();
        let r = shared.kernel.radius();
        Ok(Wavefield::from_parts(
            shared,
            [0; 4]
                .map(|_| Grid::unchecked(dims))
                .into_iter()
                .collect::<Result<Vec<_>>>()?,
            damping.part(cells.global, r),
            injections,
            probes,
            vec![Vec::new(); shared.receivers.len()],
        ))
    }

    /// The whole wavefield from its gathered grids `[u, previous, coefficient, auxiliary]`,
    /// `damping` and `traces`.
    pub(crate) fn whole(
        shared: &Shared,
        grids: Vec<Grid<T>>,
        damping: Damping<T>,
        traces: Vec<Vec<f64>>,
    ) -> Result<Self> {
        let (injections, probes) = whole_taps(shared)?;
        Ok(Wavefield::from_parts(
            shared, grids, damping, injections, probes, traces,
        ))
    }

    /// The grids `[u, previous, coefficient, auxiliary]`.
    pub(crate) fn grids(&self) -> [&Grid<T>; 4] {
        [&self.u, &self.prev, &self.coef, &self.phi]
    }

    /// The grids `[u, previous, coefficient, auxiliary]`, to write.
    pub(crate) fn grids_mut(&mut self) -> [&mut Grid<T>; 4] {
        [&mut self.u, &mut self.prev, &mut self.coef, &mut self.phi]
    }
}

/// The source and receiver taps on the whole grid.
fn whole_taps(shared: &Shared) -> Result<(Vec<Tap>, Vec<Tap>)> {
    let k = &shared.kernel;
    let [hx, hy, hz] = k.spacing;
    let scale = k.dt * k.dt / (hx * hy * hz);
    let (mut injections, mut probes) = (Vec::new(), Vec::new());
    for (i, s) in shared.sources.iter().enumerate() {
        let t = taps(
            i,
            "source",
            s.position,
            k.spacing,
            shared.dims,
            k.radius(),
            scale,
        )?;
        injections.extend(t);
    }
    for (i, rec) in shared.receivers.iter().enumerate() {
        let t = taps(
            i,
            "receiver",
            rec.position,
            k.spacing,
            shared.dims,
            k.radius(),
            1.0,
        )?;
        probes.extend(t);
    }
    Ok((injections, probes))
}
