//! [`Physics`]: the collision operator (BGK or TRT) and the body force of a lattice, with the
//! checks that reject parameters for which the scheme is unstable or meaningless.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The collision operator.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Collision {
    /// Single relaxation time (Bhatnagar–Gross–Krook): every population relaxes towards the
    /// equilibrium at rate `1/tau`. Kinematic viscosity `ν = (tau − 1/2)/3`.
    Bgk {
        /// Relaxation time τ > 1/2.
        tau: f64,
    },
    /// Two relaxation times (Ginzburg): the symmetric part of each opposite pair relaxes at
    /// `ω⁺ = 1/tau` (sets the viscosity, as in BGK) and the antisymmetric part at `ω⁻`, chosen
    /// from the "magic" parameter `Λ = (1/ω⁺ − 1/2)(1/ω⁻ − 1/2)`. `Λ = 3/16` puts half-way
    /// bounce-back walls exactly half-way between nodes for Poiseuille flow, whatever τ;
    /// `Λ = 1/4` is the most stable choice.
    Trt {
        /// Relaxation time of the symmetric part, τ > 1/2.
        tau: f64,
        /// The magic parameter Λ > 0.
        magic: f64,
    },
}

/// Collision operator and body force of a lattice-Boltzmann simulation, in lattice units
/// (cell size 1, time step 1).
///
/// ```
/// use stencil35d::lbm::Physics;
/// let p = Physics::trt(0.8, 3.0 / 16.0).with_force([1e-6, 0.0, 0.0]);
/// assert!(p.validate().is_ok());
/// assert!((p.viscosity() - 0.1).abs() < 1e-12);
/// assert!(Physics::bgk(0.5).validate().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Physics {
    /// The collision operator.
    pub collision: Collision,
    /// A uniform body force density (per unit volume, lattice units) on every fluid cell,
    /// applied with Guo's second-order forcing scheme. Zero for none.
    pub force: [f64; 3],
}

/// The TRT magic parameter that makes half-way bounce-back exact for Poiseuille flow.
pub const MAGIC_POISEUILLE: f64 = 3.0 / 16.0;

impl Physics {
    /// BGK collision with relaxation time `tau`, no force.
    pub fn bgk(tau: f64) -> Physics {
        Physics {
            collision: Collision::Bgk { tau },
            force: [0.0; 3],
        }
    }

    /// TRT collision with relaxation time `tau` and magic parameter `magic`, no force.
    pub fn trt(tau: f64, magic: f64) -> Physics {
        Physics {
            collision: Collision::Trt { tau, magic },
            force: [0.0; 3],
        }
    }

    /// The relaxation time giving kinematic viscosity `nu`: `τ = 3ν + 1/2`.
    pub fn tau_for_viscosity(nu: f64) -> f64 {
        3.0 * nu + 0.5
    }

    /// The same physics with body force `force`.
    pub fn with_force(mut self, force: [f64; 3]) -> Physics {
        self.force = force;
        self
    }

    /// τ (the symmetric relaxation time for TRT).
    pub fn tau(&self) -> f64 {
        match self.collision {
            Collision::Bgk { tau } | Collision::Trt { tau, .. } => tau,
        }
    }

    /// Kinematic viscosity `ν = (τ − 1/2)/3` in lattice units.
    pub fn viscosity(&self) -> f64 {
        (self.tau() - 0.5) / 3.0
    }

    /// The relaxation rates `(ω⁺, ω⁻)` of the symmetric and antisymmetric parts (equal for BGK).
    pub fn rates(&self) -> (f64, f64) {
        match self.collision {
            Collision::Bgk { tau } => (1.0 / tau, 1.0 / tau),
            Collision::Trt { tau, magic } => (1.0 / tau, 1.0 / (magic / (tau - 0.5) + 0.5)),
        }
    }

    /// Whether a body force is set.
    pub fn has_force(&self) -> bool {
        self.force.iter().any(|&f| f != 0.0)
    }

    /// Rejects parameters for which the scheme is unstable or meaningless: τ ≤ 1/2 (zero or
    /// negative viscosity: the relaxation amplifies instead of damping), a non-positive or
    /// non-finite magic parameter, a non-finite force. All are [`Error::Unstable`].
    pub fn validate(&self) -> Result<()> {
        let tau = self.tau();
        if !tau.is_finite() || tau <= 0.5 {
            return Err(Error::Unstable(format!(
                "relaxation time τ = {tau} must be a finite number above 1/2 (τ = 3ν + 1/2; \
                 τ ≤ 1/2 means zero or negative viscosity and the relaxation diverges)"
            )));
        }
        if let Collision::Trt { magic, .. } = self.collision {
            if !magic.is_finite() || magic <= 0.0 {
                return Err(Error::Unstable(format!(
                    "TRT magic parameter Λ = {magic} must be a positive finite number \
                     (3/16 for exact bounce-back walls, 1/4 for the most stable choice)"
                )));
            }
        }
        if self.force.iter().any(|f| !f.is_finite()) {
            return Err(Error::Unstable(format!(
                "body force {:?} is not finite",
                self.force
            )));
        }
        Ok(())
    }
}

/// `v` to six decimals without trailing zeros: a τ computed as 3ν + 1/2 prints as 0.686, not
/// 0.6859999999999999.
fn short(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl std::fmt::Display for Physics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.collision {
            Collision::Bgk { tau } => write!(f, "BGK τ = {}", short(tau))?,
            Collision::Trt { tau, magic } => {
                write!(f, "TRT τ = {}, Λ = {}", short(tau), short(magic))?
            }
        }
        write!(f, " (ν = {:.4e})", self.viscosity())?;
        if self.has_force() {
            write!(f, ", force {:?}", self.force)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        let (p, m) = Physics::bgk(0.8).rates();
        assert_eq!(p, m);
        let (p, m) = Physics::trt(1.0, 0.25).rates();
        assert_eq!(p, 1.0);
        // Λ = 1/4 with τ = 1: (1 - 1/2)(1/ω⁻ - 1/2) = 1/4 -> 1/ω⁻ = 1.
        assert!((m - 1.0).abs() < 1e-15);
        let (p, m) = Physics::trt(0.6, MAGIC_POISEUILLE).rates();
        let lambda = (1.0 / p - 0.5) * (1.0 / m - 0.5);
        assert!((lambda - MAGIC_POISEUILLE).abs() < 1e-14);
    }

    #[test]
    fn display_rounds_computed_relaxation_times() {
        let p = Physics::trt(3.0 * 0.062 + 0.5, MAGIC_POISEUILLE);
        assert!(
            p.to_string().starts_with("TRT τ = 0.686, Λ = 0.1875 (ν = "),
            "{p}"
        );
        assert!(
            Physics::bgk(1.0).to_string().starts_with("BGK τ = 1 ("),
            "{}",
            Physics::bgk(1.0)
        );
    }

    #[test]
    fn rejects_unstable_parameters() {
        for bad in [
            Physics::bgk(0.5),
            Physics::bgk(0.3),
            Physics::bgk(f64::NAN),
            Physics::trt(0.7, 0.0),
            Physics::trt(0.7, -1.0),
            Physics::bgk(0.7).with_force([f64::INFINITY, 0.0, 0.0]),
        ] {
            assert!(matches!(bad.validate(), Err(Error::Unstable(_))), "{bad:?}");
        }
        assert!(Physics::bgk(0.500001).validate().is_ok());
    }
}
