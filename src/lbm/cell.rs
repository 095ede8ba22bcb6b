//! [`Cell`]: what a lattice node is (fluid, wall, moving wall, inlet, outlet), and how cells
//! are stored: one flag byte per node, `0` fluid, `1` wall, and `2 + k` for entry `k` of a small
//! table of boundary conditions with their prescribed values (so a lid, an inlet and an outlet
//! cost one byte per node, not a velocity per node).

use serde::{Deserialize, Serialize};

use super::model::MAX_SPEED;
use crate::{Error, Result};

/// The kind of a lattice node and its prescribed values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Cell {
    /// An ordinary fluid node: streaming and collision.
    Fluid,
    /// A solid node: populations that would stream out of it into a fluid node are replaced by
    /// the fluid node's own opposite population (half-way bounce-back: the wall sits half-way
    /// between the nodes). Its own populations are never read and never change.
    Wall,
    /// A solid node moving tangentially with `velocity` (a lid): bounce-back plus the momentum
    /// term `6 w_i ρ₀ (c_i · u_w)` with `ρ₀ = 1`.
    MovingWall {
        /// Wall velocity in lattice units.
        velocity: [f64; 3],
    },
    /// A velocity inlet: after streaming, the node is reset to the equilibrium of the prescribed
    /// `velocity` at the node's own (streamed) density.
    Inlet {
        /// Inflow velocity in lattice units.
        velocity: [f64; 3],
    },
    /// A pressure outlet: after streaming, the node is reset to the equilibrium of the prescribed
    /// `density` (pressure `p = ρ/3`) at the node's own (streamed) velocity.
    Outlet {
        /// Outflow density.
        density: f64,
    },
}

/// Flag of a fluid node.
pub(crate) const FLUID: u8 = 0;
/// Flag of a (resting) wall node.
pub(crate) const WALL: u8 = 1;
/// Flag of the first boundary-table entry.
pub(crate) const FIRST_ENTRY: u8 = 2;
/// Most distinct boundary conditions one lattice can hold at once (a condition no node uses
/// any more gives its place to a new one).
pub const MAX_BOUNDARY_CONDITIONS: usize = (u8::MAX - FIRST_ENTRY) as usize + 1;

impl Cell {
    /// True for nodes that do not hold fluid: walls and moving walls.
    pub fn is_wall(&self) -> bool {
        matches!(self, Cell::Wall | Cell::MovingWall { .. })
    }

    /// Checks the prescribed values: finite, speeds at most [`MAX_SPEED`] (Mach ≈ 0.35),
    /// densities positive. Too fast a wall or inlet is [`Error::Unstable`].
    pub fn validate(&self) -> Result<()> {
        match *self {
            Cell::Fluid | Cell::Wall => Ok(()),
            Cell::MovingWall { velocity } | Cell::Inlet { velocity } => {
                check_velocity(velocity, "boundary")
            }
            Cell::Outlet { density } => {
                if density.is_finite() && density > 0.0 {
                    Ok(())
                } else {
                    Err(Error::InvalidArgument(format!(
                        "outlet density {density} must be positive and finite"
                    )))
                }
            }
        }
    }

    /// The density and velocity this node's populations are set to when it becomes this kind.
    pub(crate) fn rest_state(&self) -> (f64, [f64; 3]) {
        match *self {
            Cell::Inlet { velocity } => (1.0, velocity),
            Cell::Outlet { density } => (density, [0.0; 3]),
            _ => (1.0, [0.0; 3]),
        }
    }
}

/// Rejects a non-finite velocity or one faster than [`MAX_SPEED`].
pub(crate) fn check_velocity(u: [f64; 3], what: &str) -> Result<()> {
    if u.iter().any(|v| !v.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "{what} velocity {u:?} is not finite"
        )));
    }
    let speed = (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt();
    if speed > MAX_SPEED {
        return Err(Error::Unstable(format!(
            "{what} velocity {u:?} has lattice speed {speed:.4} > {MAX_SPEED} (Mach {:.2} > {:.2}): \
             the scheme is inaccurate and unstable there; lower the velocity and refine the \
             lattice (or lower the viscosity) to keep the Reynolds number",
            speed * 3f64.sqrt(),
            MAX_SPEED * 3f64.sqrt()
        )));
    }
    Ok(())
}

/// The boundary conditions behind flags `2, 3, ...`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CellTable {
    entries: Vec<Cell>,
}

impl CellTable {
    /// The cell a flag stands for. Flags are only made by [`CellTable::flag_for`], so every
    /// flag is valid; an unknown one (a corrupt file) is caught when loading.
    pub(crate) fn cell(&self, flag: u8) -> Cell {
        match flag {
            FLUID => Cell::Fluid,
            WALL => Cell::Wall,
            f => self.entries[(f - FIRST_ENTRY) as usize],
        }
    }

    /// The flag for `cell`, adding a table entry if it is new. The cell must be valid.
    pub(crate) fn flag_for(&mut self, cell: Cell) -> Result<u8> {
        match cell {
            Cell::Fluid => return Ok(FLUID),
            Cell::Wall => return Ok(WALL),
            _ => {}
        }
        if let Some(k) = self.entries.iter().position(|&e| e == cell) {
            return Ok(FIRST_ENTRY + k as u8);
        }
        if self.entries.len() >= MAX_BOUNDARY_CONDITIONS {
            return Err(Error::InvalidArgument(format!(
                "a lattice holds at most {MAX_BOUNDARY_CONDITIONS} distinct moving-wall, inlet \
                 and outlet conditions at once"
            )));
        }
        self.entries.push(cell);
        Ok(FIRST_ENTRY + (self.entries.len() - 1) as u8)
    }

    /// Whether `cell` needs a new entry and the table has no room for one.
    pub(crate) fn is_full_for(&self, cell: Cell) -> bool {
        !matches!(cell, Cell::Fluid | Cell::Wall)
            && self.entries.len() >= MAX_BOUNDARY_CONDITIONS
            && !self.entries.contains(&cell)
    }

    /// Drops the entries no flag in `flags` uses and renumbers `flags` to match (the entries
    /// kept keep their order), so that conditions set and later replaced (a lid or an inlet
    /// ramped between runs) do not use up the table.
    pub(crate) fn compact(&mut self, flags: &mut [u8]) {
        let mut used = [false; 256];
        for &f in flags.iter() {
            used[f as usize] = true;
        }
        let unused = (0..self.entries.len()).any(|k| !used[FIRST_ENTRY as usize + k]);
        if !unused {
            return;
        }
        let mut renumber = [0u8; 256];
        let mut kept = Vec::new();
        for (k, &cell) in self.entries.iter().enumerate() {
            let old = FIRST_ENTRY as usize + k;
            if used[old] {
                // Fewer entries than before, so the new flag fits a byte.
                renumber[old] = (FIRST_ENTRY as usize + kept.len()) as u8;
                kept.push(cell);
            }
        }
        for f in flags.iter_mut().filter(|f| **f >= FIRST_ENTRY) {
            *f = renumber[*f as usize];
        }
        self.entries = kept;
    }

    /// Number of flags in use (`2 + entries`): every valid flag is below this.
    pub(crate) fn flag_count(&self) -> usize {
        FIRST_ENTRY as usize + self.entries.len()
    }

    /// The table entries, in flag order.
    pub(crate) fn entries(&self) -> &[Cell] {
        &self.entries
    }

    /// A table from stored entries (a checkpoint), validating each.
    pub(crate) fn from_entries(entries: Vec<Cell>) -> Result<CellTable> {
        if entries.len() > MAX_BOUNDARY_CONDITIONS {
            return Err(Error::InvalidArgument(format!(
                "{} boundary conditions stored, at most {MAX_BOUNDARY_CONDITIONS} allowed",
                entries.len()
            )));
        }
        for e in &entries {
            if matches!(e, Cell::Fluid | Cell::Wall) {
                return Err(Error::InvalidArgument(format!(
                    "boundary table entry {e:?} is not a boundary condition"
                )));
            }
            e.validate()?;
        }
        Ok(CellTable { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_and_deduplicate() {
        let mut t = CellTable::default();
        let lid = Cell::MovingWall {
            velocity: [0.1, 0.0, 0.0],
        };
        assert_eq!(t.flag_for(Cell::Fluid).unwrap(), FLUID);
        assert_eq!(t.flag_for(Cell::Wall).unwrap(), WALL);
        let a = t.flag_for(lid).unwrap();
        let b = t.flag_for(Cell::Outlet { density: 1.0 }).unwrap();
        assert_eq!((a, b), (2, 3));
        assert_eq!(t.flag_for(lid).unwrap(), a);
        assert_eq!(t.cell(a), lid);
        assert_eq!(t.cell(WALL), Cell::Wall);
        assert_eq!(t.flag_count(), 4);
    }

    /// Compaction drops the entries no flag uses, keeps the order of the rest and renumbers
    /// the flags so that each still names its condition.
    #[test]
    fn compaction_keeps_every_nodes_condition() {
        let mut t = CellTable::default();
        let outlet = |d: f64| Cell::Outlet { density: d };
        let flags_of = |t: &mut CellTable, ds: &[f64]| -> Vec<u8> {
            ds.iter().map(|&d| t.flag_for(outlet(d)).unwrap()).collect()
        };
        let [a, b, c, d] = flags_of(&mut t, &[1.0, 2.0, 3.0, 4.0])[..] else {
            unreachable!()
        };
        let mut flags = vec![FLUID, d, WALL, b, d, FLUID];
        let before: Vec<Cell> = flags.iter().map(|&f| t.cell(f)).collect();
        t.compact(&mut flags);
        assert_eq!(t.entries(), &[outlet(2.0), outlet(4.0)]);
        assert_eq!(flags, vec![FLUID, 3, WALL, 2, 3, FLUID]);
        let after: Vec<Cell> = flags.iter().map(|&f| t.cell(f)).collect();
        assert_eq!(after, before);
        assert!(a != c && t.flag_for(outlet(1.0)).unwrap() == 4);
    }

    #[test]
    fn table_is_bounded() {
        let mut t = CellTable::default();
        for k in 0..MAX_BOUNDARY_CONDITIONS {
            t.flag_for(Cell::Outlet {
                density: 1.0 + k as f64,
            })
            .unwrap();
        }
        assert!(t.flag_for(Cell::Outlet { density: 0.5 }).is_err());
        assert!(t.is_full_for(Cell::Outlet { density: 0.5 }));
        assert!(!t.is_full_for(Cell::Outlet { density: 1.0 }));
        assert!(!t.is_full_for(Cell::Wall));
    }

    #[test]
    fn fast_walls_are_unstable() {
        let fast = Cell::Inlet {
            velocity: [0.15, 0.15, 0.0],
        };
        assert!(matches!(fast.validate(), Err(Error::Unstable(_))));
        assert!(Cell::Inlet {
            velocity: [0.1, 0.1, 0.0]
        }
        .validate()
        .is_ok());
        assert!(Cell::Outlet { density: 0.0 }.validate().is_err());
        assert!(Cell::MovingWall {
            velocity: [f64::NAN, 0.0, 0.0]
        }
        .validate()
        .is_err());
    }
}
