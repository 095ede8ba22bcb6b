//! The fast engines' collision: TRT (BGK is TRT with ω⁻ = ω⁺) with Guo forcing, written once
//! over [`FlowLane`] and applied to one vector (or one scalar) of nodes whose streamed
//! populations are already gathered.
//!
//! For each opposite pair `(i, ī = i + 9)` the TRT update
//!
//! ```text
//! f*_i = f_i − ω⁺ (f⁺ − f⁺_eq) − ω⁻ (f⁻ − f⁻_eq) + (1 − ω⁺/2) S⁺_i + (1 − ω⁻/2) S⁻_i
//! ```
//!
//! (`f^± = (f_i ± f_ī)/2`, `f⁺_eq = w ρ (1 − 1.5 u² + 4.5 (c_i·u)²)`, `f⁻_eq = 3 w ρ c_i·u`,
//! Guo's source `S⁺_i = w [9 (c_i·u)(c_i·F) − 3 u·F]`, `S⁻_i = 3 w (c_i·F)`) is regrouped by
//! population:
//!
//! ```text
//! f*_i = α f_i + β f_ī + P + M,   f*_ī = α f_ī + β f_i + P − M
//! α = 1 − (ω⁺ + ω⁻)/2,   β = (ω⁻ − ω⁺)/2
//! P = ω⁺ f⁺_eq + (1 − ω⁺/2) S⁺_i,   M = ω⁻ f⁻_eq + (1 − ω⁻/2) S⁻_i
//! ```
//!
//! with `u = (Σ c_i f_i + F/2)/ρ`: two fused multiply-adds per population and the shared `P`
//! and `M`, instead of forming `f⁺` and `f⁻` and relaxing them. The moments are summed pair
//! by pair and the populations are reloaded for the relaxation, so only a dozen vectors are
//! live at a time (no register spills on AVX2). Operation count per node (no force, FMA = one
//! op): 143 arithmetic instructions, 49 of them FMAs (192 flops); a body force adds 18 and makes
//! 23 more of them FMAs (9 multiplications become FMAs); the finiteness check adds 18 additions.

use super::model::{VELOCITIES, WEIGHTS};
use super::physics::Physics;
use crate::simd::FlowLane;
use crate::Real;

/// Arithmetic instructions per node update of [`collide`] without force (FMA counted once).
pub(crate) const OPS: usize = 143;
/// Of which fused multiply-adds.
pub(crate) const FMAS: usize = 49;
/// Extra instructions with a body force, and how many more of all the instructions are FMAs.
pub(crate) const FORCE_OPS: (usize, usize) = (18, 23);

/// The per-node-kind constants of the collision, one lane type wide. Index `k` of per-weight
/// arrays: 0 rest, 1 axis, 2 diagonal; of per-pair arrays: the pair of direction `k + 1`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rates<L> {
    /// `1 − ω⁺`: what the rest population keeps of itself.
    keep: L,
    /// `α = 1 − (ω⁺ + ω⁻)/2`: what a moving population keeps of itself.
    alpha: L,
    /// `β = (ω⁻ − ω⁺)/2`: what it takes from its opposite.
    beta: L,
    /// `ω⁺ w`: the even equilibrium's isotropic part per unit `ρ (1 − 1.5 u²)`.
    wp_w: [L; 3],
    /// `4.5 ω⁺ w`: its `(c·u)²` part per unit `ρ`.
    wp_w45: [L; 3],
    /// `3 ω⁻ w`: the odd equilibrium per unit `ρ c·u`.
    wm3_w: [L; 3],
    half_force: [L; 3],
    force: [L; 3],
    /// `−3 (1 − ω⁺/2) w`: the even source's isotropic part per unit `u·F`.
    neg_even_w: [L; 3],
    /// `9 (1 − ω⁺/2) w (c·F)` per pair: the even source's part per unit `c·u`.
    even_c: [L; 9],
    /// `3 (1 − ω⁻/2) w (c·F)` per pair: the odd source.
    odd_c: [L; 9],
}

/// The constant `x` in every lane of `L`.
#[inline(always)]
fn c<L: FlowLane>(x: f64) -> L {
    L::splat(<L::Scalar as Real>::of(x))
}

/// Weight class of pair `k` (directions `k + 1` and `k + 10`): axis for the first three.
#[inline(always)]
fn class(k: usize) -> usize {
    if k < 3 {
        1
    } else {
        2
    }
}

impl<L: FlowLane> Rates<L> {
    /// The constants for relaxation rates `(ω⁺, ω⁻)` and body force `force`.
    pub(crate) fn new(wp: f64, wm: f64, force: [f64; 3]) -> Rates<L> {
        let w = [WEIGHTS[0], WEIGHTS[1], WEIGHTS[4]];
        let cf = |k: usize| -> f64 {
            let c = VELOCITIES[k + 1];
            (0..3).map(|a| c[a] as f64 * force[a]).sum()
        };
        let even = 1.0 - wp / 2.0;
        let odd = 1.0 - wm / 2.0;
        Rates {
            keep: c::<L>(1.0 - wp),
            alpha: c::<L>(1.0 - (wp + wm) / 2.0),
            beta: c::<L>((wm - wp) / 2.0),
            wp_w: w.map(|w| c::<L>(wp * w)),
            wp_w45: w.map(|w| c::<L>(4.5 * wp * w)),
            wm3_w: w.map(|w| c::<L>(3.0 * wm * w)),
            half_force: force.map(|f| c::<L>(f / 2.0)),
            force: force.map(c::<L>),
            neg_even_w: w.map(|w| c::<L>(-3.0 * even * w)),
            even_c: std::array::from_fn(|k| c::<L>(9.0 * even * w[class(k)] * cf(k))),
            odd_c: std::array::from_fn(|k| c::<L>(3.0 * odd * w[class(k)] * cf(k))),
        }
    }

    /// The constants of fluid nodes for `physics`.
    pub(crate) fn fluid(physics: &Physics) -> Rates<L> {
        let (wp, wm) = physics.rates();
        Rates::new(wp, wm, physics.force)
    }

    /// The constants of inlet and outlet nodes: ω⁺ = ω⁻ = 1 and no force, so the collision
    /// returns the equilibrium of the (overridden) density and velocity.
    pub(crate) fn boundary() -> Rates<L> {
        Rates::new(1.0, 1.0, [0.0; 3])
    }
}

impl<L: FlowLane> Rates<L> {
    /// `yes`'s constants in the lanes of `m`, `no`'s elsewhere (inlined into the caller's
    /// instruction-set level).
    #[inline(always)]
    pub(crate) fn select(m: L::Mask, yes: &Rates<L>, no: &Rates<L>) -> Rates<L> {
        let s = |a: L, b: L| L::select(m, a, b);
        let s3 = |a: [L; 3], b: [L; 3]| std::array::from_fn(|k| s(a[k], b[k]));
        let s9 = |a: [L; 9], b: [L; 9]| std::array::from_fn(|k| s(a[k], b[k]));
        Rates {
            keep: s(yes.keep, no.keep),
            alpha: s(yes.alpha, no.alpha),
            beta: s(yes.beta, no.beta),
            wp_w: s3(yes.wp_w, no.wp_w),
            wp_w45: s3(yes.wp_w45, no.wp_w45),
            wm3_w: s3(yes.wm3_w, no.wm3_w),
            half_force: s3(yes.half_force, no.half_force),
            force: s3(yes.force, no.force),
            neg_even_w: s3(yes.neg_even_w, no.neg_even_w),
            even_c: s9(yes.even_c, no.even_c),
            odd_c: s9(yes.odd_c, no.odd_c),
        }
    }
}

/// The density and velocity of a vector of nodes (phase 1 of the collision), kept between the
/// phases so the engines can compute the next vector's moments while relaxing this one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Moments<L> {
    rho: L,
    u: [L; 3],
}

/// Phase 1: density and velocity from the streamed populations `f(i)`. `adjust(ρ, u)` may
/// replace the density and velocity the equilibrium is built from (inlets and outlets); the
/// fast path passes the identity, which compiles away. `FORCED` adds half the body force to
/// the momentum.
#[inline(always)]
pub(crate) fn moments<L: FlowLane, const FORCED: bool>(
    f: impl Fn(usize) -> L,
    r: &Rates<L>,
    adjust: impl FnOnce(L, [L; 3]) -> (L, [L; 3]),
) -> Moments<L> {
    // Pair by pair (s = f_i + f_ī, d = f_i − f_ī). Pairs k = 0..9 are directions 1..=9:
    // x, y, z, (1,1,0), (1,-1,0), (1,0,1), (1,0,-1), (0,1,1), (0,1,-1).
    let s = |k: usize| f(k + 1) + f(k + 10);
    let d = |k: usize| f(k + 1) - f(k + 10);
    let (d0, d1, d2) = (d(0), d(1), d(2));
    let axis = (s(0) + s(1)) + s(2);
    let (s3, d3, s4, d4) = (s(3), d(3), s(4), d(4));
    let (xy, xy_p, xy_m) = (s3 + s4, d3 + d4, d3 - d4);
    let (s5, d5, s6, d6) = (s(5), d(5), s(6), d(6));
    let (xz, xz_p, xz_m) = (s5 + s6, d5 + d6, d5 - d6);
    let (s7, d7, s8, d8) = (s(7), d(7), s(8), d(8));
    let (yz, yz_p, yz_m) = (s7 + s8, d7 + d8, d7 - d8);
    let rho = f(0) + ((axis + xy) + (xz + yz));
    let mut j = [d0 + (xy_p + xz_p), d1 + (xy_m + yz_p), d2 + (xz_m + yz_m)];
    if FORCED {
        j = std::array::from_fn(|a| j[a] + r.half_force[a]);
    }
    let inv = L::splat(num_traits::One::one()) / rho;
    let (rho, u) = adjust(rho, j.map(|ja| ja * inv));
    Moments { rho, u }
}

/// Phase 2: relaxes each opposite pair of `f(i)` towards the equilibrium of `m` and hands
/// post-collision population `i` to `put(i, v)`. `f` is called again for every population,
/// so the fast path reloads from memory (L1) instead of keeping 19 vectors live. Returns the
/// sum of the outputs when `CHECK` (for the finiteness check), else `f(0)`.
#[inline(always)]
pub(crate) fn relax<L: FlowLane, const FORCED: bool, const CHECK: bool>(
    f: impl Fn(usize) -> L,
    m: &Moments<L>,
    r: &Rates<L>,
    mut put: impl FnMut(usize, L),
) -> L {
    let one = L::splat(num_traits::One::one());
    let [ux, uy, uz] = m.u;
    let usq = uz.mul_add(uz, uy.mul_add(uy, ux * ux));
    let rho_base = m.rho * usq.mul_add(L::splat(scalar(-1.5)), one);
    // Per weight class: the part of P every direction of the class shares.
    let mut even: [L; 3] = std::array::from_fn(|c| r.wp_w[c] * rho_base);
    if FORCED {
        let uf = uz.mul_add(r.force[2], uy.mul_add(r.force[1], ux * r.force[0]));
        even = std::array::from_fn(|c| uf.mul_add(r.neg_even_w[c], even[c]));
    }
    let f0 = f(0);
    let out0 = f0.mul_add(r.keep, even[0]);
    put(0, out0);
    let mut total = out0;
    let quad: [L; 3] = std::array::from_fn(|c| r.wp_w45[c] * m.rho);
    let odd: [L; 3] = std::array::from_fn(|c| r.wm3_w[c] * m.rho);
    let cu = [
        ux,
        uy,
        uz,
        ux + uy,
        ux - uy,
        ux + uz,
        ux - uz,
        uy + uz,
        uy - uz,
    ];
    for (k, &cuk) in cu.iter().enumerate() {
        let c = class(k);
        let (fi, fo) = (f(k + 1), f(k + 10));
        let mut p = (cuk * cuk).mul_add(quad[c], even[c]);
        let q = if FORCED {
            p = cuk.mul_add(r.even_c[k], p);
            cuk.mul_add(odd[c], r.odd_c[k])
        } else {
            odd[c] * cuk
        };
        let (plus, minus) = (p + q, p - q);
        let oi = fi.mul_add(r.alpha, fo.mul_add(r.beta, plus));
        let oo = fo.mul_add(r.alpha, fi.mul_add(r.beta, minus));
        put(k + 1, oi);
        put(k + 10, oo);
        if CHECK {
            total = total + (oi + oo);
        }
    }
    if CHECK {
        total
    } else {
        f0
    }
}

/// An `f64` literal as the lane's scalar.
#[inline(always)]
fn scalar<S: crate::Real>(v: f64) -> S {
    S::of(v)
}
