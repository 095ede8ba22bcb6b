//! `State::advance` compiled once, in this crate, for both precisions.
//!
//! Rust shares no generic instances between crates in optimised builds: a `State` impl that
//! called the generic engines would compile every engine again, at every instruction-set level,
//! in each crate that calls [`Solver::run`] (each test, example and user crate, a minute or
//! more each). [`per_precision!`] instead gives each state type two non-generic entry points,
//! one for `f32` and one for `f64`, compiled here, and an `advance` that only picks one.

use std::any::Any;

use super::Solver;
use crate::{Result, RunReport};

/// A non-generic run of `steps` steps on one state type.
pub(super) type Advance<S> = fn(&mut Solver, &mut S, usize) -> Result<RunReport>;

/// Runs `state` through `single` when it is an `A` (the `f32` state) and through `double`
/// otherwise (the `f64` one: `Real` is sealed to the two).
pub(super) fn by_precision<X: Any, A: Any, B: Any>(
    solver: &mut Solver,
    state: &mut X,
    steps: usize,
    single: Advance<A>,
    double: Advance<B>,
) -> Result<RunReport> {
    let any: &mut dyn Any = state;
    if let Some(s) = any.downcast_mut::<A>() {
        return single(solver, s, steps);
    }
    match any.downcast_mut::<B>() {
        Some(s) => double(solver, s, steps),
        None => unreachable!("a Real state holds f32 or f64"),
    }
}

/// Implements [`State`](super::State) for `$state<T>` by the generic
/// `$run::<T>(solver, state, steps, $extra...)`, through two non-generic instances of it named
/// `$single` (`f32`) and `$double` (`f64`); the attributes given first (its doc) go on
/// `advance`. Prefixed with `split;`, the state is one split over MPI ranks
/// ([`State::SPLIT`](super::State::SPLIT)).
macro_rules! per_precision {
    (split; $($rest:tt)*) => {
        super::concrete::per_precision!(@with true; $($rest)*);
    };
    (@with $split:literal; $(#[$meta:meta])* $state:ident, $single:ident, $double:ident,
        $run:ident $(, $extra:expr)*) => {
        #[doc = concat!("`", stringify!($run), "` for `f32` states, compiled in this crate.")]
        #[inline(never)]
        fn $single(solver: &mut Solver, s: &mut $state<f32>, steps: usize) -> Result<RunReport> {
            $run(solver, s, steps $(, $extra)*)
        }

        #[doc = concat!("`", stringify!($run), "` for `f64` states, compiled in this crate.")]
        #[inline(never)]
        fn $double(solver: &mut Solver, s: &mut $state<f64>, steps: usize) -> Result<RunReport> {
            $run(solver, s, steps $(, $extra)*)
        }

        impl<T: Real> State for $state<T> {
            const SPLIT: bool = $split;
            $(#[$meta])*
            fn advance(solver: &mut Solver, state: &mut Self, steps: usize) -> Result<RunReport> {
                super::concrete::by_precision(solver, state, steps, $single, $double)
            }
        }
    };
    ($($rest:tt)*) => {
        super::concrete::per_precision!(@with false; $($rest)*);
    };
}
pub(super) use per_precision;
