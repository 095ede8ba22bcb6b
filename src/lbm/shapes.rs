//! Geometry helpers for building lattices: the six [`Face`]s of the box and simple obstacle
//! [`Shape`]s (sphere, cylinder, box). Node (x, y, z) sits at the point (x, y, z); a shape
//! contains a node when the point is inside or on its surface.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A coordinate axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// x, the fastest-varying index.
    X,
    /// y.
    Y,
    /// z, the axis the blocked engine streams along.
    Z,
}

impl Axis {
    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        self as usize
    }

    /// All three, in order.
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];
}

impl FromStr for Axis {
    type Err = Error;
    fn from_str(s: &str) -> Result<Axis> {
        match s {
            "x" | "X" => Ok(Axis::X),
            "y" | "Y" => Ok(Axis::Y),
            "z" | "Z" => Ok(Axis::Z),
            _ => Err(Error::InvalidArgument(format!(
                "unknown axis '{s}' (expected x, y or z)"
            ))),
        }
    }
}

/// One of the six faces of the lattice box.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Face {
    /// x = 0.
    XMin,
    /// x = nx − 1.
    XMax,
    /// y = 0.
    YMin,
    /// y = ny − 1.
    YMax,
    /// z = 0.
    ZMin,
    /// z = nz − 1.
    ZMax,
}

impl Face {
    /// All six faces.
    pub const ALL: [Face; 6] = [
        Face::XMin,
        Face::XMax,
        Face::YMin,
        Face::YMax,
        Face::ZMin,
        Face::ZMax,
    ];

    /// The axis the face is normal to.
    pub fn axis(self) -> Axis {
        match self {
            Face::XMin | Face::XMax => Axis::X,
            Face::YMin | Face::YMax => Axis::Y,
            Face::ZMin | Face::ZMax => Axis::Z,
        }
    }

    /// Whether node `cell` of a lattice of `dims` lies on this face.
    pub fn contains(self, dims: [usize; 3], cell: [usize; 3]) -> bool {
        let a = self.axis().index();
        match self {
            Face::XMin | Face::YMin | Face::ZMin => cell[a] == 0,
            _ => cell[a] + 1 == dims[a],
        }
    }
}

/// An obstacle (or any region) given geometrically.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Shape {
    /// The ball `|p − centre| ≤ radius`.
    Sphere {
        /// Centre, in node coordinates.
        centre: [f64; 3],
        /// Radius in cells.
        radius: f64,
    },
    /// The infinite circular cylinder along `axis` through `centre` (the point's coordinate
    /// along `axis` is ignored).
    Cylinder {
        /// The cylinder's axis direction.
        axis: Axis,
        /// A point on the cylinder's axis.
        centre: [f64; 3],
        /// Radius in cells.
        radius: f64,
    },
    /// The axis-aligned box `min ≤ p ≤ max` (inclusive, per coordinate).
    Box {
        /// Lowest corner.
        min: [f64; 3],
        /// Highest corner.
        max: [f64; 3],
    },
}

impl Shape {
    /// Whether the shape contains node (x, y, z).
    pub fn contains(&self, [x, y, z]: [usize; 3]) -> bool {
        let p = [x as f64, y as f64, z as f64];
        match *self {
            Shape::Sphere { centre, radius } => {
                let d2: f64 = (0..3).map(|a| (p[a] - centre[a]).powi(2)).sum();
                d2 <= radius * radius
            }
            Shape::Cylinder {
                axis,
                centre,
                radius,
            } => {
                let d2: f64 = (0..3)
                    .filter(|&a| a != axis.index())
                    .map(|a| (p[a] - centre[a]).powi(2))
                    .sum();
                d2 <= radius * radius
            }
            Shape::Box { min, max } => (0..3).all(|a| min[a] <= p[a] && p[a] <= max[a]),
        }
    }

    /// Rejects non-finite coordinates and negative radii.
    pub fn validate(&self) -> Result<()> {
        let (points, radius): (Vec<f64>, f64) = match *self {
            Shape::Sphere { centre, radius } | Shape::Cylinder { centre, radius, .. } => {
                (centre.to_vec(), radius)
            }
            Shape::Box { min, max } => ([min, max].concat(), 0.0),
        };
        if points.iter().any(|v| !v.is_finite()) || !radius.is_finite() || radius < 0.0 {
            return Err(Error::InvalidArgument(format!(
                "shape {self:?} needs finite coordinates and a non-negative radius"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_contain_what_they_should() {
        let s = Shape::Sphere {
            centre: [5.0, 5.0, 5.0],
            radius: 2.0,
        };
        assert!(s.contains([5, 5, 7]) && !s.contains([5, 7, 7]));
        let c = Shape::Cylinder {
            axis: Axis::Z,
            centre: [3.0, 3.0, 0.0],
            radius: 1.5,
        };
        assert!(c.contains([4, 4, 99]) && !c.contains([5, 3, 0]));
        let b = Shape::Box {
            min: [1.0, 2.0, 3.0],
            max: [1.0, 4.0, 3.5],
        };
        assert!(b.contains([1, 4, 3]) && !b.contains([1, 4, 4]) && !b.contains([0, 3, 3]));
        assert!(Shape::Sphere {
            centre: [0.0; 3],
            radius: -1.0
        }
        .validate()
        .is_err());
    }

    #[test]
    fn faces() {
        let dims = [4, 5, 6];
        assert!(Face::XMax.contains(dims, [3, 0, 0]));
        assert!(!Face::XMax.contains(dims, [2, 0, 0]));
        assert!(Face::ZMin.contains(dims, [2, 4, 0]));
        assert_eq!(Face::YMax.axis(), Axis::Y);
        assert_eq!("z".parse::<Axis>().unwrap(), Axis::Z);
    }
}
