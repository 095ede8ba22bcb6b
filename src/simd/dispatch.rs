//! The dispatch from a run-time [`Level`] to the code instantiated for it ([`with_isa`]), and
//! the level the engines use ([`Level::active`]).

use super::Base;
use crate::real::{Isa, Level};
use crate::tuning::Tuning;

impl Level {
    /// The level the engines use: the detected one, capped by the `isa` tuning knob.
    pub fn active() -> Level {
        let cap = Tuning::current().isa;
        cap.map_or(Level::detected(), |c| c.min(Level::detected()))
    }
}

/// A computation generic over the instruction-set level (Rust has no generic closures).
pub(crate) trait WithIsa {
    /// What the computation returns.
    type Output;
    /// Runs the computation with level `S`'s types.
    fn call<S: Isa>(self) -> Self::Output;
}

/// Runs `job` with the types of `level`, or of the highest level below it that this CPU has
/// (a plan made on another machine never runs instructions this one lacks).
pub(crate) fn with_isa<J: WithIsa>(level: Level, job: J) -> J::Output {
    match level.min(Level::detected()) {
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => job.call::<super::Avx512>(),
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => job.call::<super::Avx2>(),
        _ => job.call::<Base>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::real::{FlowLane, OneLane, Real, SimdVec};
    use crate::DType;

    /// Every level's tag names the types `with_isa` picks for it, up to the detected level.
    #[test]
    fn dispatch_picks_the_level_asked_for_up_to_the_detected_one() {
        struct Tag;
        impl WithIsa for Tag {
            type Output = (Level, usize);
            fn call<S: Isa>(self) -> (Level, usize) {
                (S::LEVEL, <S::F32 as super::super::SimdVec>::LANES)
            }
        }
        for level in Level::ALL {
            let (got, lanes) = with_isa(level, Tag);
            assert_eq!(got, level.min(Level::detected()));
            assert_eq!(lanes, got.lanes(DType::F32));
        }
    }

    /// Each level's vector operations agree lane by lane with its one-lane type's, at every
    /// level this CPU runs (inside the level's entry, as the engines run them).
    #[test]
    fn vector_operations_match_the_one_lane_type() {
        struct Check;
        impl WithIsa for Check {
            type Output = ();
            fn call<S: Isa>(self) {
                // SAFETY: with_isa picked a level the CPU has.
                unsafe { S::enter(check::<S::F32, S::One32>) };
                // SAFETY: as above.
                unsafe { S::enter(check::<S::F64, S::One64>) };
            }
        }
        for level in Level::ALL {
            with_isa(level, Check);
        }
    }

    fn check<V: SimdVec + FlowLane, O: OneLane<Scalar = V::Scalar>>() {
        let s = |x: f64| <V::Scalar as Real>::of(x);
        let w = V::WIDTH;
        let a: Vec<V::Scalar> = (0..w).map(|l| s(l as f64 * 0.37 - 1.1)).collect();
        let b: Vec<V::Scalar> = (0..w).map(|l| s(2.5 - l as f64 * 0.21)).collect();
        // SAFETY: a and b hold WIDTH scalars.
        let (va, vb) = unsafe { (V::load(a.as_ptr()), V::load(b.as_ptr())) };
        let mut out = vec![s(0.0); w];
        type Op<O> = fn(O, O) -> O;
        let ops: [(V, Op<O>); 6] = [
            (va + vb, |x, y| x + y),
            (va - vb, |x, y| x - y),
            (va * vb, |x, y| x * y),
            (va / vb, |x, y| x / y),
            (va.mul_add(vb, va), |x, y| x.mul_add(y, x)),
            (-va, |x, _| -x),
        ];
        for (k, (v, f)) in ops.into_iter().enumerate() {
            // SAFETY: out holds WIDTH scalars.
            unsafe { v.put(out.as_mut_ptr()) };
            for l in 0..w {
                let want = f(O::splat(a[l]), O::splat(b[l])).get();
                assert!(out[l] == want, "op {k} lane {l}");
            }
        }
        let words: Vec<u32> = (0..w as u32).map(|l| 1 << (l % 5)).collect();
        // SAFETY: words holds WIDTH words.
        let links = unsafe { V::links(words.as_ptr()) };
        for i in 0..5 {
            let picked = V::select(V::bit(links, i), va, vb);
            // SAFETY: out holds WIDTH scalars.
            unsafe { picked.put(out.as_mut_ptr()) };
            for l in 0..w {
                let want = if l % 5 == i { a[l] } else { b[l] };
                assert!(out[l] == want, "bit {i} lane {l}");
            }
        }
        let even = V::select(V::mask(|l| l % 2 == 0), va, vb);
        // SAFETY: out holds WIDTH scalars.
        unsafe { even.put(out.as_mut_ptr()) };
        assert!((0..w).all(|l| out[l] == if l % 2 == 0 { a[l] } else { b[l] }));
        let total = a.iter().fold(s(0.0), |t, &x| t + x);
        // The lanes' sum in another order than this running one: each of the w - 1 additions
        // rounds by at most half an ulp of the running magnitude, so the two differ by less
        // than w ulps of the sum of the magnitudes.
        let magnitude = a.iter().fold(s(0.0), |t, &x| t + num_traits::Float::abs(x));
        let bound = magnitude * s(w as f64) * num_traits::Float::epsilon();
        assert!(num_traits::Float::abs(va.sum() - total) <= bound);
        check_window::<V>();
        for l in 0..w {
            let one = |x: f64| V::from_fn(|i| if i == l { s(x) } else { s(0.0) });
            assert!(!one(f64::NAN).no_nan(), "NaN in lane {l}");
            assert!(one(f64::INFINITY).no_nan(), "infinity in lane {l}");
        }
        assert!(V::splat(s(0.0)).no_nan());
    }

    /// `window` gives entry `k` the lanes at `p + k` for every count `n` up to one more than
    /// 16 lanes (the masked load's widest and, beyond it, the loads), read from a buffer that
    /// ends where the last of them does.
    fn check_window<V: SimdVec + FlowLane>() {
        const N: usize = 18;
        let w = V::WIDTH;
        for n in 1..=N {
            let data: Vec<V::Scalar> = (0..w + n - 1)
                .map(|i| <V::Scalar as Real>::of(i as f64 * 1.5 - 3.0))
                .collect();
            // SAFETY: data holds n − 1 + WIDTH scalars.
            let got = unsafe { V::window::<N>(data.as_ptr(), n) };
            let mut out = vec![<V::Scalar as Real>::of(0.0); w];
            for (k, v) in got.iter().enumerate().take(n) {
                // SAFETY: out holds WIDTH scalars.
                unsafe { v.put(out.as_mut_ptr()) };
                assert!(out[..] == data[k..k + w], "n {n} entry {k}");
            }
        }
    }
}
