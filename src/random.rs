//! Counter-based random numbers: each value is a function of a seed and its counters alone,
//! so large arrays fill in parallel and come out the same whatever the thread count.

/// A number in `[0, 1)` from `seed`, an index (a cell, a node) and the index's draw count:
/// SplitMix64's finaliser over the three, 53 random bits.
pub(crate) fn unit(seed: u64, node: u64, draw: u64) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(node.wrapping_mul(0xD1B5_4A32_D192_ED03))
        .wrapping_add(draw.wrapping_mul(0x8CB9_2BA7_2F3D_8DD7));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// [`unit`] for cell `(x, y, z)` of a grid of `dims` (its index in x-fastest order).
pub(crate) fn unit_at(seed: u64, dims: [usize; 3], [x, y, z]: [usize; 3], draw: u64) -> f64 {
    unit(seed, (x + dims[0] * (y + dims[1] * z)) as u64, draw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_numbers_are_uniform_and_differ_by_node_and_draw() {
        let n = 100_000u64;
        let draws: Vec<f64> = (0..n).map(|k| unit(7, k / 23, k % 23)).collect();
        assert!(draws.iter().all(|v| (0.0..1.0).contains(v)));
        let mean = draws.iter().sum::<f64>() / n as f64;
        // The mean of 10⁵ uniform numbers is 0.5 within 4 standard deviations (0.0037).
        assert!((mean - 0.5).abs() < 0.004, "mean {mean}");
        let below = draws.iter().filter(|&&v| v < 0.25).count() as f64 / n as f64;
        assert!((below - 0.25).abs() < 0.006, "{below} below 0.25");
        assert_ne!(unit(7, 1, 2), unit(7, 2, 1));
        assert_ne!(unit(7, 1, 2), unit(8, 1, 2));
    }
}
