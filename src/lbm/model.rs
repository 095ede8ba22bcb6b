//! The D3Q19 velocity set: 19 discrete velocities (rest, 6 faces, 12 edges of the unit cube),
//! their weights and the opposite of each, in the order every array, file and kernel uses.
//!
//! Directions 1..=9 are one of each opposite pair and direction `i + 9` is the opposite of `i`, so
//! the kernels can treat the nine pairs `(i, i + 9)` together (TRT splits each pair into its
//! symmetric and antisymmetric parts).

/// Number of discrete velocities.
pub const Q: usize = 19;

/// The discrete velocities `c_i` in lattice units (cells per step), indexed by direction.
pub const VELOCITIES: [[i32; 3]; Q] = [
    [0, 0, 0],
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
    [1, 1, 0],
    [1, -1, 0],
    [1, 0, 1],
    [1, 0, -1],
    [0, 1, 1],
    [0, 1, -1],
    [-1, 0, 0],
    [0, -1, 0],
    [0, 0, -1],
    [-1, -1, 0],
    [-1, 1, 0],
    [-1, 0, -1],
    [-1, 0, 1],
    [0, -1, -1],
    [0, -1, 1],
];

const W0: f64 = 1.0 / 3.0;
const W1: f64 = 1.0 / 18.0;
const W2: f64 = 1.0 / 36.0;

/// The lattice weights `w_i`: 1/3 at rest, 1/18 along the axes, 1/36 along the face diagonals.
pub const WEIGHTS: [f64; Q] = [
    W0, W1, W1, W1, W2, W2, W2, W2, W2, W2, W1, W1, W1, W2, W2, W2, W2, W2, W2,
];

/// `OPPOSITE[i]` is the direction with velocity `-c_i`.
pub const OPPOSITE: [usize; Q] = [
    0, 10, 11, 12, 13, 14, 15, 16, 17, 18, 1, 2, 3, 4, 5, 6, 7, 8, 9,
];

/// The squared lattice speed of sound, `c_s² = 1/3`.
pub const CS2: f64 = 1.0 / 3.0;

/// The largest lattice speed (cells per step) accepted for prescribed velocities (moving walls,
/// inlets, initial fields): 0.2, a Mach number of `0.2 / c_s ≈ 0.35`. The scheme's compressibility
/// error grows like Ma², and BGK/TRT lose stability well before Ma = 1; 0.2 leaves room for
/// the flow to accelerate past the prescribed value near obstacles.
pub const MAX_SPEED: f64 = 0.2;

/// The second-order equilibrium `f_i^eq = w_i ρ (1 + 3 c·u + 4.5 (c·u)² − 1.5 u²)` in `f64`.
pub fn equilibrium(rho: f64, u: [f64; 3]) -> [f64; Q] {
    let usq = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
    std::array::from_fn(|i| {
        let c = VELOCITIES[i];
        let cu = c[0] as f64 * u[0] + c[1] as f64 * u[1] + c[2] as f64 * u[2];
        WEIGHTS[i] * rho * (1.0 + 3.0 * cu + 4.5 * cu * cu - 1.5 * usq)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opposites_are_negated_velocities() {
        for i in 0..Q {
            let o = OPPOSITE[i];
            assert_eq!(OPPOSITE[o], i);
            assert_eq!(VELOCITIES[o], VELOCITIES[i].map(|v| -v), "direction {i}");
            if (1..=9).contains(&i) {
                assert_eq!(o, i + 9, "pairs are (i, i + 9)");
            }
            assert_eq!(WEIGHTS[i], WEIGHTS[o]);
        }
    }

    #[test]
    fn velocities_are_distinct_and_weights_match_speeds() {
        for i in 0..Q {
            let c = VELOCITIES[i];
            let c2 = c.iter().map(|v| v * v).sum::<i32>();
            assert_eq!(WEIGHTS[i], [W0, W1, W2][c2 as usize]);
            assert!(!VELOCITIES[..i].contains(&c));
        }
    }

    #[test]
    fn lattice_isotropy() {
        // Σw = 1, Σw c_a = 0, Σw c_a c_b = c_s² δ_ab, Σw c_a c_b c_c = 0, fourth-order isotropy.
        let sum = |f: &dyn Fn(&[f64; 3]) -> f64| -> f64 {
            (0..Q)
                .map(|i| WEIGHTS[i] * f(&VELOCITIES[i].map(|v| v as f64)))
                .sum()
        };
        assert!((sum(&|_| 1.0) - 1.0).abs() < 1e-15);
        for a in 0..3 {
            assert!(sum(&|c| c[a]).abs() < 1e-15);
            for b in 0..3 {
                let expected = if a == b { CS2 } else { 0.0 };
                assert!((sum(&|c| c[a] * c[b]) - expected).abs() < 1e-15);
                for d in 0..3 {
                    assert!(sum(&|c| c[a] * c[b] * c[d]).abs() < 1e-15);
                }
            }
        }
        // Σ w c_x² c_y² = c_s⁴, Σ w c_x⁴ = 3 c_s⁴.
        assert!((sum(&|c| c[0] * c[0] * c[1] * c[1]) - CS2 * CS2).abs() < 1e-15);
        assert!((sum(&|c| c[0].powi(4)) - 3.0 * CS2 * CS2).abs() < 1e-15);
    }

    #[test]
    fn equilibrium_has_the_right_moments() {
        let (rho, u) = (1.07, [0.05, -0.03, 0.02]);
        let f = equilibrium(rho, u);
        let m0: f64 = f.iter().sum();
        assert!((m0 - rho).abs() < 1e-14);
        for a in 0..3 {
            let m1: f64 = (0..Q).map(|i| f[i] * VELOCITIES[i][a] as f64).sum();
            assert!((m1 - rho * u[a]).abs() < 1e-14);
        }
    }
}
