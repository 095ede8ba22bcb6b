//! [`Filter2`]: a general 2D convolution (any filter up to [`MAX_FILTER_SIZE`] on a side, odd or
//! even, dense or sparse, any anchor) and the [`Border`] modes that say what lies outside the
//! image. Every output pixel is written, the border ones included.

use std::fmt::{self, Display};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{DType, Error, Result};

/// Largest filter side: filters up to 15×15.
pub const MAX_FILTER_SIZE: usize = 15;

/// Largest filter file read: a 15×15 filter takes a few kilobytes even with comments, so a
/// larger file is not a filter (a picture given by mistake, say).
const MAX_FILTER_FILE_BYTES: u64 = 1 << 20;

/// What a filter reads outside the image (the names and rules of OpenCV's border types).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Border {
    /// A constant value: `vvv|abcd|vvv`.
    Constant(f64),
    /// The edge pixel repeated: `aaa|abcd|ddd`.
    Replicate,
    /// Mirrored with the edge repeated: `cba|abcd|dcb`.
    Reflect,
    /// Mirrored about the edge pixel: `dcb|abcd|cba` (OpenCV's default, `BORDER_REFLECT_101`).
    #[default]
    Reflect101,
    /// Periodic: `bcd|abcd|abc`.
    Wrap,
}

impl Border {
    /// The pixel index read for coordinate `i` on an axis of `n` pixels; `None` for the
    /// constant border outside the image, and for an empty axis (`n` 0), which has no pixel
    /// to read.
    pub fn source(self, i: isize, n: usize) -> Option<usize> {
        let len = isize::try_from(n).ok().filter(|&l| l > 0)?;
        if (0..len).contains(&i) {
            return Some(i as usize);
        }
        // The mirrored borders repeat with a period of 2n (reflect) or 2n − 2 (reflect101):
        // folding `i` into one period first makes the mirror one step whatever its distance
        // (in i128, where twice any axis fits).
        let (i, len) = (i as i128, len as i128);
        let i = match self {
            Border::Constant(_) => return None,
            Border::Replicate => i.clamp(0, len - 1),
            Border::Wrap => i.rem_euclid(len),
            Border::Reflect | Border::Reflect101 if n == 1 => 0,
            Border::Reflect => {
                let j = i.rem_euclid(2 * len);
                if j < len {
                    j
                } else {
                    2 * len - 1 - j
                }
            }
            Border::Reflect101 => {
                let j = i.rem_euclid(2 * len - 2);
                if j < len {
                    j
                } else {
                    2 * len - 2 - j
                }
            }
        };
        Some(i as usize)
    }

    /// The value read outside the image by the constant border (0 for the others).
    pub fn constant(self) -> f64 {
        match self {
            Border::Constant(v) => v,
            _ => 0.0,
        }
    }

    /// Parses `constant[:V]` (V finite, 0 when left out), `replicate`, `reflect`,
    /// `reflect101` or `wrap`; only `constant` takes a value.
    ///
    /// ```
    /// use stencil35d::Border;
    /// assert_eq!(Border::from_name("constant:0.5").unwrap(), Border::Constant(0.5));
    /// assert!(Border::from_name("wrap:3").is_err());
    /// ```
    pub fn from_name(name: &str) -> Result<Border> {
        let (kind, value) = match name.split_once(':') {
            Some((kind, value)) => (kind, Some(value)),
            None => (name, None),
        };
        let bad = |why: &str| {
            Error::InvalidArgument(format!(
                "border '{name}' {why} (expected constant[:V], replicate, reflect, reflect101 \
                 or wrap; only constant takes a value)"
            ))
        };
        let border = match kind {
            "constant" => {
                let v = value.map_or(Some(0.0), |v| {
                    v.parse().ok().filter(|v: &f64| v.is_finite())
                });
                return v
                    .map(Border::Constant)
                    .ok_or_else(|| bad("needs a finite number V after 'constant:'"));
            }
            "replicate" => Border::Replicate,
            "reflect" => Border::Reflect,
            "reflect101" => Border::Reflect101,
            "wrap" => Border::Wrap,
            _ => return Err(bad("is unknown")),
        };
        match value {
            None => Ok(border),
            Some(_) => Err(bad(&format!("gives a value to {kind}, which takes none"))),
        }
    }
}

impl Display for Border {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Plain decimals within a few places, exponents beyond (1e-20, not 0.000…01),
            // so that the value reads back as written.
            Border::Constant(v) if *v == 0.0 || (1e-4..1e9).contains(&v.abs()) => {
                write!(f, "constant:{v}")
            }
            Border::Constant(v) => write!(f, "constant:{v:e}"),
            Border::Replicate => f.write_str("replicate"),
            Border::Reflect => f.write_str("reflect"),
            Border::Reflect101 => f.write_str("reflect101"),
            Border::Wrap => f.write_str("wrap"),
        }
    }
}

/// A 2D convolution in correlation form, as OpenCV's `filter2D` and cuDNN compute it:
/// `out(x, y) = Σ_{j<kh} Σ_{i<kw} w[j·kw + i] · in(x + i - ax, y + j - ay)`, with `(ax, ay)` the
/// anchor (the centre `(kw/2, kh/2)` unless set) and `in` outside the image given by the
/// [`Border`].
///
/// ```
/// use stencil35d::{Border, Filter2};
/// let g = Filter2::from_name("gaussian:5").unwrap().with_border(Border::Replicate);
/// assert_eq!((g.size(), g.anchor()), ([5, 5], [2, 2]));
/// assert!(g.separable().is_some());
/// let sobel = Filter2::from_name("sobel").unwrap();
/// assert_eq!(sobel.taps(), 6); // the zero middle column is skipped
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Filter2 {
    size: [usize; 2],
    weights: Vec<f64>,
    anchor: [usize; 2],
    border: Border,
}

impl Filter2 {
    /// A filter of `[kw, kh]` weights in row-major order (`kh` rows of `kw`), anchored at its
    /// centre, with the default border ([`Border::Reflect101`]).
    pub fn new(size: [usize; 2], weights: &[f64]) -> Result<Filter2> {
        let f = Filter2 {
            size,
            weights: weights.to_vec(),
            anchor: [size[0] / 2, size[1] / 2],
            border: Border::default(),
        };
        f.validate()?;
        Ok(f)
    }

    /// The same filter read at anchor `[ax, ay]` (inside the filter).
    pub fn with_anchor(mut self, anchor: [usize; 2]) -> Result<Filter2> {
        self.anchor = anchor;
        self.validate()?;
        Ok(self)
    }

    /// The same filter with border mode `border`.
    pub fn with_border(mut self, border: Border) -> Filter2 {
        self.border = border;
        self
    }

    /// Checks the size (1..=15 on each side), the weight count, the anchor and that every
    /// weight (and a constant border value) is finite.
    pub fn validate(&self) -> Result<()> {
        let [kw, kh] = self.size;
        let bad = |what: String| Err(Error::InvalidArgument(format!("filter: {what}")));
        if !(1..=MAX_FILTER_SIZE).contains(&kw) || !(1..=MAX_FILTER_SIZE).contains(&kh) {
            return bad(format!(
                "size {kw}x{kh} is not supported (1..={MAX_FILTER_SIZE} on each side)"
            ));
        }
        if self.weights.len() != kw * kh {
            return bad(format!(
                "a {kw}x{kh} filter takes {} weights, got {}",
                kw * kh,
                self.weights.len()
            ));
        }
        if self.anchor[0] >= kw || self.anchor[1] >= kh {
            return bad(format!(
                "anchor {:?} lies outside the {kw}x{kh} filter",
                self.anchor
            ));
        }
        if let Some(w) = self.weights.iter().find(|w| !w.is_finite()) {
            return bad(format!("weight {w} is not finite"));
        }
        if !self.border.constant().is_finite() {
            return bad("the constant border value is not finite".into());
        }
        Ok(())
    }

    /// A named filter: `gaussian:K` (odd K; OpenCV's `getGaussianKernel(K, 0)`: its
    /// fixed rows up to K = 7, beyond them σ as OpenCV derives it from K), `mean:K` or
    /// `mean:KxL`, `sobel`, `sobel-y`, `laplacian`, `sharpen`, or `dense:KxL` (a dense,
    /// non-separable filter of fixed pseudo-random positive weights summing to one, the
    /// benchmark filter). Sizes run from 1 to [`MAX_FILTER_SIZE`]; the fixed 3×3 filters take
    /// no size.
    ///
    /// Errors: [`Error::InvalidArgument`] for an unknown name, a size out of range (saying
    /// which sizes the filter takes) or a size given to a fixed filter.
    ///
    /// ```
    /// use stencil35d::Filter2;
    /// assert_eq!(Filter2::from_name("mean:3x5").unwrap().size(), [3, 5]);
    /// let even = Filter2::from_name("gaussian:4").unwrap_err().to_string();
    /// assert!(even.contains("odd size K from 1 to 15"), "{even}");
    /// assert!(Filter2::from_name("sobel:99").is_err());
    /// ```
    pub fn from_name(name: &str) -> Result<Filter2> {
        let (kind, arg) = match name.split_once(':') {
            Some((kind, arg)) => (kind, Some(arg)),
            None => (name, None),
        };
        let fixed = |weights: [f64; 9]| match arg {
            None => Filter2::new([3, 3], &weights),
            Some(arg) => Err(Error::InvalidArgument(format!(
                "filter '{name}': {kind} is a fixed 3x3 filter and takes no size (got ':{arg}')"
            ))),
        };
        match kind {
            "gaussian" => {
                let k = named_size(name, "gaussian:K", arg, true)?[0];
                match SMALL_GAUSSIANS.get(k / 2) {
                    Some(g) => Filter2::new([k, k], &outer(g)),
                    None => Filter2::gaussian(k, 0.3 * ((k as f64 - 1.0) * 0.5 - 1.0) + 0.8),
                }
            }
            "mean" => {
                let [k, l] = named_size(name, "mean:K or mean:KxL", arg, false)?;
                Filter2::new([k, l], &vec![1.0 / (k * l) as f64; k * l])
            }
            "dense" => {
                let [k, l] = named_size(name, "dense:KxL", arg, false)?;
                Filter2::new([k, l], &dense_weights(k, l))
            }
            "sobel" => fixed([-1., 0., 1., -2., 0., 2., -1., 0., 1.]),
            "sobel-y" => fixed([-1., -2., -1., 0., 0., 0., 1., 2., 1.]),
            "laplacian" => fixed([0., 1., 0., 1., -4., 1., 0., 1., 0.]),
            "sharpen" => fixed([0., -1., 0., -1., 5., -1., 0., -1., 0.]),
            _ => Err(Error::InvalidArgument(format!(
                "unknown filter '{name}' (expected gaussian:K, mean:K, mean:KxL, sobel, sobel-y, \
                 laplacian, sharpen or dense:KxL, sizes 1 to {MAX_FILTER_SIZE}; or a file of \
                 weights)"
            ))),
        }
    }

    /// The `k × k` Gaussian of standard deviation `sigma` (odd `k`), normalised to sum one.
    pub fn gaussian(k: usize, sigma: f64) -> Result<Filter2> {
        if k.is_multiple_of(2) || k > MAX_FILTER_SIZE || !(sigma > 0.0 && sigma.is_finite()) {
            return Err(Error::InvalidArgument(format!(
                "a Gaussian filter needs an odd size up to {MAX_FILTER_SIZE} and a positive \
                 sigma, got {k} and {sigma}"
            )));
        }
        let c = (k / 2) as f64;
        let g: Vec<f64> = (0..k)
            .map(|i| (-(i as f64 - c).powi(2) / (2.0 * sigma * sigma)).exp())
            .collect();
        let total: f64 = g.iter().sum();
        let g: Vec<f64> = g.iter().map(|v| v / total).collect();
        Filter2::new([k, k], &outer(&g))
    }

    /// A filter from text: one line per filter row, weights separated by spaces or commas;
    /// a `#` starts a comment to the end of its line, and lines left blank are skipped (as is
    /// a leading byte-order mark). Errors name the line.
    pub fn from_text(text: &str) -> Result<Filter2> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut rows: Vec<(usize, Vec<f64>)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            // Commas separate weights as spaces do, but two with nothing between them leave
            // out a weight rather than separating two.
            if line.split(',').skip(1).any(|field| field.trim().is_empty()) || line.starts_with(',')
            {
                return Err(Error::InvalidArgument(format!(
                    "filter line {}: a comma with no weight after it ('{line}')",
                    n + 1
                )));
            }
            let row = line
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|t| !t.is_empty())
                .map(|t| {
                    t.parse::<f64>().map_err(|e| {
                        Error::InvalidArgument(format!(
                            "filter line {}: '{t}' is not a number ({e})",
                            n + 1
                        ))
                    })
                })
                .collect::<Result<Vec<f64>>>()?;
            rows.push((n + 1, row));
        }
        let Some((_, first)) = rows.first() else {
            return Err(Error::InvalidArgument(
                "the filter holds no weights (only blank lines and comments)".into(),
            ));
        };
        let kw = first.len();
        if let Some((line, r)) = rows.iter().find(|(_, r)| r.len() != kw) {
            return Err(Error::InvalidArgument(format!(
                "filter line {line} has {} weights, the first row has {kw}",
                r.len()
            )));
        }
        let weights: Vec<f64> = rows.iter().flat_map(|(_, r)| r.iter().copied()).collect();
        Filter2::new([kw, rows.len()], &weights)
    }

    /// A filter from a text file (see [`Filter2::from_text`]): a regular file of at most
    /// 1 MiB (a filter is a few kilobytes), errors naming the file.
    pub fn from_file(path: &Path) -> Result<Filter2> {
        let text = crate::files::read_text_file(path, MAX_FILTER_FILE_BYTES, "the filter file")?;
        Filter2::from_text(&text).map_err(|e| match e {
            Error::InvalidArgument(why) => {
                Error::InvalidArgument(format!("filter file {}: {why}", path.display()))
            }
            other => other,
        })
    }

    /// `[kw, kh]`.
    pub fn size(&self) -> [usize; 2] {
        self.size
    }

    /// The weights, `kh` rows of `kw`.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The weight at filter column `i`, row `j`; 0 outside the filter, as for a stencil.
    pub fn weight(&self, i: usize, j: usize) -> f64 {
        let [kw, kh] = self.size;
        if i < kw && j < kh {
            self.weights[j * kw + i]
        } else {
            0.0
        }
    }

    /// `[ax, ay]`: the filter cell that lies on the output pixel.
    pub fn anchor(&self) -> [usize; 2] {
        self.anchor
    }

    /// The border mode.
    pub fn border(&self) -> Border {
        self.border
    }

    /// Non-zero weights (the engines skip zero taps).
    pub fn taps(&self) -> usize {
        self.weights.iter().filter(|w| **w != 0.0).count()
    }

    /// `(row, column)` factors when the filter is an outer product `w[j][i] = col[j]·row[i]`
    /// to within 1e-12 of its largest weight (Gaussians, means, Sobel); `None` otherwise.
    pub fn separable(&self) -> Option<(Vec<f64>, Vec<f64>)> {
        let [kw, kh] = self.size;
        let (pj, pi) = (0..kh)
            .flat_map(|j| (0..kw).map(move |i| (j, i)))
            .max_by(|a, b| {
                self.weight(a.1, a.0)
                    .abs()
                    .total_cmp(&self.weight(b.1, b.0).abs())
            })?;
        let pivot = self.weight(pi, pj);
        if pivot == 0.0 {
            return None;
        }
        let row: Vec<f64> = (0..kw).map(|i| self.weight(i, pj)).collect();
        let col: Vec<f64> = (0..kh).map(|j| self.weight(pi, j) / pivot).collect();
        let tol = 1e-12 * pivot.abs();
        let rank_one =
            (0..kh).all(|j| (0..kw).all(|i| (self.weight(i, j) - col[j] * row[i]).abs() <= tol));
        rank_one.then_some((row, col))
    }

    /// Floating-point operations per output pixel: one multiply and an FMA per further
    /// non-zero tap, `2·taps - 1` (at least 1).
    pub fn flops_per_update(&self) -> usize {
        (2 * self.taps()).saturating_sub(1).max(1)
    }

    /// Operations per output pixel in the 3.5D paper's sense: `flops + taps + 1`.
    pub fn ops_per_update(&self) -> usize {
        self.flops_per_update() + self.taps() + 1
    }

    /// Fewest bytes moved per output pixel: the image read once and written once, `2E`.
    pub fn min_bytes_per_update(&self, dtype: DType) -> usize {
        2 * dtype.size()
    }

    /// Machine-readable name: `conv2d:KxL`.
    pub fn kind_name(&self) -> String {
        format!("conv2d:{}x{}", self.size[0], self.size[1])
    }

    /// The larger distance the filter reaches from its anchor, on any side.
    pub fn reach(&self) -> usize {
        let [kw, kh] = self.size;
        let [ax, ay] = self.anchor;
        ax.max(kw - 1 - ax).max(ay).max(kh - 1 - ay)
    }
}

impl Display for Filter2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{} filter ({} taps, anchor {},{}, border {})",
            self.size[0],
            self.size[1],
            self.taps(),
            self.anchor[0],
            self.anchor[1],
            self.border
        )
    }
}

/// `K` or `KxL` as `[K, L]`.
fn parse_size(s: &str) -> Option<[usize; 2]> {
    let (a, b) = s.split_once('x').unwrap_or((s, s));
    Some([a.parse().ok()?, b.parse().ok()?])
}

/// The size `arg` of the named filter `name` (`form` shows how it is written), each side from
/// 1 to [`MAX_FILTER_SIZE`], and for a Gaussian (`odd_square`) one odd side: checked before
/// any weight is made, so `mean:100000000` is refused rather than allocated. One message for
/// every way the size can be wrong, saying which sizes are supported.
fn named_size(name: &str, form: &str, arg: Option<&str>, odd_square: bool) -> Result<[usize; 2]> {
    let size = arg.and_then(parse_size).filter(|&[k, l]| {
        let side = |n: usize| (1..=MAX_FILTER_SIZE).contains(&n);
        side(k) && side(l) && (!odd_square || (k == l && !k.is_multiple_of(2)))
    });
    size.ok_or_else(|| {
        let sizes = if odd_square {
            format!("an odd size K from 1 to {MAX_FILTER_SIZE} (1, 3, 5, ...)")
        } else {
            format!("sizes from 1 to {MAX_FILTER_SIZE} on each side")
        };
        Error::InvalidArgument(format!("filter '{name}': {form} takes {sizes}"))
    })
}

/// Positive weights summing to one, from a fixed linear congruential sequence: dense and, for
/// sizes above one, not an outer product.
fn dense_weights(kw: usize, kh: usize) -> Vec<f64> {
    let mut state = 0x2545_f491_u64;
    let raw: Vec<f64> = (0..kw * kh)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            0.5 + (state >> 40) as f64 / (1u64 << 24) as f64
        })
        .collect();
    let total: f64 = raw.iter().sum();
    raw.iter().map(|v| v / total).collect()
}

/// OpenCV's fixed Gaussian rows for sizes 1, 3, 5 and 7 (`getGaussianKernel` with σ ≤ 0):
/// binomial for 3 and 5, rounded ones for 7, which its `GaussianBlur` uses instead of sampling
/// a Gaussian.
const SMALL_GAUSSIANS: [&[f64]; 4] = [
    &[1.0],
    &[0.25, 0.5, 0.25],
    &[0.0625, 0.25, 0.375, 0.25, 0.0625],
    &[
        0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125,
    ],
];

/// The `k × k` weights `g[j]·g[i]` of the separable filter whose row and column are `g`.
fn outer(g: &[f64]) -> Vec<f64> {
    g.iter()
        .flat_map(|gj| g.iter().map(move |gi| gi * gj))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borders_follow_opencv() {
        let idx = |b: Border| (-3..9).map(|i| b.source(i, 6)).collect::<Vec<_>>();
        let some = |v: &[usize]| v.iter().map(|&i| Some(i)).collect::<Vec<_>>();
        assert_eq!(
            idx(Border::Replicate),
            some(&[0, 0, 0, 0, 1, 2, 3, 4, 5, 5, 5, 5])
        );
        assert_eq!(
            idx(Border::Reflect),
            some(&[2, 1, 0, 0, 1, 2, 3, 4, 5, 5, 4, 3])
        );
        assert_eq!(
            idx(Border::Reflect101),
            some(&[3, 2, 1, 0, 1, 2, 3, 4, 5, 4, 3, 2])
        );
        assert_eq!(
            idx(Border::Wrap),
            some(&[3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2])
        );
        assert_eq!(Border::Constant(1.0).source(-1, 6), None);
        // Offsets larger than the image fold back in, and a single pixel reflects to itself.
        assert_eq!(Border::Reflect101.source(-7, 2), Some(1));
        assert_eq!(Border::Reflect.source(5, 1), Some(0));
        for b in ["constant:2.5", "replicate", "reflect", "reflect101", "wrap"] {
            assert_eq!(Border::from_name(b).unwrap().to_string(), b);
        }
        // Far from 1 the value is written with an exponent, and reads back the same.
        for v in [1e-20, -3e30, 1e300, 0.0] {
            let shown = Border::Constant(v).to_string();
            assert!(shown.len() < 20, "{shown}");
            assert_eq!(Border::from_name(&shown).unwrap(), Border::Constant(v));
        }
        assert!(Border::from_name("mirror").is_err());
    }

    /// Every mode against OpenCV's `borderInterpolate`, written as its loop (step back into
    /// the image one reflection at a time) rather than the closed forms `source` uses, on
    /// images smaller than a filter's reach, where the reflections repeat.
    #[test]
    fn borders_fold_as_defined_far_outside_small_images() {
        let fold = |b: Border, mut p: isize, n: isize| -> Option<usize> {
            if (0..n).contains(&p) {
                return Some(p as usize);
            }
            match b {
                Border::Constant(_) => return None,
                Border::Replicate => p = if p < 0 { 0 } else { n - 1 },
                Border::Wrap => {
                    while p < 0 {
                        p += n;
                    }
                    while p >= n {
                        p -= n;
                    }
                }
                Border::Reflect | Border::Reflect101 if n == 1 => p = 0,
                Border::Reflect | Border::Reflect101 => {
                    let delta = isize::from(b == Border::Reflect101);
                    while !(0..n).contains(&p) {
                        p = if p < 0 {
                            -p - 1 + delta
                        } else {
                            n - 1 - (p - n) - delta
                        };
                    }
                }
            }
            Some(p as usize)
        };
        let modes = [
            Border::Constant(0.5),
            Border::Replicate,
            Border::Reflect,
            Border::Reflect101,
            Border::Wrap,
        ];
        for n in 1..=4isize {
            for b in modes {
                for i in -3 * n - 7..4 * n + 7 {
                    assert_eq!(b.source(i, n as usize), fold(b, i, n), "{b} at {i} of {n}");
                }
            }
        }
    }

    #[test]
    fn named_filters_and_factors() {
        let g = Filter2::from_name("gaussian:7").unwrap();
        assert!((g.weights().iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let (row, col) = g.separable().unwrap();
        assert_eq!((row.len(), col.len()), (7, 7));
        assert!((g.weight(2, 5) - row[2] * col[5]).abs() < 1e-15);
        assert!(Filter2::from_name("dense:5x5")
            .unwrap()
            .separable()
            .is_none());
        assert!(Filter2::from_name("laplacian")
            .unwrap()
            .separable()
            .is_none());
        assert_eq!(Filter2::from_name("mean:3x5").unwrap().size(), [3, 5]);
        assert!(Filter2::from_name("gaussian:4").is_err());
        assert!(Filter2::from_name("dense:16x3").is_err());
    }

    /// `gaussian:K` is OpenCV's `getGaussianKernel(K, 0)`: fixed rows up to K = 7, then a
    /// sampled Gaussian of σ = 0.3·((K − 1)/2 − 1) + 0.8.
    #[test]
    fn named_gaussians_follow_opencv() {
        let fixed = |row: &[f64]| {
            let k = row.len();
            let f = Filter2::from_name(&format!("gaussian:{k}")).unwrap();
            for j in 0..k {
                for i in 0..k {
                    assert_eq!(
                        f.weight(i, j),
                        row[i] * row[j],
                        "gaussian:{k} at ({i}, {j})"
                    );
                }
            }
        };
        fixed(&[1.0]);
        fixed(&[0.25, 0.5, 0.25]);
        fixed(&[1.0, 4.0, 6.0, 4.0, 1.0].map(|v| v / 16.0));
        fixed(&[1.0, 3.5, 7.0, 9.0, 7.0, 3.5, 1.0].map(|v| v / 32.0));
        // Beyond 7, OpenCV samples the Gaussian: for K = 9, σ = 1.7.
        let sampled = Filter2::gaussian(9, 1.7).unwrap();
        assert_eq!(
            Filter2::from_name("gaussian:9").unwrap().weights(),
            sampled.weights()
        );
    }

    #[test]
    fn filter_files_take_comments_and_name_their_lines() {
        let f = Filter2::from_text("\u{feff}# kernel\n1 2 # first row\n\n3, 4\n").unwrap();
        assert_eq!((f.size(), f.weight(1, 1)), ([2, 2], 4.0));
        // Outside the filter a weight is 0: a column past the width does not wrap to a row.
        assert_eq!((f.weight(2, 0), f.weight(0, 2)), (0.0, 0.0));
        let short = Filter2::from_text("# c\n1 2\n\n\n3\n")
            .unwrap_err()
            .to_string();
        assert!(short.contains("filter line 5 has 1 weights"), "{short}");
        let bad = Filter2::from_text("1 1/16\n").unwrap_err().to_string();
        assert!(bad.contains("line 1: '1/16' is not a number"), "{bad}");
        let empty = Filter2::from_text("# only a comment\n\n")
            .unwrap_err()
            .to_string();
        assert!(empty.contains("holds no weights"), "{empty}");
    }

    #[test]
    fn text_filters_and_bad_input() {
        let f = Filter2::from_text("# a 2x3 filter\n1, 2\n3 4\n\n5 6\n").unwrap();
        assert_eq!(
            (f.size(), f.weight(1, 2), f.anchor()),
            ([2, 3], 6.0, [1, 1])
        );
        assert!(Filter2::from_text("1 2\n3\n").is_err());
        assert!(Filter2::from_text("1 x\n").is_err());
        // An empty field between commas is a weight left out, not a separator.
        for text in ["1,,2\n", "1, ,2\n", ",1 2\n", "1 2,\n"] {
            let e = Filter2::from_text(text).unwrap_err().to_string();
            assert!(e.contains("line 1: a comma with no weight"), "{text}: {e}");
        }
        assert_eq!(Filter2::from_text("1 ,2\n3 , 4\n").unwrap().size(), [2, 2]);
        assert!(Filter2::from_text("").is_err());
        assert!(Filter2::new([2, 2], &[1.0; 3]).is_err());
        assert!(Filter2::new([1, 1], &[f64::NAN]).is_err());
        assert!(f.clone().with_anchor([2, 0]).is_err());
        assert_eq!(f.with_anchor([0, 2]).unwrap().reach(), 2);
    }
}
