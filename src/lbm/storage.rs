//! [`Storage`]: how a lattice's populations are held in GPU memory. 16-bit storage halves the
//! bytes a node update moves (19 loads and 19 stores of 2 bytes instead of 4), and the GPU
//! lattice engines are memory-bound, so it nearly doubles their speed; arithmetic stays `f32`.
//!
//! Both 16-bit formats store the deviation `d_i = f_i − w_i` of a population from its value
//! at rest (density 1, no flow), not `f_i` itself: deviations are small (≈ `w_i (ρ − 1 +
//! 3 c_i·u)`), so the format's exponent range is spent where the values are and its mantissa
//! resolves what changes instead of the constant `w_i`.
//!
//! * **f16s**: IEEE 754 binary16 of `d_i · 2¹⁵` (rounded to nearest, ties to even). 10 mantissa
//!   bits; the scale moves the format's range (6·10⁻⁸ … 65504) onto deviations from 2·10⁻¹² to
//!   2, so even the deviations of a nearly still fluid keep their leading digits.
//! * **f16c**: a custom format, 1 sign bit, 4 exponent bits, 11 mantissa bits, value
//!   `(−1)^s 2^(e−15) (1 + m/2048)` for `e ≥ 1` and `(−1)^s 2⁻²⁵ m` for `e = 0` (gradual
//!   underflow): one mantissa bit more than f16s (half the rounding error) for a range of
//!   3·10⁻⁸ … 2, which covers the deviations of flows whose density varies by 10⁻⁴ or more.
//!
//! A deviation beyond ±1.999 (a density above about 6, or a flow far past the stable speed)
//! does not fit either format: the kernels report it like a non-finite value. Conversions
//! round to nearest, ties to even, on the host (upload, checkpoints) as on the GPU, so a value
//! once stored reads back and stores again unchanged.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// How a lattice's populations are stored on the GPU (arithmetic is always in the lattice's
/// own precision, and for 16-bit storage `f32`). See [the module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    /// The lattice's own precision (`f32` or `f64`).
    #[default]
    Native,
    /// IEEE binary16 of the deviation from rest, scaled by 2¹⁵.
    F16s,
    /// A 1-4-11 custom 16-bit format of the deviation from rest.
    F16c,
}

/// `2¹⁵`, the scale of f16s.
const F16S_SCALE: f32 = 32768.0;
/// The largest binary16 value, 65504.
const F16_MAX: f32 = 65504.0;
/// The smallest normal f16c magnitude, `2⁻¹⁴`.
const F16C_MIN_NORMAL: f32 = 1.0 / 16384.0;
/// The largest f16c code's magnitude.
const F16C_MAX_CODE: u32 = 0x7fff;

impl Storage {
    /// Every storage, in the order the CLI lists them.
    pub const ALL: [Storage; 3] = [Storage::Native, Storage::F16s, Storage::F16c];

    /// Whether values are held in 16 bits.
    pub fn is_16_bit(self) -> bool {
        self != Storage::Native
    }

    /// Bytes of one stored population, `native` bytes for native storage.
    pub fn bytes(self, native: usize) -> usize {
        if self.is_16_bit() {
            2
        } else {
            native
        }
    }

    /// Host bytes per node of the codes a lattice in this storage keeps beside its populations:
    /// two a population in 16-bit storage, none in native storage.
    pub fn code_bytes_per_node(self) -> u64 {
        if self.is_16_bit() {
            2 * super::model::Q as u64
        } else {
            0
        }
    }

    /// The code for the kernels (`STORAGE` in `kernels/lbm.cu`).
    pub(crate) fn code(self) -> u8 {
        match self {
            Storage::Native => 0,
            Storage::F16s => 1,
            Storage::F16c => 2,
        }
    }

    /// The largest deviation from rest this format holds (infinite for native storage).
    pub fn max_deviation(self) -> f32 {
        match self {
            Storage::Native => f32::INFINITY,
            Storage::F16s => F16_MAX / F16S_SCALE,
            Storage::F16c => 2.0 - 1.0 / 2048.0,
        }
    }

    /// The relative rounding error of the format, `2^−(mantissa bits + 1)`: a stored deviation
    /// `d` (in the normal range) reads back within `|d| ·` this (0 for native storage).
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Storage::Native => 0.0,
            Storage::F16s => 2f64.powi(-11),
            Storage::F16c => 2f64.powi(-12),
        }
    }

    /// The 16-bit code of deviation `d` (16-bit storage only; out-of-range values saturate
    /// to the largest magnitude, or become infinite in f16s: check [`Storage::max_deviation`]).
    pub(crate) fn encode(self, d: f32) -> u16 {
        match self {
            Storage::Native => unreachable!("native storage has no 16-bit code"),
            Storage::F16s => half::f16::from_f32(d * F16S_SCALE).to_bits(),
            Storage::F16c => encode_f16c(d),
        }
    }

    /// Whether `code` holds the largest magnitude the format has, or more: the value a
    /// deviation beyond [`Storage::max_deviation`] is stored as (infinite or NaN in f16s).
    pub(crate) fn is_saturated(self, code: u16) -> bool {
        let magnitude = code & 0x7fff;
        match self {
            Storage::Native => false,
            // 0x7bff is f16's largest finite value, 65504.
            Storage::F16s => magnitude >= 0x7bff,
            Storage::F16c => u32::from(magnitude) == F16C_MAX_CODE,
        }
    }

    /// The deviation a 16-bit code stands for.
    pub(crate) fn decode(self, code: u16) -> f32 {
        match self {
            Storage::Native => unreachable!("native storage has no 16-bit code"),
            Storage::F16s => half::f16::from_bits(code).to_f32() / F16S_SCALE,
            Storage::F16c => decode_f16c(code),
        }
    }
}

/// f16c: rounds `|d|` to 11 mantissa bits (ties to even) in the 4-bit exponent range, with
/// gradual underflow below `2⁻¹⁴`; saturates above the largest code.
fn encode_f16c(d: f32) -> u16 {
    let sign = ((d.to_bits() >> 16) & 0x8000) as u16;
    let a = d.abs();
    let magnitude = if a.is_nan() {
        F16C_MAX_CODE
    } else if a < F16C_MIN_NORMAL {
        // Multiples of 2⁻²⁵; 2048 is the smallest normal code.
        (a * 33_554_432.0).round_ties_even() as u32
    } else {
        // Rebias the exponent (f32 bias 127, f16c 15) and round 23 mantissa bits to 11; a
        // carry out of the mantissa steps the exponent, as it should.
        let rebased = a.to_bits() - ((127 - 15) << 23);
        (rebased + 0x7ff + ((rebased >> 12) & 1)) >> 12
    };
    sign | magnitude.min(F16C_MAX_CODE) as u16
}

/// The value of an f16c code.
fn decode_f16c(code: u16) -> f32 {
    let e = u32::from(code >> 11) & 0xf;
    let m = u32::from(code) & 0x7ff;
    let a = if e == 0 {
        m as f32 / 33_554_432.0
    } else {
        f32::from_bits(((e + 127 - 15) << 23) | (m << 12))
    };
    if code & 0x8000 != 0 {
        -a
    } else {
        a
    }
}

impl fmt::Display for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Storage::Native => "native",
            Storage::F16s => "f16s",
            Storage::F16c => "f16c",
        })
    }
}

impl FromStr for Storage {
    type Err = Error;

    /// `native` (also `f32` and `f64`: the lattice's own precision), `f16s` or `f16c`.
    fn from_str(s: &str) -> Result<Storage> {
        match s {
            "native" | "f32" | "f64" => Ok(Storage::Native),
            "f16s" => Ok(Storage::F16s),
            "f16c" => Ok(Storage::F16c),
            _ => Err(Error::InvalidArgument(format!(
                "unknown storage '{s}': use native (f32/f64), f16s or f16c"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every finite code decodes to a value that encodes back to the same code, and codes are
    /// ordered like their values (so rounding is monotone).
    #[test]
    fn every_code_round_trips() {
        for s in [Storage::F16s, Storage::F16c] {
            let mut last = f32::NEG_INFINITY;
            // Negative codes from the largest magnitude down, then positive codes up.
            let codes = (0x8000u32..=0xffff)
                .rev()
                .chain(0..0x8000)
                .map(|c| c as u16);
            for code in codes {
                let v = s.decode(code);
                if !v.is_finite() {
                    continue;
                }
                assert!(v.abs() <= s.max_deviation(), "{s} {code:#06x} = {v}");
                if v != 0.0 {
                    assert_eq!(s.encode(v), code, "{s} {code:#06x} = {v}");
                    assert!(v > last, "{s}: {code:#06x} = {v} after {last}");
                    last = v;
                }
            }
        }
    }

    /// A deviation beyond the format's range is stored as a saturated code (f16c's largest
    /// magnitude, f16s's largest finite one or infinity); values within the range are not.
    #[test]
    fn deviations_beyond_the_range_take_saturated_codes() {
        for s in [Storage::F16s, Storage::F16c] {
            let max = s.max_deviation();
            for beyond in [max * 1.0001, max * 2.0, 1e30] {
                assert!(s.is_saturated(s.encode(beyond)), "{s} {beyond}");
                assert!(s.is_saturated(s.encode(-beyond)), "{s} -{beyond}");
            }
            for within in [0.0, 1e-6, 0.5 * max, 0.999 * max] {
                assert!(!s.is_saturated(s.encode(within)), "{s} {within}");
                assert!(!s.is_saturated(s.encode(-within)), "{s} -{within}");
            }
        }
        assert!(!Storage::Native.is_saturated(0x7fff));
    }

    /// Encoding rounds to the nearest code, ties to even, across normal and subnormal codes:
    /// checked against f64 arithmetic at midpoints and just beside them.
    #[test]
    fn encoding_rounds_to_nearest_even() {
        for s in [Storage::F16s, Storage::F16c] {
            for code in (1u16..0x7bff).step_by(7) {
                let (lo, hi) = (s.decode(code) as f64, s.decode(code + 1) as f64);
                let mid = (lo + hi) / 2.0;
                let below = s.encode((mid - (hi - lo) / 8.0) as f32);
                let above = s.encode((mid + (hi - lo) / 8.0) as f32);
                assert_eq!((below, above), (code, code + 1), "{s} near {mid}");
                if mid as f32 as f64 == mid {
                    let even = if code % 2 == 0 { code } else { code + 1 };
                    assert_eq!(s.encode(mid as f32), even, "{s}: tie {mid}");
                }
            }
        }
    }

    /// The stated error bounds and ranges hold, and f16c is the finer format.
    #[test]
    fn rounding_error_is_within_the_unit_roundoff() {
        for s in [Storage::F16s, Storage::F16c] {
            let mut worst: f64 = 0.0;
            for k in 0..20_000 {
                let d = 1e-3 * (1.0 + k as f64 * 0.0137).sin() * (1.0 + (k % 97) as f64);
                if d.abs() < 1e-4 {
                    continue; // below f16c's normal range
                }
                let back = s.decode(s.encode(d as f32)) as f64;
                worst = worst.max(((back - d) / d).abs());
            }
            assert!(worst <= s.unit_roundoff() * 1.0001, "{s}: {worst}");
            assert!(worst > s.unit_roundoff() * 0.5, "{s}: {worst}");
            assert_eq!(s.decode(s.encode(s.max_deviation())), s.max_deviation());
        }
        assert!(Storage::F16c.unit_roundoff() < Storage::F16s.unit_roundoff());
        assert!(
            Storage::F16s.encode(2.0).eq(&0x7c00),
            "f16s overflows to infinity"
        );
        assert_eq!(Storage::F16c.encode(-5.0), 0xffff, "f16c saturates");
    }

    #[test]
    fn names_parse_and_print() {
        for s in Storage::ALL {
            assert_eq!(s.to_string().parse::<Storage>().unwrap(), s);
        }
        assert_eq!("f32".parse::<Storage>().unwrap(), Storage::Native);
        assert!("f8".parse::<Storage>().is_err());
        assert_eq!(Storage::F16c.bytes(4), 2);
        assert_eq!(Storage::Native.bytes(8), 8);
    }
}
