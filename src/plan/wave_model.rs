//! The planner's model for the acoustic wave equation ([`crate::wave::WaveKernel`]): a
//! multi-array kernel. A naive step reads `u^n` (its `2R + 1` planes kept in cache), `u^{n−1}`
//! and `c = (v·dt)²`, and writes `u^{n+1}` (with its write-allocate read): `γ = 5E` bytes per
//! inner cell, plus `3E` for the auxiliary field `φ` (read, written) in the absorbing layers.
//! A blocked pass of `dim_t` steps reads `u`, `u^{n−1}`, `c` and `φ` once and writes `u`,
//! `u^{n−1}` and `φ` once, so its traffic per step is `(7E + layers·3E) / dim_t`; it recomputes
//! the halo cells of its units (κ) and keeps `2R + 1` planes of `u` and of `φ` per level in
//! rings that should stay in the core's private cache.

use super::candidate::Candidate;
use super::model::{balance, ModelInput};
use crate::engine::Engine;
use crate::wave::{Damping, WaveKernel};

/// Largest `dim_t` the wave planner considers.
pub(crate) const WAVE_MAX_DIM_T: usize = 6;

/// How much of a core's private cache its rings may take: more than all of it, as measured
/// (the row kernel is bound by its loads, and a taller box recomputes less halo). On the
/// 2-core AMD EPYC Zen 5
/// (1 MiB L2 per core, order 8 `f32` 256³, `dim_t` 2, 20 steps): boxes of 248×16 cells (rings
/// 0.42 MiB) ran 1,004 MUPS, 248×32 (0.70 MiB) 1,138, 248×64 (1.27 MiB) 1,158.
const RING_SHARE: f64 = 1.5;

/// Fewest rows in y a unit's box has (shorter boxes recompute mostly halo).
const MIN_TILE_ROWS: usize = 8;

/// Work units per thread the planner aims for, so threads taking them one at a time finish
/// together.
const UNITS_PER_THREAD: usize = 3;

/// Share of the machine's sustained arithmetic rate the wave kernel reaches: each vector of
/// updates loads 6R + 3 rows through 4R + 5 row pointers, more than the registers hold (2-core
/// AMD EPYC Zen 5, order 8 f32 256³, one thread: 620-690 MUPS where the flop count at the
/// sustained rate gives 1,587).
const WAVE_COMPUTE_SHARE: f64 = 0.42;

impl ModelInput<'_> {
    pub(super) fn wave(&self) -> &WaveKernel {
        self.kernel
            .wave()
            .expect("the wave model runs for wave kernels")
    }

    /// The inner box (the cells outside every layer), `[lo, hi)` per axis.
    pub(super) fn wave_inner(&self) -> [[usize; 2]; 3] {
        Damping::<f64>::new(self.wave(), self.dims).inner
    }

    /// Share of the updated cells that lie in an absorbing layer.
    pub(super) fn wave_layer_share(&self) -> f64 {
        let box_ = self.wave_inner();
        let r = self.cost.radius;
        let share: f64 = (0..3)
            .map(|a| {
                let inner = box_[a][1].saturating_sub(box_[a][0]) as f64;
                inner / (self.dims[a] - 2 * r) as f64
            })
            .product();
        1.0 - share
    }

    /// The updated cells along each axis.
    fn wave_updated(&self) -> [usize; 3] {
        self.dims.map(|n| n - 2 * self.cost.radius)
    }

    /// One sweep per step.
    pub(crate) fn wave_naive(&self) -> Candidate {
        let e = self.cost.element_bytes as f64;
        let bytes = 5.0 * e + 3.0 * e * self.wave_layer_share();
        let [nx, ny, _] = self.dims;
        let planes = (2 * self.cost.radius + 1) * nx * ny * self.cost.element_bytes;
        let memory = self.memory_mups(bytes);
        let c = self.finish(Engine::Naive, (1, [nx, ny]), 1.0, planes, (nx, memory));
        self.wave_rated(c, 1.0)
    }

    /// `c` with the wave kernel's compute rate ([`WAVE_COMPUTE_SHARE`], times `speed` for
    /// rings spilled from the private cache), its bound and prediction.
    fn wave_rated(&self, mut c: Candidate, speed: f64) -> Candidate {
        c.compute_mups *= WAVE_COMPUTE_SHARE * speed;
        (c.predicted_mups, c.bound) = self.overlap(c.compute_mups, c.memory_mups, c.dim_t);
        c.predicted_mups /= c.kappa;
        c
    }

    /// The scalar reference engine.
    pub(crate) fn wave_reference(&self) -> Candidate {
        let mut c = self.wave_naive();
        c.engine = Engine::Reference;
        let scalar = self.machine.sustained_gops(self.dtype, 1, false) * 1e3
            / self.machine.lanes(self.dtype) as f64
            / self.cost.ops_per_update as f64;
        (c.compute_mups, c.predicted_mups) = (scalar, scalar.min(c.memory_mups));
        c
    }

    /// The blocked engine at `dim_t` on boxes of `tile` cells (x, y; the model's when `None`),
    /// or `None` when the tile is too small to hold any output. Its threads take the units
    /// (boxes times z chunks) one at a time, so the prediction carries their balance.
    pub(crate) fn wave_blocked(&self, dim_t: usize, tile: Option<[usize; 2]>) -> Option<Candidate> {
        let r = self.cost.radius;
        let [ux, uy, uz] = self.wave_updated();
        let tile = tile.unwrap_or_else(|| self.wave_tile(dim_t));
        let (tx, ty) = (tile[0].clamp(1, ux), tile[1].clamp(1, uy));
        if tile[0] == 0 || tile[1] == 0 {
            return None;
        }
        let halo = (r * (dim_t - 1)) as f64;
        let grow = |o: usize, all: usize| {
            if o >= all {
                1.0
            } else {
                (o as f64 + halo) / o as f64
            }
        };
        let depth = uz.div_ceil(self.wave_chunks(dim_t, [tx, ty]));
        let kappa = grow(tx, ux) * grow(ty, uy) * grow(depth, uz);
        let e = self.cost.element_bytes as f64;
        let bytes = (7.0 * e + 3.0 * e * self.wave_layer_share()) / dim_t as f64;
        let ring = self.wave_ring_bytes(dim_t, [tx, ty]);
        let memory = self.memory_mups(bytes);
        let c = self.finish(
            Engine::Blocked,
            (dim_t, [tx, ty]),
            kappa,
            ring,
            (tx, memory),
        );
        let spilled = ring as f64 > RING_SHARE * self.machine.private_cache_bytes() as f64;
        let speed = if spilled {
            self.machine.spill_speed()
        } else {
            1.0
        };
        let mut c = self.wave_rated(c, speed);
        // Each thread takes a unit at a time: fewer units than threads leave threads idle.
        let units = ux.div_ceil(tx) * uy.div_ceil(ty) * uz.div_ceil(depth);
        c.predicted_mups *= balance(units, self.threads);
        c.tile_threads = 1;
        Some(c)
    }

    /// Bytes of one unit's rings: levels `1 .. dim_t`, `2R + 1` planes each of `u` and of `φ`,
    /// level `k` holding the box grown by `R·(dim_t − k)` cells on each side.
    pub(crate) fn wave_ring_bytes(&self, dim_t: usize, [tx, ty]: [usize; 2]) -> usize {
        let r = self.cost.radius;
        let [nx, ny, _] = self.dims;
        (1..dim_t)
            .map(|k| {
                let g = 2 * r * (dim_t - k);
                (tx + g).min(nx) * (ty + g).min(ny)
            })
            .sum::<usize>()
            * 2
            * (2 * r + 1)
            * self.cost.element_bytes
    }

    /// The model's box: whole rows in x (no x halo), and the most rows in y whose rings take
    /// at most [`RING_SHARE`] of the private cache, at least [`MIN_TILE_ROWS`].
    pub(crate) fn wave_tile(&self, dim_t: usize) -> [usize; 2] {
        let [ux, uy, _] = self.wave_updated();
        let budget = RING_SHARE * self.machine.private_cache_bytes() as f64;
        let mut ty = MIN_TILE_ROWS.min(uy);
        while ty < uy && (self.wave_ring_bytes(dim_t, [ux, ty * 2]) as f64) <= budget {
            ty *= 2;
        }
        [ux, ty.min(uy)]
    }

    /// Chunks z is cut into: enough units for [`UNITS_PER_THREAD`] per thread, none shorter
    /// than four times the halo.
    pub(crate) fn wave_chunks(&self, dim_t: usize, [tx, ty]: [usize; 2]) -> usize {
        let [ux, uy, uz] = self.wave_updated();
        let boxes = ux.div_ceil(tx.max(1)) * uy.div_ceil(ty.max(1));
        let want = (self.threads * UNITS_PER_THREAD).div_ceil(boxes.max(1));
        let shortest = (4 * self.cost.radius * dim_t).max(1);
        want.clamp(1, (uz / shortest).max(1))
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::{Machine, PlanBuilder};
    use crate::wave::WaveKernel;
    use crate::{DType, Engine};

    /// Threads take a blocked pass's units one at a time, so units fewer than the threads
    /// leave some idle. At 64³ on the paper's 4-core machine the model's box at `dim_t` 2 holds
    /// every updated column and z is too short to cut: one unit, so four threads are rated as
    /// one, where counting every thread busy would rate them near four times as fast.
    #[test]
    fn a_pass_of_fewer_units_than_threads_is_rated_by_the_threads_it_keeps_busy() {
        let kernel = WaveKernel::new(10.0, 1e-3, 3000.0)
            .with_order(8)
            .with_pml(8);
        let plan = |threads: usize| {
            PlanBuilder::new(kernel.clone(), DType::F32, [64; 3])
                .machine(Machine::paper_core_i7())
                .engine(Engine::Blocked)
                .dim_t(2)
                .threads(threads)
                .build()
                .expect("a plan")
        };
        let (one, four) = (plan(1), plan(4));
        assert_eq!((four.tile(), four.z_chunks()), ([56, 56], 1));
        let ratio = four.predicted_mups() / one.predicted_mups();
        assert!(
            (0.9..=1.1).contains(&ratio),
            "four threads rated {ratio:.2}x one"
        );
    }
}
